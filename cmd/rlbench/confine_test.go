package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/results"
)

// The user strategies of these tests: a fixed window that also marks a
// key's first request (SETNX, a command with no probe of its own in
// package acl), as a script and as a library.
const (
	markingScript = `-- rlbench: atomic heals fixed-window
local n = redis.call('INCR', KEYS[1])
if redis.call('TTL', KEYS[1]) < 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end
redis.call('SETNX', KEYS[1] .. ':first', 1)
redis.call('EXPIRE', KEYS[1] .. ':first', ARGV[2])
if n <= tonumber(ARGV[1]) then return {1, n} end
return {0, n}
`
	markingLibrary = `#!lua name=rlbench_test_marking
redis.register_function('marking_fn', function(keys, args)
  local n = redis.call('INCR', keys[1])
  if redis.call('TTL', keys[1]) < 0 then
    redis.call('EXPIRE', keys[1], args[2])
  end
  if n <= tonumber(args[1]) then return {1, n} end
  return {0, n}
end)
`
)

// sharedServer starts a private server standing in for a shared one: it
// holds 100 keys of another tenant, which checkTenant finds intact.
func sharedServer(t *testing.T) (addr string, admin *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	admin = redistest.Client(t, srv)
	for i := range 100 {
		if err := admin.Set(t.Context(), fmt.Sprintf("tenant:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return srv.Addr(), admin
}

// checkTenant checks that the tenant's keys are intact, that no key is
// left under prefix, and that no temporary ACL user of rlbench's remains.
func checkTenant(t *testing.T, admin *redis.Client, prefix string) {
	t.Helper()
	if n := len(keysUnder(t, admin, "tenant:")); n != 100 {
		t.Errorf("the tenant's keys after the run: %d; want 100", n)
	}
	if keys := keysUnder(t, admin, prefix); len(keys) != 0 {
		t.Errorf("keys left under %s: %v; want none", prefix, keys)
	}
	users, err := admin.Do(t.Context(), "ACL", "USERS").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if strings.HasPrefix(u, "rlbench-") {
			t.Errorf("ACL USERS after the run holds %s; want rlbench's temporary users deleted", u)
		}
	}
}

func writeLua(t *testing.T, name, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestACLUserRunsUserStrategies: the user `rlbench acl --script
// --function` prints runs them end to end (exit 0), on both clients; it
// may not create ACL users, so the report says the parse-time check alone
// confined them.
func TestACLUserRunsUserStrategies(t *testing.T) {
	t.Parallel()
	addr, admin := sharedServer(t)
	prefix := redistest.Prefix(t)
	user := []string{"--script", "marking=" + writeLua(t, "marking.lua", markingScript),
		"--function", "marking_fn=" + writeLua(t, "marking_fn.lua", markingLibrary)}
	createACLUser(t, admin, append([]string{"--prefix", prefix, "--user", "scripter", "--password", "pw"}, user...)...)
	defer admin.Do(t.Context(), "FUNCTION", "DELETE", "rlbench_test_marking")
	path := filepath.Join(t.TempDir(), "run.json")
	res := mustRun(t, exitOK, append([]string{"--url", "redis://scripter:pw@" + addr, "--prefix", prefix + "run:", "--client", "all",
		"--clients", "2", "--keys", "10", "--requests", "200", "--duration", "30s", "--json", path, "-q"}, user...)...)
	rep := readReport(t, path)
	if want := 2 * len(clients.Names); len(rep.Runs) != want {
		t.Fatalf("report: %d cells; want %d (the script and the function on every client)", len(rep.Runs), want)
	}
	for _, r := range rep.Runs {
		if r.UserCodeGuard != results.GuardStatic || r.Decisions == 0 {
			t.Errorf("%s/%s: user_code_guard %q, %d decisions; want %q, some decisions", r.Strategy, r.Client, r.UserCodeGuard, r.Decisions, results.GuardStatic)
		}
	}
	if want := "user code confined by: the parse-time check alone"; !strings.Contains(res.stdout, want) {
		t.Errorf("stdout =\n%s\nwant it to say %q", res.stdout, want)
	}
	checkTenant(t, admin, prefix)
}

// TestACLUserLackingAScriptCommandIsRefused: a user made from `rlbench
// acl --script`'s line less one command the script calls is refused by
// the pre-flight, exit 2, naming the command.
func TestACLUserLackingAScriptCommandIsRefused(t *testing.T) {
	t.Parallel()
	addr, admin := sharedServer(t)
	prefix := redistest.Prefix(t)
	script := "marking_partial=" + writeLua(t, "marking.lua", markingScript)
	createACLUser(t, admin, "--script", script, "--prefix", prefix, "--user", "partial", "--password", "pw")
	if err := admin.Do(t.Context(), "ACL", "SETUSER", "partial", "-setnx").Err(); err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, exitUsage, "--url", "redis://partial:pw@"+addr, "--script", script, "--prefix", prefix+"run:", "--requests", "50")
	for _, want := range []string{"--user", "SETNX", "NOPERM"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr = %q; want it to contain %q", res.stderr, want)
		}
	}
	checkTenant(t, admin, prefix)
}

// whileRunning runs the CLI with args under ctx and, until it returns,
// polls CLIENT LIST for a connection of a temporary user of rlbench's
// running EVALSHA; seen is called once, with that user's name, when one
// shows.
func whileRunning(t *testing.T, ctx context.Context, admin *redis.Client, seen func(user string), args ...string) cliResult {
	t.Helper()
	done := make(chan cliResult)
	go func() { done <- runCLI(t, ctx, args...) }()
	for user := ""; ; {
		select {
		case res := <-done:
			if user == "" {
				t.Errorf("CLIENT LIST during the run showed no connection of a user rlbench-run-* running EVALSHA")
			}
			return res
		case <-time.After(50 * time.Millisecond):
		}
		list, _ := admin.ClientList(t.Context()).Result()
		for _, line := range strings.Split(list, "\n") {
			if _, name, ok := strings.Cut(line, " user="); ok && user == "" && strings.HasPrefix(name, "rlbench-run-") && strings.Contains(line, "cmd=evalsha") {
				user, _, _ = strings.Cut(name, " ")
				seen(user)
			}
		}
	}
}

// TestUserStrategyRunsAsTemporaryUser: run by a user that may create ACL
// users, a user strategy's whole load runs as a temporary one (seen in
// CLIENT LIST during the measured load) that holds exactly the cell's
// client commands on the cell's keys, deleted afterwards, and the report
// says both guards applied.
func TestUserStrategyRunsAsTemporaryUser(t *testing.T) {
	t.Parallel()
	addr, admin := sharedServer(t)
	prefix := redistest.Prefix(t)
	path := filepath.Join(t.TempDir(), "run.json")
	var commands, keys string
	res := whileRunning(t, t.Context(), admin, func(user string) {
		info, err := admin.Do(t.Context(), "ACL", "GETUSER", user).Result()
		if err != nil {
			t.Errorf("ACL GETUSER %s: %v", user, err)
		}
		commands, _ = field(info, "commands").(string)
		keys, _ = field(info, "keys").(string)
	}, "--addr", addr, "--script", "marking_temp="+writeLua(t, "marking.lua", markingScript),
		"--prefix", prefix, "--clients", "2", "--keys", "10", "--duration", "3s", "--json", path, "-q")
	if res.code != exitOK {
		t.Fatalf("run = %d; want %d\nstderr:\n%s", res.code, exitOK, res.stderr)
	}
	got := strings.Fields(commands)
	slices.Sort(got)
	if want := []string{"+client|setname", "+eval", "+evalsha", "+expire", "+incr", "+ping", "+setnx", "+ttl", "-@all"}; !slices.Equal(got, want) {
		t.Errorf("the temporary user's commands = %q; want %q", got, want)
	}
	if want := "~" + prefix + "marking_temp:go-redis:* ~" + prefix + "warmup:marking_temp:go-redis:*"; keys != want {
		t.Errorf("the temporary user's keys = %q; want %q", keys, want)
	}
	rep := readReport(t, path)
	if len(rep.Runs) != 1 || rep.Runs[0].UserCodeGuard != results.GuardStaticACL {
		t.Errorf("report: %d cells, user_code_guard %v; want 1, %q", len(rep.Runs), rep.Runs, results.GuardStaticACL)
	}
	checkTenant(t, admin, prefix)
}

// TestTemporaryUserDeletedOnInterrupt: an interrupt during the load still
// deletes the temporary user, and the keys.
func TestTemporaryUserDeletedOnInterrupt(t *testing.T) {
	t.Parallel()
	addr, admin := sharedServer(t)
	prefix := redistest.Prefix(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	res := whileRunning(t, ctx, admin, func(string) { cancel() },
		"--addr", addr, "--script", "marking_interrupted="+writeLua(t, "marking.lua", markingScript),
		"--prefix", prefix, "--clients", "2", "--keys", "10", "--duration", "60s", "-q")
	if res.code != exitFailure {
		t.Errorf("interrupted run = %d; want %d\nstderr:\n%s", res.code, exitFailure, res.stderr)
	}
	checkTenant(t, admin, prefix)
}

// field returns the value of key in a reply that is a map (RESP3) or a
// flat array of pairs (RESP2).
func field(reply any, key string) any {
	switch r := reply.(type) {
	case map[any]any:
		return r[key]
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			if r[i] == key {
				return r[i+1]
			}
		}
	}
	return nil
}

// TestScriptTimeout: a script, or a library's function, that never
// returns gets SCRIPT KILL (FUNCTION KILL) from rlbench once it has run
// longer than --script-timeout; rlbench says so, exits 1, and the server
// takes commands again, without the temporary user.
func TestScriptTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, flag, src, kill string
	}{
		{"spin_script", "--script", "local v = redis.call('GET', KEYS[1])\nwhile true do end\nreturn {1, 1}\n", "SCRIPT KILL"},
		{"spin", "--function", "#!lua name=rlbench_test_spin\nredis.register_function('spin', function(keys, args)\n  local v = redis.call('GET', keys[1])\n  while true do end\nend)\n", "FUNCTION KILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr, admin := sharedServer(t)
			// The server reads commands (and SCRIPT KILL) a second into a script.
			if err := admin.ConfigSet(t.Context(), "busy-reply-threshold", "1000").Err(); err != nil {
				t.Fatal(err)
			}
			prefix := redistest.Prefix(t)
			name := tc.name
			res := mustRun(t, exitFailure, "--addr", addr, tc.flag, name+"="+writeLua(t, name+".lua", tc.src),
				"--script-timeout", "2s", "--prefix", prefix, "--clients", "1", "--requests", "10")
			for _, want := range []string{"ran longer than --script-timeout (2s)", tc.kill, "which stopped it"} {
				if !strings.Contains(res.stderr, want) {
					t.Errorf("stderr = %q; want it to say %q", res.stderr, want)
				}
			}
			if err := admin.Ping(t.Context()).Err(); err != nil {
				t.Errorf("PING after the run = %v; want PONG", err)
			}
			checkTenant(t, admin, prefix)
			admin.Do(t.Context(), "FUNCTION", "DELETE", "rlbench_test_spin")
		})
	}
}

// TestVerifyScriptTimeout is issue 34, item 4: rlbench verify of a script
// (or a library's function) that never returns gets the load run's
// watchdog: SCRIPT KILL (FUNCTION KILL) once it has run longer than
// --script-timeout, a message saying so, exit 1; and once verify has
// exited the server answers PING at once, not BUSY.
func TestVerifyScriptTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, flag, src, kill string
	}{
		{"vloop", "--script", "local v = redis.call('GET', KEYS[1])\nwhile true do end\nreturn {1, 1}\n", "SCRIPT KILL"},
		{"vspin", "--function", "#!lua name=rlbench_test_vspin\nredis.register_function('vspin', function(keys, args)\n  local v = redis.call('GET', keys[1])\n  while true do end\nend)\n", "FUNCTION KILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr, admin := sharedServer(t)
			// The server reads commands (and SCRIPT KILL) a second into a script.
			if err := admin.ConfigSet(t.Context(), "busy-reply-threshold", "1000").Err(); err != nil {
				t.Fatal(err)
			}
			defer admin.Do(context.Background(), "FUNCTION", "DELETE", "rlbench_test_vspin")
			prefix := redistest.Prefix(t)
			code, _, stderr := verifyCLI(t, "--addr", addr, tc.flag, tc.name+"="+writeLua(t, tc.name+".lua", tc.src),
				"--script-timeout", "2s", "--prefix", prefix, "--client", "go-redis")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := admin.Ping(ctx).Err(); err != nil {
				t.Errorf("PING right after verify = %v; want PONG (no script of verify's left running)", err)
			}
			if code != exitFailure {
				t.Errorf("verify = %d; want %d\nstderr:\n%s", code, exitFailure, stderr)
			}
			for _, want := range []string{tc.name + " (", "ran longer than --script-timeout (2s)", tc.kill, "which stopped it"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr = %q; want it to say %q", stderr, want)
				}
			}
			checkTenant(t, admin, prefix)
		})
	}
}

// TestTemporaryUserLostMidRun is issue 34, item 19: the temporary ACL user
// deleted mid-run gave ~30,000 WRONGPASS errors and as many connections in
// 5 s, no back-off, exit status 0, and a summary still "confined by ... a
// temporary ACL user". The guard now checks the user every
// userCheckEvery: a user deleted or disabled stops the cell's load, the
// run fails saying so, and the report no longer claims the user confined
// the cell.
func TestTemporaryUserLostMidRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, what string
		lose       func(user string) []any
	}{
		{"deleted", "deleted", func(user string) []any { return []any{"ACL", "DELUSER", user} }},
		{"disabled", "disabled", func(user string) []any { return []any{"ACL", "SETUSER", user, "off"} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr, admin := sharedServer(t)
			prefix := redistest.Prefix(t)
			path := filepath.Join(t.TempDir(), "run.json")
			connections := func() int64 {
				stats, err := admin.Info(t.Context(), "stats").Result()
				if err != nil {
					t.Fatal(err)
				}
				for _, line := range strings.Split(stats, "\r\n") {
					if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
						var n int64
						fmt.Sscan(v, &n)
						return n
					}
				}
				t.Fatal("INFO stats has no total_connections_received")
				return 0
			}
			var before int64
			res := whileRunning(t, t.Context(), admin, func(user string) {
				before = connections()
				if err := admin.Do(t.Context(), tc.lose(user)...).Err(); err != nil {
					t.Error(err)
				}
			}, "--addr", addr, "--script", "marking_lost_"+tc.name+"="+writeLua(t, "marking.lua", markingScript),
				"--prefix", prefix, "--clients", "4", "--keys", "10", "--duration", "8s", "--json", path)
			if res.code != exitFailure {
				t.Errorf("run with its temporary user %s = %d; want %d\nstderr:\n%s", tc.what, res.code, exitFailure, res.stderr)
			}
			if want := "the temporary ACL user was lost during the cell: " + tc.what; !strings.Contains(res.stderr, want) {
				t.Errorf("stderr =\n%s\nwant %q", res.stderr, want)
			}
			if strings.Contains(res.stdout, "and a temporary ACL user") {
				t.Errorf("stdout =\n%s\nwant no claim that the lost user confined the cell", res.stdout)
			}
			// Without the check, the clients dialled thousands of times a
			// second to the end of the load.
			if n := connections() - before; n > 2000 {
				t.Errorf("%d connections after the user was %s; want the load stopped, not a loop of WRONGPASS", n, tc.what)
			}
			if rep := readReport(t, path); len(rep.Runs) != 1 || rep.Runs[0].UserCodeGuard != results.GuardStatic {
				t.Errorf("report: %d cells, user_code_guard %v; want 1, %q", len(rep.Runs), rep.Runs, results.GuardStatic)
			}
			checkTenant(t, admin, prefix)
		})
	}
}

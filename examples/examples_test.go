// Package examples_test runs the user strategies of this folder, and
// others written by the tests, the way --script and --function do: on both
// clients, through rlbench verify, and through a run that must refuse the
// bad ones.
package examples_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/verify"
)

// writeFile writes src to a file named name in a temporary folder and
// returns its path.
func writeFile(t *testing.T, name, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExamples runs the two example files on both clients: exactly limit
// allowed, then rejected, with the counter's TTL the window.
func TestExamples(t *testing.T) {
	t.Parallel()
	reg := strategies.NewRegistry()
	if err := reg.RegisterScript("example-script=fixed_window.lua"); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterFunction("example_fixed_window=fixed_window_function.lua"); err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	for _, name := range []string{"example-script", "example_fixed_window"} {
		for _, cname := range clients.Names {
			c, err := clients.New(cname, clients.Options{Addr: srv.Addr()})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s, err := reg.New(name, strategies.Config{Limit: 3, Window: 10})
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := s.(strategies.Preparer); ok {
				if err := p.Prepare(ctx, c); err != nil {
					t.Fatalf("%s/%s: Prepare error: %v", name, cname, err)
				}
			}
			key := redistest.Prefix(t) + name + ":" + cname + ":{k}"
			for i := int64(1); i <= 5; i++ {
				d, err := s.Decide(ctx, c, key)
				if want := (strategies.Decision{Allowed: i <= 3, Count: i}); err != nil || d != want {
					t.Errorf("%s/%s: Decide #%d = %+v, %v; want %+v", name, cname, i, d, err, want)
				}
			}
			if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 9*time.Second || ttl > 10*time.Second {
				t.Errorf("%s/%s: PTTL = %v; want the 10s window", name, cname, ttl)
			}
		}
	}
}

// The test's own user strategies: a function whose claims hold, and a
// script that claims to heal and does not (the second seed's n == 1).
const (
	honestFunction = `#!lua name=rlbench_test_honest
-- rlbench: atomic heals fixed-window
redis.register_function('honest_fw', function(keys, args)
  local n = redis.call('INCR', keys[1])
  if redis.call('TTL', keys[1]) < 0 then
    redis.call('EXPIRE', keys[1], tonumber(args[2]))
  end
  return {n <= tonumber(args[1]) and 1 or 0, n}
end)
`
	boastfulScript = `-- rlbench: atomic heals fixed-window
local n = redis.call('INCR', KEYS[1])
if n == 1 then
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
end
return {n <= tonumber(ARGV[1]) and 1 or 0, n}
`
)

// TestVerifyChecksClaims runs rlbench verify on both user strategies on
// every client: the function's heals claim is confirmed (healing pass), the
// script's refuted (healing leaks, not as documented), so verify's verdict,
// and its exit status, fail.
func TestVerifyChecksClaims(t *testing.T) {
	t.Parallel()
	reg := strategies.NewRegistry()
	if err := reg.RegisterFunction("honest_fw=" + writeFile(t, "honest.lua", honestFunction)); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterScript("boastful=" + writeFile(t, "boastful.lua", boastfulScript)); err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	m, err := verify.Run(context.Background(), verify.Config{Strategies: []string{"honest_fw", "boastful"}, Registry: reg, Target: rlbench.TargetSpec{Addr: srv.Addr()}, Window: 2})
	if err != nil {
		t.Fatalf("verify.Run error: %v", err)
	}
	unexpected := map[string]bool{}
	for _, u := range m.Unexpected() {
		unexpected[u.Row+" "+u.Cell.Check] = true
	}
	for _, r := range m.Rows {
		for _, c := range r.Cells {
			id := r.Strategy + "/" + r.Client + " " + c.Check
			if c.TooLate { // the machine too slow for the window: no verdict on the script
				t.Logf("%s could not judge: %s", id, c.Note)
				continue
			}
			refuted := r.Strategy == "boastful" && c.Check == verify.CheckHealing
			if refuted && c.Outcome != verify.Leaks {
				t.Errorf("%s = %s (%s); want leaks: the script claims heals and does not", id, c.Outcome, c.Note)
			}
			if got := unexpected[r.Label()+" "+c.Check]; got != refuted {
				t.Errorf("%s = %s (%s): not as documented %t; want %t", id, c.Outcome, c.Note, got, refuted)
			}
		}
	}
	if want := 2 * len(clients.Names); len(m.Rows) != want || m.AsDocumented() {
		t.Errorf("verify: %d rows, as documented %t; want %d rows (every client), not as documented", len(m.Rows), m.AsDocumented(), want)
	}
}

// TestBadUserStrategies runs each bad script as a run would, on a server
// that holds another tenant's keys: each is refused with an error naming
// its file, and leaves no key, no temporary ACL user, and the tenant's
// keys as they were.
func TestBadUserStrategies(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	for i := range 100 {
		rdb.Set(context.Background(), fmt.Sprintf("tenant:%d", i), i, 0)
	}
	t.Cleanup(func() { // after every subtest, before the server stops
		users, _ := rdb.Do(context.Background(), "ACL", "USERS").StringSlice()
		if slices.ContainsFunc(users, func(u string) bool { return strings.HasPrefix(u, "rlbench-") }) {
			t.Errorf("ACL USERS = %v after the runs; want their temporary users deleted", users)
		}
	})
	tests := []struct {
		name     string
		function bool
		src      string
		usage    bool  // refused before the run, as bad input
		want     error // nil: any error naming the file
		wantText string
	}{
		{name: "does-not-compile", src: "-- rlbench: atomic\nreturn {1, 1\n", usage: true, want: strategies.ErrBadUserStrategy, wantText: "does not compile as Lua: syntax error at the end"},
		{name: "breaks-a-line", src: "local n = 1\nif n == 1 then\n  n = (n\nend\nreturn {1, n}\n", usage: true, want: strategies.ErrBadUserStrategy, wantText: ".lua:4 does not compile as Lua: syntax error near 'end'"},
		// goto is Lua 5.2: the parser takes it, Redis's Lua 5.1 does not.
		{name: "redis-refuses", src: "goto done\n::done::\nreturn {1, 1}\n", wantText: "Error compiling script"},
		{name: "replies-a-string", src: "return 'yes'\n", want: strategies.ErrBadReply},
		{name: "replies-a-three", src: "return {3, 1}\n", want: strategies.ErrBadReply},
		{name: "replies-too-long", src: "return {1, 1, 1}\n", want: strategies.ErrBadReply},
		// Refused as they are parsed (strategies.ErrUnconfined), naming the line.
		{name: "writes-elsewhere", src: "redis.call('SET', 'not-the-prefix', 1)\nreturn {1, 1}\n", usage: true, want: strategies.ErrUnconfined, wantText: ".lua:1: refused: redis.call('SET', ...): its key must be derived from KEYS"},
		{name: "reads-elsewhere", src: "local n = 1\nredis.call('GET', 'not-the-prefix')\nreturn {1, 1}\n", usage: true, want: strategies.ErrUnconfined, wantText: ".lua:2: refused"},
		{name: "flushall", src: "redis.call('FLUSHALL')\nlocal n = redis.call('INCR', KEYS[1])\nreturn {1, n}\n", usage: true, want: strategies.ErrUnconfined, wantText: ".lua:1: refused: redis.call('FLUSHALL'): FLUSHALL is refused"},
		{name: "keys", src: "local n = redis.call('INCR', KEYS[1])\nredis.call('KEYS', '*')\nreturn {1, n}\n", usage: true, want: strategies.ErrUnconfined, wantText: ".lua:2: refused: redis.call('KEYS'): KEYS is refused"},
		{name: "computed-keys", src: "redis.call('KE' .. 'YS', '*')\nreturn {1, 1}\n", usage: true, want: strategies.ErrUnconfined, wantText: ".lua:1: refused: redis.call names its command at run time"},
		{name: "computed-flushdb", src: "local c = 'FLUSH' .. 'DB'\n\nredis.call(c)\nreturn {1, 1}\n", usage: true, want: strategies.ErrUnconfined, wantText: ".lua:3: refused: redis.call names its command at run time"},
		{name: "selects", src: "redis.call('SELECT', 1)\nreturn {1, redis.call('INCR', KEYS[1])}\n", usage: true, want: strategies.ErrUnconfined, wantText: "SELECT is refused"},
		{name: "aliases-call", src: "local c = redis.call\nc('FLUSHALL')\nreturn {1, 1}\n", usage: true, want: strategies.ErrUnconfined, wantText: ".lua:1: refused: uses redis.call"},
		{name: "bad-claim", src: "-- rlbench: atomic fast\nreturn {1, 1}\n", usage: true, want: strategies.ErrBadUserStrategy},
		{name: "bad_library", function: true, src: "#!lua name=rlbench_test_bad\nredis.register_function('bad_library', function(keys, args) return {1 end)\n", usage: true, want: strategies.ErrBadUserStrategy, wantText: ".lua:2 does not compile"},
		{name: "no_function", function: true, src: "#!lua name=rlbench_test_none\nlocal n = 1\n", wantText: "function load"},
		{name: "fn_elsewhere", function: true, src: "#!lua name=rlbench_test_elsewhere\nredis.register_function('fn_elsewhere', function(keys, args) redis.call('INCR', 'not-the-prefix') return {1, 1} end)\n", usage: true, want: strategies.ErrUnconfined, wantText: ".lua:2: refused"},
		{name: "fn_flushall", function: true, src: "#!lua name=rlbench_test_flushall\nredis.register_function('fn_flushall', function(keys, args)\n  redis.call('FLUSHALL')\n  return {1, 1}\nend)\n", usage: true, want: strategies.ErrUnconfined, wantText: ".lua:3: refused: redis.call('FLUSHALL')"},
		{name: "no_shebang", function: true, src: "redis.register_function('no_shebang', function(keys, args) return {1} end)\n", usage: true, want: strategies.ErrBadUserStrategy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := writeFile(t, tc.name+".lua", tc.src)
			prefix := redistest.Prefix(t)
			cfg := rlbench.Config{
				Targets:  []rlbench.TargetSpec{{Addr: srv.Addr()}},
				Limit:    10,
				Window:   5,
				Workload: workloadOf(prefix),
			}
			spec := tc.name + "=" + file
			if tc.function {
				cfg.Functions = []string{spec}
			} else {
				cfg.Scripts = []string{spec}
			}
			for _, cname := range clients.Names {
				cfg.Clients = []string{cname}
				_, err := rlbench.Run(context.Background(), cfg, rlbench.Options{})
				_, usage := errors.AsType[*rlbench.UsageError](err)
				switch {
				case err == nil:
					t.Fatalf("%s on %s: Run error = nil; want an error", tc.name, cname)
				case !strings.Contains(err.Error(), file):
					t.Errorf("%s on %s: Run error = %v; want it to name %s", tc.name, cname, err, file)
				case tc.want != nil && !errors.Is(err, tc.want):
					t.Errorf("%s on %s: Run error = %v; want %v", tc.name, cname, err, tc.want)
				case !strings.Contains(err.Error(), tc.wantText):
					t.Errorf("%s on %s: Run error = %v; want it to say %q", tc.name, cname, err, tc.wantText)
				case usage != tc.usage:
					t.Errorf("%s on %s: Run error = %v: usage error %t; want %t", tc.name, cname, err, usage, tc.usage)
				}
				keys, _ := rdb.Keys(context.Background(), "*").Result()
				if n := len(slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return !strings.HasPrefix(k, "tenant:") })); n != 100 {
					t.Errorf("%s on %s: %d of the tenant's 100 keys left", tc.name, cname, n)
				}
				for _, k := range keys {
					if strings.HasPrefix(k, prefix) || k == "not-the-prefix" {
						t.Errorf("%s on %s: key %q left behind", tc.name, cname, k)
					}
				}
			}
		})
	}
}

// bareCountScript returns the count alone, as python-limits' and Kong's
// scripts do.
const bareCountScript = `local n = redis.call('INCR', KEYS[1])
if redis.call('TTL', KEYS[1]) < 0 then
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
end
return n
`

// TestBareCountReply runs a script and a function that reply with a bare
// integer, the count, on every client: the count is the decision's, and
// the request is allowed when it is at most the limit.
func TestBareCountReply(t *testing.T) {
	t.Parallel()
	reg := strategies.NewRegistry()
	if err := reg.RegisterScript("bare-count=" + writeFile(t, "bare.lua", bareCountScript)); err != nil {
		t.Fatal(err)
	}
	fn := "#!lua name=rlbench_test_bare\nredis.register_function('bare_count', function(KEYS, ARGV)\n" + bareCountScript + "end)\n"
	if err := reg.RegisterFunction("bare_count=" + writeFile(t, "bare_fn.lua", fn)); err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, name := range []string{"bare-count", "bare_count"} {
		for _, cname := range clients.Names {
			c, err := clients.New(cname, clients.Options{Addr: srv.Addr()})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s, err := reg.New(name, strategies.Config{Limit: 3, Window: 10})
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := s.(strategies.Preparer); ok {
				if err := p.Prepare(ctx, c); err != nil {
					t.Fatalf("%s/%s: Prepare error: %v", name, cname, err)
				}
			}
			key := redistest.Prefix(t) + name + ":" + cname + ":{k}"
			for i := int64(1); i <= 5; i++ {
				d, err := s.Decide(ctx, c, key)
				if want := (strategies.Decision{Allowed: i <= 3, Count: i}); err != nil || d != want {
					t.Errorf("%s/%s: Decide #%d = %+v, %v; want %+v", name, cname, i, d, err, want)
				}
			}
		}
	}
}

// TestBadReplyOnPrivateServer runs a script that breaks the reply contract
// on a private server: the run fails at its first decision, naming the
// file, and does not suggest rlbench cleanup for a server that rlbench
// stopped with its keys.
func TestBadReplyOnPrivateServer(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "string.lua", "return 'yes'\n")
	cfg := rlbench.Config{
		Limit:    10,
		Window:   5,
		Scripts:  []string{"replies-a-word=" + file},
		Clients:  []string{"go-redis"},
		Workload: workloadOf(redistest.Prefix(t)),
	}
	cfg.Workload.Duration = time.Second
	_, err := rlbench.Run(context.Background(), cfg, rlbench.Options{})
	switch {
	case err == nil:
		t.Fatal("Run error = nil; want the reply refused")
	case !errors.Is(err, strategies.ErrBadReply) || !strings.Contains(err.Error(), file):
		t.Errorf("Run error = %v; want %v naming %s", err, strategies.ErrBadReply, file)
	case strings.Contains(err.Error(), "rlbench cleanup"):
		t.Errorf("Run error = %v; want no clean-up suggested for a private server rlbench stopped", err)
	}
}

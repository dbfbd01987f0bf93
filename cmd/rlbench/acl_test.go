package main

import (
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/serverinfo"
	"github.com/rlbench/rlbench/strategies"
)

// createACLUser sends the ACL SETUSER line that `rlbench acl args...`
// printed, as admin. The line's words hold no quotes here (the prefixes
// come from redistest.Prefix).
func createACLUser(t *testing.T, admin *redis.Client, args ...string) string {
	t.Helper()
	res := mustRun(t, exitOK, append([]string{"acl"}, args...)...)
	line := strings.TrimSpace(res.stdout)
	var words []any
	for _, w := range strings.Fields(line) {
		words = append(words, w)
	}
	if err := admin.Do(t.Context(), words...).Err(); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return line
}

// keysUnder returns the keys under prefix, as admin sees them.
func keysUnder(t *testing.T, admin *redis.Client, prefix string) []string {
	t.Helper()
	return redistest.KeysUnder(t, admin, prefix)
}

// TestACLUserRunsEveryStrategy proves `rlbench acl` complete for the load
// run: for each built-in strategy, a user made from exactly its line runs a
// short load on every client, logged in through a URL or through --user
// and --password in turn, and the run cleans up after itself.
func TestACLUserRunsEveryStrategy(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := redistest.Client(t, srv)
	for i, info := range strategies.All() {
		if info.Source != "" {
			continue // a user script that another test registered
		}
		if !serverinfo.VersionAtLeast(srv.Info().RedisVersion, info.MinRedis) {
			continue // the hash-field strategies need Redis 7.4 (TestEveryBuild runs them on one)
		}
		t.Run(info.Name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			user, password := "bench-"+info.Name, "pw-"+info.Name
			createACLUser(t, admin, "--strategy", info.Name, "--prefix", prefix, "--user", user, "--password", password)
			login := []string{"--url", "redis://" + user + ":" + password + "@" + srv.Addr()}
			if i%2 == 1 {
				login = []string{"--addr", srv.Addr(), "--user", user, "--password", password}
			}
			res := mustRun(t, exitOK, append(login, "--strategy", info.Name, "--client", "all", "--prefix", prefix+"run:",
				"--clients", "4", "--keys", "10", "--requests", "200", "--duration", "30s", "-q")...)
			if !strings.Contains(res.stdout, info.Name) {
				t.Errorf("stdout lacks the %s cells:\n%s", info.Name, res.stdout)
			}
			if keys := keysUnder(t, admin, prefix); len(keys) != 0 {
				t.Errorf("keys left under %s after the run = %v; want none", prefix, keys)
			}
		})
	}
}

// TestACLUserRunsFaults: the commands each fault adds are enough for it.
func TestACLUserRunsFaults(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	faultArgs := []string{"--fault", "kill-clients@100ms", "--fault", "script-flush@200ms", "--fault", "stall@300ms:50ms"}
	createACLUser(t, admin, append([]string{"--strategy", "lua", "--prefix", prefix, "--user", "faulty", "--password", "pw"}, faultArgs...)...)
	res := mustRun(t, exitOK, append([]string{"--url", "redis://faulty:pw@" + srv.Addr(), "--strategy", "lua", "--prefix", prefix + "run:",
		"--allow-server-wide-faults", "--clients", "4", "--keys", "10", "--duration", "600ms", "-q"}, faultArgs...)...)
	for _, kind := range []string{"kill-clients", "script-flush", "stall"} {
		if !strings.Contains(res.stdout, kind) {
			t.Errorf("stdout lacks the %s fault:\n%s", kind, res.stdout)
		}
	}
}

// TestACLUserLackingACommandIsRefused: a user made from `rlbench acl`'s
// line less one command is refused before the load, exit 2, with the
// command and the flag named.
func TestACLUserLackingACommandIsRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	createACLUser(t, admin, "--strategy", "multi-nx", "--prefix", prefix, "--user", "partial", "--password", "pw")
	if err := admin.Do(t.Context(), "ACL", "SETUSER", "partial", "-pttl").Err(); err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, exitUsage, "--url", "redis://partial:pw@"+srv.Addr(), "--strategy", "multi-nx", "--prefix", prefix+"run:", "--requests", "50")
	for _, want := range []string{"--user", "PTTL", "NOPERM", "rlbench acl"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr = %q; want it to contain %q", res.stderr, want)
		}
	}
	if strings.Contains(res.stderr, ":pw@") {
		t.Errorf("stderr = %q; want no password in it", res.stderr)
	}
	if n := admin.DBSize(t.Context()).Val(); n != 0 {
		t.Errorf("DBSIZE after the refused run = %d; want 0", n)
	}
}

// TestACLCommand checks the printed line, -v's reasons, the password
// taken from $REDISCLI_AUTH as its SHA-256, and bad input.
func TestACLCommand(t *testing.T) {
	t.Setenv("REDISCLI_AUTH", "pw")
	res := mustRun(t, exitOK, "acl", "--strategy", "lua,multi-nx", "--fault", "kill-clients@1s", "--db", "2", "-v")
	lines := strings.Split(res.stdout, "\n")
	wantLine := "ACL SETUSER rlbench reset on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~rlbench:* " +
		"+evalsha +eval +incr +expire +ttl +multi +exec +client|list +client|kill +select +ping +info +config|get +client|setname +scan +pttl +unlink +set +get +watch +pexpire +del +command|info"
	if lines[0] != wantLine {
		t.Errorf("acl line = %s; want %s", lines[0], wantLine)
	}
	for _, want := range []string{"+client|kill", "fault kill-clients", "+select", "SELECT", "+evalsha", "strategy lua"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("acl -v stdout lacks %q:\n%s", want, res.stdout)
		}
	}
	if strings.Contains(res.stdout+res.stderr, ">pw") {
		t.Errorf("acl printed the password in clear:\n%s%s", res.stdout, res.stderr)
	}

	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"unknown strategy", []string{"--strategy", "nope"}, `--strategy: unknown strategy "nope"`},
		{"unknown fault", []string{"--fault", "nope@1s"}, `--fault: unknown fault kind "nope"`},
		{"sequence outside the prefix", []string{"--sequence", "x=INCR other"}, `--sequence: bad sequence: INCR: key "other" must start with {key}`},
		{"empty prefix", []string{"--prefix", ""}, "--prefix: empty value"},
		{"negative db", []string{"--db", "-1"}, "--db: must be >= 0"},
		{"unexpected argument", []string{"lua"}, `unexpected argument "lua"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := mustRun(t, exitUsage, append([]string{"acl"}, tc.args...)...)
			if !strings.Contains(res.stderr, tc.want) || res.stdout != "" {
				t.Errorf("acl %q: stdout %q, stderr %q; want nothing on stdout and %q on stderr", tc.args, res.stdout, res.stderr, tc.want)
			}
		})
	}
}

// TestACLUserRunsOnACluster: with --cluster-target, the line is enough on
// an existing Redis Cluster (ACL users are per node: it is created on
// each), on both clients, through the slot map. Without the flag, the run
// is refused: the clients could not read the slot map.
func TestACLUserRunsOnACluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3, 0)
	prefix := redistest.Prefix(t)
	run := []string{"--cluster", strings.Join(c.Addrs(), ","), "--strategy", "lua,multi-nx", "--client", "go-redis,rueidis", "--prefix", prefix + "run:",
		"--clients", "4", "--keys", "10", "--requests", "200", "--duration", "30s", "-q"}
	for _, tc := range []struct {
		user string
		flag []string
		want int
	}{
		{"nocluster", nil, exitUsage},
		{"clusterbench", []string{"--cluster-target"}, exitOK},
	} {
		res := mustRun(t, exitOK, append([]string{"acl", "--strategy", "lua,multi-nx", "--prefix", prefix, "--user", tc.user, "--password", "pw"}, tc.flag...)...)
		var words []any
		for _, w := range strings.Fields(res.stdout) {
			words = append(words, w)
		}
		for _, addr := range c.Addrs() {
			node := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
			err := node.Do(t.Context(), words...).Err()
			node.Close()
			if err != nil {
				t.Fatalf("%s on %s: %v", res.stdout, addr, err)
			}
		}
		res = mustRun(t, tc.want, append(run, "--user", tc.user, "--password", "pw")...)
		if tc.want == exitUsage && !strings.Contains(res.stderr, "cluster|slots") {
			t.Errorf("run as a user without --cluster-target: stderr = %q; want CLUSTER SLOTS named", res.stderr)
		}
	}
}

// TestACLUserRunsThroughSentinel: with --sentinel-target, the line is
// enough for a master that Sentinel manages, on both clients (the user is
// created on the master; the sentinels take the default user).
func TestACLUserRunsThroughSentinel(t *testing.T) {
	t.Parallel()
	s, err := redisserver.StartSentinel(t.Context(), redisserver.SentinelOptions{Binary: os.Getenv(redistest.BinaryEnv)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	prefix := redistest.Prefix(t)
	master, err := s.MasterAddr(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: master, DisableIdentity: true})
	t.Cleanup(func() { admin.Close() })
	createACLUser(t, admin, "--strategy", "lua,multi-nx", "--sentinel-target", "--prefix", prefix, "--user", "sentinelbench", "--password", "pw")
	mustRun(t, exitOK, "--sentinel", s.MasterName()+"@"+strings.Join(s.SentinelAddrs(), ","), "--user", "sentinelbench", "--password", "pw",
		"--strategy", "lua,multi-nx", "--client", "go-redis,rueidis", "--prefix", prefix+"run:", "--clients", "4", "--keys", "10", "--requests", "200", "--duration", "30s", "-q")
}

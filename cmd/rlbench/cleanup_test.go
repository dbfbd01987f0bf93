package main

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/internal/proctest"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
)

// seedRunKeys writes n keys under prefix as a run's lua/go-redis cell
// names them, and returns their names' common start.
func seedRunKeys(t *testing.T, rdb *redis.Client, prefix string, n int) {
	t.Helper()
	pipe := rdb.Pipeline()
	for i := range n {
		pipe.Set(t.Context(), prefix+"lua:go-redis:{"+strconv.Itoa(i)+"}", 1, 0)
	}
	if _, err := pipe.Exec(t.Context()); err != nil {
		t.Fatalf("seed %d keys: %v", n, err)
	}
}

// TestCleanupDryRun checks that --dry-run counts and names the keys under
// the prefix, says which do not look like rlbench's, and deletes nothing.
func TestCleanupDryRun(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	seedRunKeys(t, rdb, prefix, 25)
	for _, k := range []string{prefix + "session:abc", prefix + "x"} {
		if err := rdb.Set(t.Context(), k, 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	res := mustRun(t, exitOK, "cleanup", "--dry-run", "--prefix", prefix, "--addr", srv.Addr())
	for _, want := range []string{
		"dry run: 27 keys under " + strconv.Quote(prefix) + ", none deleted",
		"... and 17 more",
		"2 of them do not look like rlbench's",
		strconv.Quote(prefix + "session:abc"),
		"would delete them only with --yes",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("rlbench cleanup --dry-run stdout = %q; want it to contain %q", res.stdout, want)
		}
	}
	if n := rdb.DBSize(t.Context()).Val(); n != 27 {
		t.Errorf("DBSIZE after a dry run = %d; want 27 (nothing deleted)", n)
	}
	mustRun(t, exitUsage, "cleanup", "--dry-run", "--yes", "--prefix", prefix, "--addr", srv.Addr())
}

// TestCleanupNeedsYes checks that without --yes cleanup deletes nothing
// (exit 2, naming what it found) under a prefix that holds more than 1,000
// keys or keys that do not look like rlbench's, and that --yes deletes
// them.
func TestCleanupNeedsYes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// seed writes the keys under prefix; it returns how many.
		seed func(t *testing.T, rdb *redis.Client, prefix string) int
		want []string // in the refusal
	}{
		{"over 1000 run keys", func(t *testing.T, rdb *redis.Client, prefix string) int {
			seedRunKeys(t, rdb, prefix, 1001)
			return 1001
		}, []string{"found 1001 keys under", "more than 1000", "--yes"}},
		{"foreign keys", func(t *testing.T, rdb *redis.Client, prefix string) int {
			seedRunKeys(t, rdb, prefix, 3)
			for _, k := range []string{"rate:user:42", "session:abc"} {
				if err := rdb.Set(t.Context(), prefix+k, 1, 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			return 5
		}, []string{"found 5 keys under", "2 of which do not look like rlbench's", "rate:user:42", "--yes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			rdb := redistest.Client(t, srv)
			prefix := redistest.Prefix(t)
			n := tc.seed(t, rdb, prefix)
			res := mustRun(t, exitUsage, "cleanup", "--prefix", prefix, "--addr", srv.Addr())
			for _, want := range tc.want {
				if !strings.Contains(res.stderr, want) {
					t.Errorf("rlbench cleanup stderr = %q; want it to contain %q", res.stderr, want)
				}
			}
			if got := rdb.DBSize(t.Context()).Val(); got != int64(n) {
				t.Fatalf("DBSIZE after a refused cleanup = %d; want %d (nothing deleted)", got, n)
			}
			res = mustRun(t, exitOK, "cleanup", "--yes", "--prefix", prefix, "--addr", srv.Addr())
			if want := "deleted " + strconv.Itoa(n) + " keys"; !strings.Contains(res.stdout, want) {
				t.Errorf("rlbench cleanup --yes stdout = %q; want %q", res.stdout, want)
			}
		})
	}
}

// interruptKeys is how many keys TestCleanupInterrupted cleans: enough
// that the clean-up is still deleting when the test stops the server.
const interruptKeys = 50000

// TestCleanupInterrupted interrupts a cleanup in the middle of its
// deletes (the server stopped with SIGSTOP once keys started to go, then
// ctx cancelled, then SIGCONT) and checks that it says how many keys it
// deleted and how many are left, and that both are exact.
func TestCleanupInterrupted(t *testing.T) {
	t.Parallel()
	// The interrupt must land while the clean-up deletes: a machine fast
	// enough to delete every key first gets another try, on a new server.
	for try := 1; try <= 5; try++ {
		if cleanupInterrupted(t) {
			return
		}
		t.Logf("try %d: the clean-up ended before it could be interrupted", try)
	}
	t.Fatal("the clean-up ended before it could be interrupted, 5 times")
}

// cleanupInterrupted is one try of TestCleanupInterrupted; false when the
// clean-up ended before the interrupt.
func cleanupInterrupted(t *testing.T) bool {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	seedRunKeys(t, rdb, prefix, interruptKeys)
	pid := serverPid(t, rdb)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan cliResult, 1)
	go func() { done <- runCLI(t, ctx, "cleanup", "--yes", "--prefix", prefix, "--addr", srv.Addr()) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if n, err := rdb.DBSize(t.Context()).Result(); err == nil && n < interruptKeys {
			break
		}
		select {
		case res := <-done:
			if res.code != exitOK {
				t.Fatalf("cleanup = exit %d, stderr %q; want it deleting", res.code, res.stderr)
			}
			return false
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the clean-up deleted nothing in 30 s")
		}
		time.Sleep(time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP: %v", err)
	}
	cancel()
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT: %v", err)
	}
	res := <-done
	if res.code == exitOK {
		return false
	}
	m := regexp.MustCompile(`cleanup interrupted \(context canceled\): deleted (\d+) keys under "[^"]+", (\d+) keys left under it`).FindStringSubmatch(res.stderr)
	if res.code != exitFailure || m == nil {
		t.Fatalf("interrupted cleanup = exit %d, stderr %q; want exit %d, the keys deleted and left", res.code, res.stderr, exitFailure)
	}
	deleted, _ := strconv.Atoi(m[1])
	left, _ := strconv.Atoi(m[2])
	n := rdb.DBSize(t.Context()).Val()
	if deleted+left != interruptKeys || int64(left) != n || deleted == 0 {
		t.Errorf("interrupted cleanup: deleted %d, left %d, DBSIZE %d; want deleted > 0, deleted + left = %d, left = DBSIZE", deleted, left, n, interruptKeys)
	}
	return true
}

// serverPid is the process id of rdb's server, from INFO server.
func serverPid(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	return proctest.ServerPID(t, rdb)
}

// TestCleanupRefusesALiveRun checks that cleanup, even with --yes, deletes
// nothing under a prefix that a live run claims (its claim key holds a TTL
// it renews): those keys are that run's counters, mid-measurement.
func TestCleanupRefusesALiveRun(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	seedRunKeys(t, rdb, prefix, 3)
	holder := "run 20261201T000000-deadbeef (pid 1 on h, since 2026-12-01T00:00:00Z)"
	if err := rdb.Set(t.Context(), keyspace.ClaimKey(prefix), holder, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, exitUsage, "cleanup", "--prefix", prefix, "--addr", srv.Addr(), "--yes")
	for _, want := range []string{"claimed by a live run", "20261201T000000-deadbeef"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("cleanup --yes of a claimed prefix: stderr = %q; want it to say %q", res.stderr, want)
		}
	}
	if n := rdb.DBSize(t.Context()).Val(); n != 4 {
		t.Errorf("DBSIZE after the refused cleanup = %d; want the 3 counters and the claim", n)
	}
}

// TestCleanupRefusesANestedLiveRun is issue 34, item 6: cleanup of
// "nest:" deleted the keys of a live run on "nest:C:", since it checked
// only the claim of the exact prefix. It now refuses, with or without
// --yes, while a live run claims a prefix under the one given or above it
// (a prefix inside a claimed one), and deletes nothing.
func TestCleanupRefusesANestedLiveRun(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	nest := redistest.Prefix(t)
	run := nest + "C:"
	seedRunKeys(t, rdb, run, 100)
	holder := "run 20261203T000000-0000000c (pid 1 on h, since 2026-12-03T00:00:00Z)"
	if err := rdb.Set(t.Context(), keyspace.ClaimKey(run), holder, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, prefix, want string
		flags              []string
	}{
		{"above the run", nest, "claim a prefix under", nil},
		{"above the run, --yes", nest, "claim a prefix under", []string{"--yes"}},
		{"above the run, --dry-run", nest, "claim a prefix under", []string{"--dry-run"}},
		{"inside the run's prefix", run + "lua:", "which a live run claims", []string{"--yes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"cleanup", "--prefix", tc.prefix, "--addr", srv.Addr()}, tc.flags...)
			res := mustRun(t, exitUsage, args...)
			for _, want := range []string{tc.want, "0000000c"} {
				if !strings.Contains(res.stderr, want) {
					t.Errorf("%q: stderr = %q; want it to say %q", args, res.stderr, want)
				}
			}
			if n := rdb.DBSize(t.Context()).Val(); n != 101 {
				t.Errorf("DBSIZE after %q = %d; want the run's 100 keys and its claim", args, n)
			}
		})
	}
}

// TestReplicaRefusedForWrites is issue 34, item 8: audit --fix-ttl and
// cleanup wrote to a (writable) replica: "fixed 1000" while the master
// kept its immortal keys, and cleanup deleted the replica's copies only.
// Both now refuse a replica up front, naming its master, and write
// nothing; a read-only audit of the replica is still allowed.
func TestReplicaRefusedForWrites(t *testing.T) {
	t.Parallel()
	master, replica := redistest.Start(t), redistest.Start(t)
	mdb, rdb := redistest.Client(t, master), redistest.Client(t, replica)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	seedRunKeys(t, mdb, prefix, 20)
	host, port, _ := strings.Cut(master.Addr(), ":")
	if err := rdb.ReplicaOf(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.ReplicaOf(context.Background(), "NO", "ONE") })
	if err := rdb.ConfigSet(ctx, "replica-read-only", "no").Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); rdb.DBSize(ctx).Val() != 20; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the replica holds %d of the master's 20 keys after 60s", rdb.DBSize(ctx).Val())
		}
	}
	for _, args := range [][]string{
		{"audit", "--match", prefix + "*", "--fix-ttl", "60"},
		{"cleanup", "--prefix", prefix, "--yes"},
		{"cleanup", "--prefix", prefix},
	} {
		args = append(args, "--addr", replica.Addr())
		res := mustRun(t, exitUsage, args...)
		if !strings.Contains(res.stderr, "replica of "+master.Addr()) {
			t.Errorf("%q: stderr = %q; want it to name the master, %s", args, res.stderr, master.Addr())
		}
		if n, immortal := rdb.DBSize(ctx).Val(), rdb.TTL(ctx, prefix+"lua:go-redis:{0}").Val(); n != 20 || immortal != -1 {
			t.Errorf("after %q, the replica holds %d keys (TTL of one %s); want the 20, immortal", args, n, immortal)
		}
	}
	res := mustRun(t, exitOK, "audit", "--match", prefix+"*", "--addr", replica.Addr())
	if !strings.Contains(res.stdout, "20 keys") {
		t.Errorf("a read-only audit of the replica: stdout = %q; want its 20 keys audited", res.stdout)
	}
}

// TestCleanupAfterSIGKILL is issue 34, item 14: a run killed with SIGKILL
// left its temporary ACL user (rlbench-run-*) and the --function library
// it loaded, and cleanup said nothing of them. The run records both under
// its prefix before it makes them; the next run's refusal points at
// cleanup, whose --dry-run names them and which deletes them with the
// keys, and nothing of the tenant's: neither a user named like rlbench's
// nor a library of its own.
func TestCleanupAfterSIGKILL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	const tenantUser = "rlbench-run-tenant"
	if err := rdb.Do(ctx, "ACL", "SETUSER", tenantUser, "on", ">pw", "~tenant:*", "+get").Err(); err != nil {
		t.Fatal(err)
	}
	const tenantLib = "#!lua name=tenantlib\nredis.register_function('tenant_f', function(keys, args) return 1 end)\n"
	if err := rdb.FunctionLoad(ctx, tenantLib).Err(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd := exec.Command(rlbenchBinary(t), "--addr", srv.Addr(), "--prefix", prefix, "--clients", "2", "--keys", "10", "--duration", "2m",
		"--function", "example_fixed_window=../../examples/fixed_window_function.lua")
	cmd.Stderr = &stderr
	_ = signalMidLoad(t, rdb, cmd, &stderr, keyspace.Cell(prefix, "example_fixed_window", "go-redis"), syscall.SIGKILL)
	runUsers := func() []string {
		var users []string
		all, err := rdb.Do(ctx, "ACL", "USERS").StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range all {
			if strings.HasPrefix(u, "rlbench-run-") && u != tenantUser {
				users = append(users, u)
			}
		}
		return users
	}
	library := func(name string) bool {
		libs, _ := rdb.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: name}).Result()
		return len(libs) == 1
	}
	users := runUsers()
	if len(users) != 1 || !library("rlbench_example") {
		t.Fatalf("after SIGKILL: run users %q, library rlbench_example loaded %t; want the one user and the library left\nstderr:\n%s", users, library("rlbench_example"), stderr.String())
	}
	// The killed run's claim expires within 30 s: gone at once here.
	rdb.Del(ctx, keyspace.ClaimKey(prefix))

	res := mustRun(t, exitUsage, "--addr", srv.Addr(), "--prefix", prefix, "--requests", "10")
	if want := "rlbench cleanup --prefix '" + prefix + "'"; !strings.Contains(res.stderr, want) {
		t.Errorf("the next run on the prefix: stderr = %q; want it to point at %q", res.stderr, want)
	}
	// Records that name the tenant's user and library (forged, or a
	// name taken since): kept, since the user reaches keys beyond the
	// prefix and the library holds other code.
	for _, r := range []string{"acl-user:" + tenantUser, "library:tenantlib"} {
		if err := rdb.Set(ctx, prefix+"rlbench-object:"+r, "0000", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	res = mustRun(t, exitOK, "cleanup", "--prefix", prefix, "--addr", srv.Addr(), "--dry-run")
	for _, want := range []string{`acl-user "` + users[0] + `"`, `library "rlbench_example"`, "would be deleted",
		`acl-user "` + tenantUser + `"`, "reaches beyond the prefix", `library "tenantlib"`, "not the one the run loaded"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("cleanup --dry-run: stdout = %q; want it to name %q", res.stdout, want)
		}
	}
	if len(runUsers()) != 1 || !library("rlbench_example") {
		t.Fatalf("cleanup --dry-run deleted the run's user or library")
	}
	res = mustRun(t, exitOK, "cleanup", "--prefix", prefix, "--addr", srv.Addr())
	if !strings.Contains(res.stdout, users[0]) || !strings.Contains(res.stdout, "deleted") {
		t.Errorf("cleanup: stdout = %q; want it to say it deleted %s", res.stdout, users[0])
	}
	if left := runUsers(); len(left) != 0 || library("rlbench_example") {
		t.Errorf("after cleanup: run users %q, library rlbench_example loaded %t; want both gone", left, library("rlbench_example"))
	}
	if !library("tenantlib") || rdb.Do(ctx, "ACL", "GETUSER", tenantUser).Err() != nil || rdb.Do(ctx, "ACL", "GETUSER", tenantUser).Val() == nil {
		t.Errorf("after cleanup: the tenant's library or user is gone; want both kept")
	}
	if keys := scanKeys(t, rdb, prefix+"*"); len(keys) != 0 {
		t.Errorf("after cleanup, %q remain under the prefix", keys)
	}
}

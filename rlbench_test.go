package rlbench_test

import (
	"context"
	"errors"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/workload"
)

// TestImmortalKeys reproduces the first seed's bug under load: many workers
// on a few keys with a one-second window, every request under the limit, so
// every request of naive does GET then INCR and some key expires between
// the two. naive must end with immortal keys; the atomic strategies under
// the same workload must end with none. The report's audit must agree with
// an independent count of TTL -1 keys, and nothing outside the run's prefix
// may be touched.
func TestImmortalKeys(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	prefix := redistest.Prefix(t)

	// A key outside the prefix, with no TTL, that shares its first bytes.
	outside := strings.TrimSuffix(prefix, ":") + "x"
	if err := rdb.Set(ctx, outside, 42, 0).Err(); err != nil {
		t.Fatal(err)
	}

	rep, err := rlbench.Run(ctx, rlbench.Config{
		Strategies: []string{"naive", "multi-nx", "lua"},
		Clients:    []string{"go-redis", "rueidis"},
		Limit:      1_000_000,
		Window:     1,
		Workload:   workload.Config{Workers: 64, Keys: 20, Duration: 2 * time.Second, Prefix: prefix},
		Targets:    []rlbench.TargetSpec{{Addr: srv.Addr()}},
		KeepKeys:   true,
		AuditEvery: 400 * time.Millisecond,
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if len(rep.Runs) != 6 {
		t.Fatalf("Run gave %d runs; want 6 (3 strategies x 2 clients)", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		label := r.Strategy + "/" + r.Client
		if r.Errors != 0 || r.Decisions == 0 {
			t.Errorf("%s: decisions %d, errors %d (%v); want > 0 and 0", label, r.Decisions, r.Errors, r.ErrorKinds)
		}
		if got := r.Allowed + r.Rejected + r.Errors; got != r.Decisions {
			t.Errorf("%s: allowed+rejected+errors = %d; want decisions %d", label, got, r.Decisions)
		}
		if r.Strategy == "naive" && r.Audit.Immortal == 0 {
			t.Errorf("%s: audit found 0 immortal keys; want > 0 (the read-then-write race)", label)
		}
		if r.Strategy != "naive" && r.Audit.Immortal != 0 {
			t.Errorf("%s: audit found %d immortal keys; want 0", label, r.Audit.Immortal)
		}
		// The per-second series: each second has its own latency, and the
		// periodic audit's immortal count never falls (immortal keys never
		// expire) nor passes the final audit's.
		var prev int64
		for i, sec := range r.PerSecond {
			if sec.Decisions > 0 && (sec.P50US <= 0 || sec.P99US < sec.P50US) {
				t.Errorf("%s: second %d p50 %v, p99 %v; want 0 < p50 <= p99", label, i, sec.P50US, sec.P99US)
			}
			if sec.Immortal == nil {
				continue
			}
			if *sec.Immortal < prev || *sec.Immortal > r.Audit.Immortal {
				t.Errorf("%s: second %d immortal %d after %d; want non-decreasing and <= the final %d", label, i, *sec.Immortal, prev, r.Audit.Immortal)
			}
			prev = *sec.Immortal
		}
		if n := len(r.PerSecond); n == 0 || r.PerSecond[n-1].Immortal == nil {
			t.Errorf("%s: per-second series %+v; want the periodic audit's counts", label, r.PerSecond)
		}
		// Immortal keys do not expire, so an independent count made now
		// must match the audit's.
		cell := keyspace.Cell(prefix, r.Strategy, r.Client)
		if got := countImmortal(t, rdb, cell); got != r.Audit.Immortal {
			t.Errorf("%s: independent count of TTL -1 keys = %d; audit said %d", label, got, r.Audit.Immortal)
		}
	}
	if v, err := rdb.Get(ctx, outside).Result(); err != nil || v != "42" {
		t.Errorf("key outside the prefix = %q, %v; want \"42\" untouched", v, err)
	}
	if ttl := rdb.TTL(ctx, outside).Val(); ttl != -1 {
		t.Errorf("TTL of key outside the prefix = %v; want -1 (untouched)", ttl)
	}
}

// countImmortal counts keys under prefix with no TTL by scanning the whole
// database, independently of package audit.
func countImmortal(t *testing.T, rdb *redis.Client, prefix string) int64 {
	t.Helper()
	ctx := context.Background()
	var n int64
	iter := rdb.Scan(ctx, 0, "", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if strings.HasPrefix(k, prefix) && rdb.TTL(ctx, k).Val() == -1 {
			n++
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRunCleansUp checks that a run deletes its own keys, and only those,
// unless KeepKeys is set.
func TestRunCleansUp(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	if err := rdb.Set(ctx, "unrelated", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	prefix := redistest.Prefix(t)
	rep, err := rlbench.Run(ctx, rlbench.Config{
		Strategies: []string{"incr-expire"},
		Workload:   workload.Config{Workers: 4, Keys: 5, Requests: 200, Prefix: prefix},
		Targets:    []rlbench.TargetSpec{{Addr: srv.Addr()}},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if got := rep.Runs[0].Decisions; got != 200 {
		t.Errorf("decisions with Requests 200 = %d; want 200", got)
	}
	if s := rep.Runs[0].Saturation; s == nil || s.ConnectionsOpened < 1 || s.ConnectionsOpened > 4 || s.ClientCPU <= 0 || s.PeakRSSBytes <= 0 {
		t.Errorf("saturation = %+v; want 1 to 4 connections opened (4 workers), client CPU and peak RSS > 0", s)
	}
	if got := rep.Runs[0].Audit.Keys; got != 5 {
		t.Errorf("audit keys = %d; want 5", got)
	}
	if n := rdb.DBSize(ctx).Val(); n != 1 {
		t.Errorf("DBSIZE after the run = %d; want 1 (only the unrelated key)", n)
	}
}

// TestRunRejectsBadInput checks that bad input is a *UsageError naming the
// Config field, returned before anything reaches Redis.
func TestRunRejectsBadInput(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	tests := []struct {
		name  string
		cfg   rlbench.Config
		field string
	}{
		{"unknown strategy", rlbench.Config{Strategies: []string{"nope"}}, "Strategies"},
		{"unknown client", rlbench.Config{Clients: []string{"jedis"}}, "Clients"},
		{"negative limit", rlbench.Config{Limit: -1}, "Limit"},
		{"negative window", rlbench.Config{Window: -1}, "Window"},
		{"negative clients", rlbench.Config{Workload: workload.Config{Workers: -3}}, "Workload.Workers"},
		{"bad key dist", rlbench.Config{Workload: workload.Config{KeyDist: "gauss"}}, "Workload.KeyDist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Targets = []rlbench.TargetSpec{{Addr: srv.Addr()}}
			_, err := rlbench.Run(context.Background(), tc.cfg, rlbench.Options{})
			var uerr *rlbench.UsageError
			if !errors.As(err, &uerr) || uerr.Field != tc.field {
				t.Errorf("Run(%s) error = %v; want a UsageError for %s", tc.name, err, tc.field)
			}
		})
	}
	if n := rdb.DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("DBSIZE after rejected runs = %d; want 0", n)
	}
}

// TestCrashRate reproduces the second seed's bug: clients that die between
// INCR and EXPIRE leave incr-expire with immortal counters, while multi-nx
// under the same flags, where a dying client abandons an atomic unit, leaves
// none.
func TestCrashRate(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Strategies: []string{"incr-expire", "multi-nx"},
		Limit:      1_000_000,
		Window:     1,
		Workload: workload.Config{Workers: 16, Keys: 20, Duration: 2500 * time.Millisecond,
			CrashRate: 0.5, Prefix: redistest.Prefix(t)},
		Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("Run gave %d runs; want 2 (incr-expire and multi-nx on go-redis)", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		if r.ErrorKinds["crashed"] == 0 {
			t.Errorf("%s: error kinds %v; want crashed > 0", r.Strategy, r.ErrorKinds)
		}
		switch {
		case r.Strategy == "incr-expire" && r.Audit.Immortal == 0:
			t.Errorf("incr-expire with --crash-rate 0.5: 0 immortal keys; want > 0")
		case r.Strategy == "multi-nx" && r.Audit.Immortal != 0:
			t.Errorf("multi-nx with --crash-rate 0.5: %d immortal keys; want 0", r.Audit.Immortal)
		}
		// An atomic strategy's worker dies mid-request: go-redis drops the
		// connection and the next request dials a new one.
		if s := r.Saturation; r.Strategy == "multi-nx" && (s == nil || s.ConnectionsOpened <= int64(r.Workers)) {
			t.Errorf("multi-nx with --crash-rate 0.5: saturation %+v; want more connections opened than the %d workers", s, r.Workers)
		}
	}
}

// TestFaultsAreCountedNotFatal restarts the private server and flushes the
// script cache in the middle of a run: the run completes, the errors are
// counted, the faults are reported, and decisions resume afterwards.
func TestFaultsAreCountedNotFatal(t *testing.T) {
	t.Parallel()
	var fs []faults.Fault
	for _, f := range []string{"script-flush@500ms", "restart@1s", "kill-clients@1800ms"} {
		fault, err := faults.Parse(f)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, fault)
	}
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Strategies: []string{"lua"},
		Clients:    []string{"go-redis", "rueidis"},
		Window:     1,
		Workload:   workload.Config{Workers: 8, Keys: 10, Duration: 2500 * time.Millisecond},
		Faults:     fs,
		OnError:    "closed",
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("Run gave %d runs; want 2 (lua on both clients)", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		label := r.Strategy + "/" + r.Client
		if len(r.Faults) != 3 || r.Faults[0].Error != "" || r.Faults[1].Error != "" || r.Faults[2].Error != "" {
			t.Errorf("%s: faults %+v; want script-flush, restart and kill-clients, all done", label, r.Faults)
		} else if d := r.Faults[2].Detail; d == "killed 0 connections" {
			t.Errorf("%s: kill-clients %q; want the cell's connections found by name and killed", label, d)
		}
		if r.ScriptFallbacks == 0 {
			t.Errorf("%s: script fallbacks = 0; want > 0 after SCRIPT FLUSH and a restart", label)
		}
		if r.Admitted != r.Allowed {
			t.Errorf("%s: admitted %d with --on-error closed; want allowed %d", label, r.Admitted, r.Allowed)
		}
		if n := len(r.PerSecond); n < 2 || r.PerSecond[n-2].Decisions == 0 {
			t.Errorf("%s: per-second series %+v; want decisions after the restart", label, r.PerSecond)
		}
		var sum int64
		for _, s := range r.PerSecond {
			sum += s.Decisions
		}
		if sum != r.Decisions {
			t.Errorf("%s: per-second decisions add up to %d; want %d", label, sum, r.Decisions)
		}
	}
}

// TestOverAdmission checks admission correctness under load: with the
// counters at their limit, naive's workers that read the same value are all
// admitted, so some window lets more than the limit through; the atomic
// strategies never do, and no span of one window admits more than twice
// the limit.
func TestOverAdmission(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const limit = 50
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Strategies: []string{"naive", "incr-expire", "multi-nx", "lua"},
		Limit:      limit,
		Window:     1,
		Workload:   workload.Config{Workers: 64, Keys: 4, Duration: 2 * time.Second, Prefix: redistest.Prefix(t)},
		Targets:    []rlbench.TargetSpec{{Addr: srv.Addr()}},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if len(rep.Runs) != 4 {
		t.Fatalf("Run gave %d runs; want 4 (4 strategies on go-redis)", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		if r.OverAdmitted == nil {
			t.Fatalf("%s: over_admitted is nil; want a count for a fixed-window strategy", r.Strategy)
		}
		over := *r.OverAdmitted
		switch {
		case r.Strategy == "naive" && over == 0:
			t.Errorf("naive: over_admitted = 0; want > 0 (workers reading the same count are all admitted)")
		case r.Strategy != "naive" && over != 0:
			t.Errorf("%s: over_admitted = %d; want 0", r.Strategy, over)
		}
		if r.Strategy != "naive" && (r.MaxAdmittedPerWindow < limit || r.MaxAdmittedPerWindow > 2*limit) {
			t.Errorf("%s: max admitted per window span = %d; want between %d and %d", r.Strategy, r.MaxAdmittedPerWindow, limit, 2*limit)
		}
	}
}

// TestRunRefusesMoreConnectionsThanMaxclients checks that a go-redis run
// needing more connections than the server accepts is refused up front,
// and that rueidis, which shares a few connections, is not.
func TestRunRefusesMoreConnectionsThanMaxclients(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	if err := rdb.ConfigSet(ctx, "maxclients", "20").Err(); err != nil {
		t.Fatal(err)
	}
	cfg := rlbench.Config{
		Clients:  []string{"go-redis"},
		Workload: workload.Config{Workers: 50, Requests: 100},
		Targets:  []rlbench.TargetSpec{{Addr: srv.Addr()}},
	}
	_, err := rlbench.Run(ctx, cfg, rlbench.Options{})
	var uerr *rlbench.UsageError
	if !errors.As(err, &uerr) || uerr.Field != "Workload.Workers" || !strings.Contains(err.Error(), "maxclients 20") {
		t.Errorf("Run(go-redis, 50 workers, maxclients 20) error = %v; want a --clients UsageError naming maxclients 20", err)
	}
	cfg.Clients = []string{"rueidis"}
	if _, err := rlbench.Run(ctx, cfg, rlbench.Options{}); err != nil {
		t.Errorf("Run(rueidis, 50 workers, maxclients 20) error = %v; want none", err)
	}
}

// TestMatrixOfTargets runs two private servers from the same binary,
// labelled apart, with both clients: one cell per target x strategy x
// client, in the documented order, each with its server and environment.
func TestMatrixOfTargets(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath(redisserver.DefaultBinary)
	if err != nil {
		t.Fatalf("redis-server not on PATH: %v (run scripts/test.sh)", err)
	}
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Strategies: []string{"lua"},
		Clients:    []string{"go-redis", "rueidis"},
		Targets:    []rlbench.TargetSpec{rlbench.ParseTarget("a="+bin, true), rlbench.ParseTarget("b="+bin, true)},
		Warmup:     200 * time.Millisecond,
		Workload:   workload.Config{Workers: 4, Keys: 1, Duration: 300 * time.Millisecond},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	want := []string{"a lua go-redis", "a lua rueidis", "b lua go-redis", "b lua rueidis"}
	if len(rep.Runs) != len(want) {
		t.Fatalf("Run gave %d cells; want %d", len(rep.Runs), len(want))
	}
	for i, r := range rep.Runs {
		if got := r.Target + " " + r.Strategy + " " + r.Client; got != want[i] {
			t.Errorf("cell %d = %q; want %q", i, got, want[i])
		}
		if r.Server == nil || r.Server.Version == "" || !r.Server.Managed {
			t.Errorf("cell %d server = %+v; want the private server with its version", i, r.Server)
		}
		e := r.Environment
		// A test binary records no module versions; the built command
		// does (cmd/rlbench TestBinaryRecordsEnvironment).
		if e == nil || e.ClientModule == "" || e.GoVersion == "" || e.NumCPU < 1 || e.GOMAXPROCS < 1 {
			t.Errorf("cell %d environment = %+v; want client module, Go version and CPUs", i, e)
		}
		if r.Decisions == 0 || r.Errors != 0 {
			t.Errorf("cell %d: %d decisions, %d errors; want > 0 and 0", i, r.Decisions, r.Errors)
		}
		// The warm-up is not recorded and uses keys of its own: the one
		// counter starts from zero, so the first window admits exactly the
		// limit (100), or every decision if fewer. (With more keys, one of
		// them may pass the limit before the others reach it.)
		if want := min(r.Decisions, 100); r.Allowed != want {
			t.Errorf("cell %d allowed %d of %d decisions; want %d: the warm-up must neither count nor use the measured keys", i, r.Allowed, r.Decisions, want)
		}
	}
	if rep.Runs[0].Server.Addr == rep.Runs[2].Server.Addr {
		t.Errorf("targets a and b share %s; want two servers", rep.Runs[0].Server.Addr)
	}
}

// TestDefaultProcs checks that rlbench leaves a CPU to a server on the same
// machine, and only then.
func TestDefaultProcs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  rlbench.Config
		ncpu int
		want int
	}{
		{"private server", rlbench.Config{}, 2, 1},
		{"one CPU", rlbench.Config{}, 1, 1},
		{"loopback address", rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: "127.0.0.1:6379"}}}, 8, 7},
		{"localhost", rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: "localhost:6379"}}}, 8, 7},
		{"IPv6 loopback", rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: "[::1]:6379"}}}, 8, 7},
		{"remote server", rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: "10.0.0.5:6379"}}}, 8, 8},
		{"remote cluster", rlbench.Config{Targets: []rlbench.TargetSpec{{Cluster: []string{"10.0.0.5:7000"}}}}, 4, 4},
		{"managed cluster", rlbench.Config{Targets: []rlbench.TargetSpec{{ManagedCluster: "3"}}}, 4, 3},
		{"remote and local", rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: "db.example:6379"}, {RedisServer: "redis-server"}}}, 4, 3},
	}
	for _, tc := range tests {
		if got := rlbench.DefaultProcs(tc.cfg, tc.ncpu); got != tc.want {
			t.Errorf("%s: DefaultProcs(%d CPUs) = %d; want %d", tc.name, tc.ncpu, got, tc.want)
		}
	}
}

// TestSetDefaultGC checks that the commands' GC setting yields to the
// environment's. Not parallel: it sets the environment and the process's
// GOGC (restored at the end).
func TestSetDefaultGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	tests := []struct {
		name           string
		gogc, memlimit string
		want           int
	}{
		{"neither set", "", "", rlbench.DefaultGCPercent},
		{"GOGC set", "80", "", 100},
		{"GOMEMLIMIT set", "", "1GiB", 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			t.Setenv("GOMEMLIMIT", tc.memlimit)
			debug.SetGCPercent(100)
			rlbench.SetDefaultGC()
			if got := debug.SetGCPercent(100); got != tc.want {
				t.Errorf("GOGC after SetDefaultGC = %d; want %d", got, tc.want)
			}
		})
	}
}

// TestScriptFallbacksMeasuredOnly is issue 35, item 4: after SCRIPT FLUSH
// each worker's first EVALSHA of the warm-up is answered NOSCRIPT and sent
// again as EVAL; script_fallbacks counts the measured load's only, which
// here has none.
func TestScriptFallbacksMeasuredOnly(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const workers = 50
	rep, err := rlbench.Run(ctx, rlbench.Config{
		Strategies: []string{"lua"},
		Clients:    []string{"go-redis"},
		Window:     60,
		Warmup:     500 * time.Millisecond,
		Workload:   workload.Config{Workers: workers, Keys: 10, Duration: time.Second, Prefix: redistest.Prefix(t)},
		Targets:    []rlbench.TargetSpec{{Addr: srv.Addr()}},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	// The server's own count: the warm-up's EVALs, none of the load's.
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "cmdstat_eval:") {
		t.Fatalf("INFO commandstats has no EVAL; want the warm-up's NOSCRIPT fallbacks:\n%s", info)
	}
	if r := rep.Runs[0]; r.ScriptFallbacks != 0 {
		t.Errorf("script_fallbacks = %d; want 0 (the warm-up's EVALs are not the load's)", r.ScriptFallbacks)
	}
}

package rlbench_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/workload"
)

// masterClients returns a go-redis client to each master of c, closed in
// t.Cleanup, for counts made independently of package audit.
func masterClients(t *testing.T, c *redisserver.Cluster) map[string]*redis.Client {
	t.Helper()
	out := map[string]*redis.Client{}
	for _, addr := range c.MasterAddrs() {
		rdb := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
		t.Cleanup(func() { rdb.Close() })
		out[addr] = rdb
	}
	if len(out) == 0 {
		t.Fatal("cluster has no masters")
	}
	return out
}

// TestClusterImmortalKeys is TestImmortalKeys on a 3-master cluster reached
// with --cluster: naive leaks immortal keys and lua does not, on both
// clients; the audit covers every master, its per-node counts sum to the
// total and agree with an independent count on each master, and a key
// outside the prefix is untouched.
func TestClusterImmortalKeys(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	rdb := redistest.ClusterClient(t, cl)
	masters := masterClients(t, cl)
	ctx := context.Background()
	prefix := redistest.Prefix(t)
	outside := strings.TrimSuffix(prefix, ":") + "x"
	if err := rdb.Set(ctx, outside, 42, 0).Err(); err != nil {
		t.Fatal(err)
	}

	rep, err := rlbench.Run(ctx, rlbench.Config{
		Strategies: []string{"naive", "lua"},
		Clients:    []string{"go-redis", "rueidis"},
		Limit:      1_000_000,
		Window:     1,
		Workload:   workload.Config{Workers: 64, Keys: 20, Duration: 2 * time.Second, Prefix: prefix},
		Targets:    []rlbench.TargetSpec{{Cluster: cl.Addrs()[:1]}},
		KeepKeys:   true,
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if len(rep.Runs) != 4 {
		t.Fatalf("Run gave %d runs; want 4 (2 strategies x 2 clients)", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		label := r.Strategy + "/" + r.Client
		if r.Errors != 0 || r.Decisions == 0 {
			t.Errorf("%s: decisions %d, errors %d (%v); want > 0 and 0", label, r.Decisions, r.Errors, r.ErrorKinds)
		}
		if r.Strategy == "naive" && r.Audit.Immortal == 0 {
			t.Errorf("%s: audit found 0 immortal keys; want > 0 (the read-then-write race)", label)
		}
		if r.Strategy != "naive" && r.Audit.Immortal != 0 {
			t.Errorf("%s: audit found %d immortal keys; want 0", label, r.Audit.Immortal)
		}
		if want := map[string]int64{"MOVED": 0, "ASK": 0, "TRYAGAIN": 0, "CLUSTERDOWN": 0}; !maps.Equal(r.ClusterErrors, want) {
			t.Errorf("%s: cluster errors = %v; want %v (a stable cluster, whose slots the clients know)", label, r.ClusterErrors, want)
		}
		if len(r.AuditPerNode) != len(masters) {
			t.Errorf("%s: audit per node = %v; want one entry per master (%d)", label, r.AuditPerNode, len(masters))
		}
		// The self-check reads every master: go-redis opens a pool of at
		// most 64 (the workers) per node, so more than 64 connections means
		// more than one master was counted. (How many each pool holds by the
		// end depends on the machine's speed: 124 to 192 have been seen.)
		if s := r.Saturation; s == nil || s.ServerNodes != len(masters) || (r.Client == "go-redis" && s.ConnectionsOpened <= 64) {
			t.Errorf("%s: saturation = %+v; want server_nodes %d and, for go-redis, > 64 connections opened", label, s, len(masters))
		}
		cell := keyspace.Cell(prefix, r.Strategy, r.Client)
		var keys, immortal int64
		for addr, a := range r.AuditPerNode {
			keys += a.Keys
			immortal += a.Immortal
			m, ok := masters[addr]
			if !ok {
				t.Errorf("%s: audit per node names %s; not a master", label, addr)
				continue
			}
			if got := countImmortal(t, m, cell); got != a.Immortal {
				t.Errorf("%s: independent count of TTL -1 keys on %s = %d; audit said %d", label, addr, got, a.Immortal)
			}
		}
		if keys != r.Audit.Keys || immortal != r.Audit.Immortal {
			t.Errorf("%s: per-node audits sum to %d keys, %d immortal; total says %d, %d", label, keys, immortal, r.Audit.Keys, r.Audit.Immortal)
		}
	}
	if v, err := rdb.Get(ctx, outside).Result(); err != nil || v != "42" {
		t.Errorf("key outside the prefix = %q, %v; want \"42\" untouched", v, err)
	}
}

// TestClusterCleansUp checks that a run on a cluster deletes its own keys
// on every master, and only those, and the function library it loaded on
// each (issue 21, item 8).
func TestClusterCleansUp(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	rdb := redistest.ClusterClient(t, cl)
	ctx := context.Background()
	unrelated := []string{"unrelated:{1}", "unrelated:{2}", "unrelated:{3}"}
	for _, k := range unrelated {
		if err := rdb.Set(ctx, k, 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := rlbench.Run(ctx, rlbench.Config{
		Strategies: []string{"incr-expire", "function"},
		Clients:    []string{"go-redis", "rueidis"},
		Workload:   workload.Config{Workers: 4, Keys: 10, Requests: 300, Prefix: redistest.Prefix(t)},
		Targets:    []rlbench.TargetSpec{{Cluster: cl.Addrs()}},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if len(rep.Runs) != 4 {
		t.Fatalf("Run gave %d runs; want 4 (2 strategies x 2 clients)", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		if r.Decisions != 300 || r.Errors != 0 || r.Audit.Keys != 10 {
			t.Errorf("%s/%s: decisions %d, errors %d, audit keys %d; want 300, 0, 10", r.Strategy, r.Client, r.Decisions, r.Errors, r.Audit.Keys)
		}
	}
	var total int64
	for addr, m := range masterClients(t, cl) {
		n := m.DBSize(ctx).Val()
		total += n
		if n > int64(len(unrelated)) {
			t.Errorf("DBSIZE on %s after the run = %d; want only unrelated keys", addr, n)
		}
		// The library the function cells loaded on every master is gone.
		if libs, err := m.FunctionList(ctx, redis.FunctionListQuery{}).Result(); err != nil || len(libs) != 0 {
			t.Errorf("FUNCTION LIST on %s after the run = %+v, %v; want no library", addr, libs, err)
		}
	}
	if total != int64(len(unrelated)) {
		t.Errorf("keys on all masters after the run = %d; want %d (the unrelated ones)", total, len(unrelated))
	}
}

// TestClusterRefusesMoreConnectionsThanMaxclients checks the maxclients
// check on every master, not only the first: a go-redis run needing more
// connections than the last master accepts is refused up front, naming it.
func TestClusterRefusesMoreConnectionsThanMaxclients(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	addrs := cl.MasterAddrs()
	slices.Sort(addrs)
	last := addrs[len(addrs)-1]
	if err := masterClients(t, cl)[last].ConfigSet(context.Background(), "maxclients", "20").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := rlbench.Run(context.Background(), rlbench.Config{
		Clients:  []string{"go-redis"},
		Workload: workload.Config{Workers: 50, Requests: 100},
		Targets:  []rlbench.TargetSpec{{Cluster: cl.Addrs()[:1]}},
	}, rlbench.Options{})
	var uerr *rlbench.UsageError
	if !errors.As(err, &uerr) || uerr.Field != "Workload.Workers" || !strings.Contains(err.Error(), "master "+last) || !strings.Contains(err.Error(), "maxclients 20") {
		t.Errorf("Run(go-redis, 50 workers, maxclients 20 on %s) error = %v; want a --clients UsageError naming that master and maxclients 20", last, err)
	}
}

// TestManagedCluster checks that ManagedCluster starts a private cluster,
// runs on it, reports it as managed with an audit per master, and stops it.
func TestManagedCluster(t *testing.T) {
	t.Parallel()
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Strategies: []string{"lua"},
		Clients:    []string{"go-redis", "rueidis"},
		Workload:   workload.Config{Workers: 4, Keys: 10, Requests: 200},
		Targets:    []rlbench.TargetSpec{{ManagedCluster: "3"}},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("Run gave %d runs; want 2 (lua on both clients)", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		if r.Decisions != 200 || r.Errors != 0 || !r.Server.Managed || len(r.AuditPerNode) != 3 || r.Audit.Keys != 10 {
			t.Errorf("%s/%s: decisions %d, errors %d, managed %t, audit %+v per node %v; want 200, 0, true, 10 keys over 3 masters",
				r.Strategy, r.Client, r.Decisions, r.Errors, r.Server.Managed, r.Audit, r.AuditPerNode)
		}
	}
	addrs := strings.Split(rep.Server.Addr, ",")
	if len(addrs) != 3 {
		t.Fatalf("server addr = %q; want 3 nodes", rep.Server.Addr)
	}
	if _, err := redisserver.Probe(context.Background(), addrs[0], "", 0); err == nil {
		t.Errorf("node %s still answers after the run; want the managed cluster stopped", addrs[0])
	}
}

// TestClusterFailover runs lua and function on a private 3x1 cluster with
// a failover in the middle of each cell: the fault happens and says who took
// over; the new master's empty script cache makes the first lua cell fall
// back to EVAL (the next cell fails back to a node that still has the
// script cached from when it was master), while function, whose library is
// replicated, never does; no counter loses its TTL; and decisions succeed
// after the failover has settled,
// when the old master is a replica and only the new one takes writes: the
// clients reached it. How they learnt of it is theirs to choose (a MOVED
// from the old master, or a CLUSTERDOWN and a fresh slot map), so the
// redirections are logged, not asserted.
func TestClusterFailover(t *testing.T) {
	t.Parallel()
	f, err := faults.Parse("failover@1s")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Strategies: []string{"lua", "function"},
		Clients:    []string{"go-redis", "rueidis"},
		// Long enough that a failover slowed down by a loaded machine (3 s
		// has been seen) still leaves whole seconds of load after it.
		Workload: workload.Config{Workers: 8, Keys: 50, Duration: 6 * time.Second},
		Targets:  []rlbench.TargetSpec{{ManagedCluster: "3x1"}},
		Faults:   []faults.Fault{f},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if len(rep.Runs) != 4 {
		t.Fatalf("Run gave %d runs; want 4", len(rep.Runs))
	}
	if r := rep.Runs[0]; r.Strategy != "lua" || r.ScriptFallbacks == 0 {
		t.Errorf("%s/%s: script fallbacks = %d; want lua with > 0 (the new master has no scripts)", r.Strategy, r.Client, r.ScriptFallbacks)
	}
	for _, r := range rep.Runs {
		label := r.Strategy + "/" + r.Client
		if len(r.Faults) != 1 || r.Faults[0].Error != "" || !strings.Contains(r.Faults[0].Detail, "took over from") {
			t.Errorf("%s: faults = %+v; want one failover that succeeded", label, r.Faults)
		}
		if r.Strategy == "function" && r.ScriptFallbacks != 0 {
			t.Errorf("%s: script fallbacks = %d; want 0", label, r.ScriptFallbacks)
		}
		// Keys found, so that no immortal key means none, not an audit
		// that read the wrong nodes after the failover.
		if r.Audit.Immortal != 0 || r.Audit.Keys == 0 {
			t.Errorf("%s: audit found %d keys, %d immortal; want keys and 0 immortal", label, r.Audit.Keys, r.Audit.Immortal)
		}
		if len(r.Faults) == 1 {
			settled := r.Faults[0].AtS + faultTook(t, r.Faults[0]).Seconds()
			if after := succeededAfter(r.PerSecond, settled); after == 0 {
				t.Errorf("%s: no decision succeeded in a second that began after the failover settled at %.1fs (series %+v); want the clients on the new master", label, settled, r.PerSecond)
			}
		}
		if r.Saturation != nil {
			t.Errorf("%s: saturation = %+v; want nil after a failover", label, r.Saturation)
		}
		t.Logf("%s: decisions %d, errors %v, fallbacks %d, cluster errors %v, fault %s", label, r.Decisions, r.ErrorKinds, r.ScriptFallbacks, r.ClusterErrors, r.Faults[0].Detail)
	}
}

// faultTook returns how long a timed fault took, from the " in D" that ends
// its detail ("127.0.0.1:7001 took over from 127.0.0.1:7000 in 1.2s").
func faultTook(t *testing.T, e results.FaultEvent) time.Duration {
	t.Helper()
	i := strings.LastIndex(e.Detail, " in ")
	d, err := time.ParseDuration(e.Detail[i+len(" in "):])
	if i < 0 || err != nil {
		t.Fatalf("fault detail %q does not end in \" in DURATION\"", e.Detail)
	}
	return d
}

// succeededAfter returns the decisions that succeeded (allowed or rejected,
// not errors) in the seconds of series that began at or after at seconds.
func succeededAfter(series []results.Second, at float64) int64 {
	var n int64
	for _, s := range series {
		if s.T-1 >= at {
			n += s.Allowed + s.Rejected
		}
	}
	return n
}

// TestClusterReshard moves the slot of each cell's first key to another
// master in the middle of the load, keeping it migrating for half a second:
// the nodes answer ASK while it migrates and MOVED after, and the report
// counts both on both clients; the clients follow them, so no decision
// fails; and the key keeps its TTL across MIGRATE, so the audit finds no
// immortal key.
func TestClusterReshard(t *testing.T) {
	t.Parallel()
	f, err := faults.Parse("reshard@1s:500ms")
	if err != nil {
		t.Fatal(err)
	}
	prefix := redistest.Prefix(t)
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Strategies: []string{"lua"},
		Clients:    []string{"go-redis", "rueidis"},
		Workload:   workload.Config{Workers: 8, Keys: 5, Duration: 3 * time.Second, Prefix: prefix},
		Targets:    []rlbench.TargetSpec{{ManagedCluster: "3"}},
		Faults:     []faults.Fault{f},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("Run gave %d runs; want 2", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		label := r.Strategy + "/" + r.Client
		if len(r.Faults) != 1 || r.Faults[0].Error != "" || !strings.Contains(r.Faults[0].Detail, "moved from") {
			t.Fatalf("%s: faults = %+v; want one reshard that succeeded", label, r.Faults)
		}
		if r.ClusterErrors["ASK"] == 0 || r.ClusterErrors["MOVED"] == 0 {
			t.Errorf("%s: cluster errors = %v; want ASK > 0 (while the slot migrated) and MOVED > 0 (after)", label, r.ClusterErrors)
		}
		if r.Errors != 0 || r.Decisions == 0 {
			t.Errorf("%s: decisions %d, errors %d (%v); want > 0 and 0: the clients follow redirections", label, r.Decisions, r.Errors, r.ErrorKinds)
		}
		if r.Audit.Immortal != 0 || r.Audit.Keys == 0 {
			t.Errorf("%s: audit %+v; want keys and no immortal one", label, r.Audit)
		}
		t.Logf("%s: decisions %d, cluster errors %v, fallbacks %d, fault %s", label, r.Decisions, r.ClusterErrors, r.ScriptFallbacks, r.Faults[0].Detail)
	}
}

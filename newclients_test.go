package rlbench_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/workload"
)

// TestNewClientsCrashRate is TestCrashRate on redigo and valkey-go: their
// client-level crash hook (strategies.Tap, between round trips) makes
// workers die between INCR and EXPIRE, leaving incr-expire with immortal
// counters, while multi-nx, one MULTI..EXEC write, leaves none.
func TestNewClientsCrashRate(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Strategies: []string{"incr-expire", "multi-nx"},
		Clients:    []string{"redigo", "valkey-go"},
		Limit:      1_000_000,
		Window:     1,
		Workload: workload.Config{Workers: 16, Keys: 20, Duration: 2500 * time.Millisecond,
			CrashRate: 0.5, Prefix: redistest.Prefix(t)},
		Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if len(rep.Runs) != 4 {
		t.Fatalf("Run gave %d runs; want 4 (incr-expire and multi-nx on redigo and valkey-go)", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		label := r.Strategy + "/" + r.Client
		if r.ErrorKinds["crashed"] == 0 {
			t.Errorf("%s: error kinds %v; want crashed > 0", label, r.ErrorKinds)
		}
		switch {
		case r.Strategy == "incr-expire" && r.Audit.Immortal == 0:
			t.Errorf("%s with --crash-rate 0.5: 0 immortal keys; want > 0", label)
		case r.Strategy == "multi-nx" && r.Audit.Immortal != 0:
			t.Errorf("%s with --crash-rate 0.5: %d immortal keys; want 0", label, r.Audit.Immortal)
		}
	}
}

// TestClientAllOnACluster checks that --client all on a cluster runs every
// client with cluster support, valkey-go's included, each cell's decisions
// all made and audited on every master, and leaves out redigo, which has
// none; and that a run's client options state the connection shape.
func TestClientAllOnACluster(t *testing.T) {
	t.Parallel()
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Strategies:  []string{"lua"},
		Clients:     []string{"all"},
		Connections: 4,
		Workload:    workload.Config{Workers: 8, Keys: 10, Requests: 200, Prefix: redistest.Prefix(t)},
		Targets:     []rlbench.TargetSpec{{ManagedCluster: "3"}},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	var got []string
	for _, r := range rep.Runs {
		got = append(got, r.Client)
		if r.Decisions != 200 || r.Errors != 0 || len(r.AuditPerNode) != 3 || r.Audit.Keys != 10 {
			t.Errorf("%s/%s: decisions %d, errors %d, audit %+v per node %v; want 200, 0, 10 keys over 3 masters",
				r.Strategy, r.Client, r.Decisions, r.Errors, r.Audit, r.AuditPerNode)
		}
		shape := "pool_size=4/node "
		if r.Client != "go-redis" {
			shape = "pipeline_multiplex=2 (4 conns/node)"
		}
		if !strings.Contains(r.ClientOptions, shape) {
			t.Errorf("%s client options = %q; want the shape %q", r.Client, r.ClientOptions, shape)
		}
	}
	if want := []string{"go-redis", "rueidis", "valkey-go"}; !slices.Equal(got, want) {
		t.Errorf("clients run = %v; want %v (not redigo)", got, want)
	}
}

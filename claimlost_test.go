package rlbench_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/topology"
	"github.com/rlbench/rlbench/workload"
)

// TestClaimLostOnAnotherTarget: a run on two servers loses its claim on
// the second while its first cell, on the first, runs. The run stops
// there and fails, but the first server's claim is still the run's: that
// cell's keys are audited and deleted as usual, and the error does not
// say they were left; the second server's keys (another run's now) are
// untouched.
func TestClaimLostOnAnotherTarget(t *testing.T) {
	t.Parallel()
	srv1, srv2 := redistest.Start(t), redistest.Start(t)
	rdb1, rdb2 := redistest.Client(t, srv1), redistest.Client(t, srv2)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	holderB := "run 20261203T000000-0000000b (pid 2 on h, since 2026-12-03T00:00:00Z)"
	take := func() {
		if err := rdb2.Set(ctx, keyspace.ClaimKey(prefix), holderB, time.Hour).Err(); err != nil {
			t.Error(err)
		}
		if err := rdb2.Set(ctx, prefix+"b:only", "b", 0).Err(); err != nil {
			t.Error(err)
		}
	}
	rep, err := rlbench.Run(ctx, rlbench.Config{
		Targets: []rlbench.TargetSpec{{Addr: srv1.Addr()}, {Addr: srv2.Addr()}}, RunID: "run-a", Strategies: []string{"naive"}, Window: 60,
		Workload: workload.Config{Workers: 2, Keys: 10, Duration: 2 * time.Minute, Prefix: prefix},
	}, rlbench.Options{Log: &onWrite{substr: "rlbench: running", do: take}})
	if !errors.Is(err, topology.ErrClaimLost) || !strings.Contains(err.Error(), "0000000b") {
		t.Fatalf("Run, its claim on %s taken by B = %v; want topology.ErrClaimLost naming B's claim", srv2.Addr(), err)
	}
	if strings.Contains(err.Error(), srv1.Addr()) && strings.Contains(err.Error(), "deleted no key") {
		t.Errorf("Run error = %v; want it not to say that it left the keys on %s, whose claim it held", err, srv1.Addr())
	}
	if rep == nil || len(rep.Runs) != 1 || rep.Runs[0].Audit.Error != "" {
		t.Fatalf("report = %+v; want the first cell, audited", rep)
	}
	if keys := rdb1.Keys(ctx, prefix+"*").Val(); len(keys) != 0 {
		t.Errorf("after the run, %s holds %q under the prefix; want the cell's keys deleted", srv1.Addr(), keys)
	}
	if v := rdb2.Get(ctx, prefix+"b:only").Val(); v != "b" {
		t.Errorf("after the run, GET b:only on %s = %q; want B's key", srv2.Addr(), v)
	}
	if v := rdb2.Get(ctx, keyspace.ClaimKey(prefix)).Val(); v != holderB {
		t.Errorf("after the run, the claim on %s = %q; want B's", srv2.Addr(), v)
	}
}

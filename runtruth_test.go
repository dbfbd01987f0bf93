package rlbench_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/workload"
)

// TestNoDecisionIsAFailedRun checks that a cell too short to make a single
// decision fails the run (ErrNoDecision) rather than reporting a clean run,
// and that it draws no saturation verdict from no load.
func TestNoDecisionIsAFailedRun(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Addr:     srv.Addr(),
		Workload: workload.Config{Workers: 2, Keys: 5, Duration: time.Nanosecond, Prefix: redistest.Prefix(t)},
	}, rlbench.Options{})
	if rep == nil || len(rep.Runs) != 1 {
		t.Fatalf("Run(--duration 1ns) = %+v, %v; want one run", rep, err)
	}
	run := rep.Runs[0]
	if run.Decisions != 0 {
		t.Skipf("the cell made %d decisions in 1ns; nothing to check", run.Decisions)
	}
	if !errors.Is(err, rlbench.ErrNoDecision) {
		t.Errorf("Run(--duration 1ns) error = %v; want ErrNoDecision", err)
	}
	if usageField(err) != "" {
		t.Errorf("Run(--duration 1ns) error = %v; want a failure, not bad input", err)
	}
	if run.Saturation != nil && run.Saturation.Verdict != "" {
		t.Errorf("Run(--duration 1ns) verdict = %q; want none from no load", run.Saturation.Verdict)
	}
}

package rlbench_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/workload"
)

// TestNoDecisionIsAFailedRun checks that a cell too short to make a single
// decision fails the run (ErrNoDecision) rather than reporting a clean run,
// and that it draws no saturation verdict from no load.
func TestNoDecisionIsAFailedRun(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Targets:  []rlbench.TargetSpec{{Addr: srv.Addr()}},
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

// TestRunRefusesAWritableReplica checks that a replica that takes writes
// (replica-read-only no) is refused before the first write, as a read-only
// one is: its writes are not the master's.
func TestRunRefusesAWritableReplica(t *testing.T) {
	t.Parallel()
	primary := redistest.Start(t)
	replica := redistest.Start(t)
	rdb := redistest.Client(t, replica)
	ctx := context.Background()
	host, port, _ := strings.Cut(primary.Addr(), ":")
	if err := rdb.ConfigSet(ctx, "replica-read-only", "no").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ReplicaOf(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	prefix := redistest.Prefix(t)
	_, err := rlbench.Run(ctx, rlbench.Config{
		Targets:  []rlbench.TargetSpec{{Addr: replica.Addr()}},
		Workload: workload.Config{Workers: 2, Keys: 5, Requests: 50, Prefix: prefix},
	}, rlbench.Options{})
	if usageField(err) != "Targets.Addr" || !strings.Contains(err.Error(), "a replica of "+primary.Addr()) {
		t.Errorf("Run(a writable replica) error = %v; want a Targets.Addr UsageError naming its master", err)
	}
	if keys := rdb.Keys(ctx, prefix+"*").Val(); len(keys) != 0 {
		t.Errorf("keys under %q on the replica after the refused run = %q; want none", prefix, keys)
	}
}

// TestFailedCellStopsTheRun checks that a cell whose audit fails (the user
// loses SCAN during its load) stops the run as a failure, not as an
// interrupt: the report says failed and why (stopped_by), not interrupted,
// and the error says that the later cells did not run and gives the
// clean-up command for the keys that may remain.
func TestFailedCellStopsTheRun(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	prefix := redistest.Prefix(t)
	revoked := make(chan error, 1)
	go func() {
		// Once the first cell's load has written a key (after the
		// pre-flight, which SCANs): its audit is then refused.
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if keys, err := rdb.Keys(ctx, keyspace.Cell(prefix, "lua", "go-redis")+"*").Result(); err == nil && len(keys) > 0 {
				revoked <- rdb.Do(ctx, "ACL", "SETUSER", "default", "-scan").Err()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		revoked <- errors.New("no key of the first cell within 30s")
	}()
	rep, err := rlbench.Run(ctx, rlbench.Config{
		Targets:    []rlbench.TargetSpec{{Addr: srv.Addr()}},
		Strategies: []string{"lua", "incr-expire"},
		Workload:   workload.Config{Workers: 2, Keys: 5, Duration: 3 * time.Second, Prefix: prefix},
	}, rlbench.Options{})
	if rerr := <-revoked; rerr != nil {
		t.Fatalf("revoking SCAN: %v", rerr)
	}
	if !errors.Is(err, rlbench.ErrAuditFailed) || !errors.Is(err, rlbench.ErrStopped) {
		t.Fatalf("Run(SCAN refused in the first cell) error = %v; want ErrAuditFailed and ErrStopped", err)
	}
	if want := "rlbench cleanup --prefix '" + prefix + "'"; !strings.Contains(err.Error(), want) {
		t.Errorf("Run error = %q; want the clean-up command %q", err, want)
	}
	if len(rep.Runs) != 1 {
		t.Errorf("Run gave %d runs; want 1 (the second cell did not run)", len(rep.Runs))
	}
	if rep.Interrupted || !rep.Failed || !strings.Contains(rep.StoppedBy, "NOPERM") {
		t.Errorf("report interrupted %t, failed %t, stopped_by %q; want not interrupted, failed, stopped by the NOPERM audit",
			rep.Interrupted, rep.Failed, rep.StoppedBy)
	}
	var js strings.Builder
	if err := results.JSON(rep)(&js); err != nil {
		t.Fatal(err)
	}
	if s := js.String(); strings.Contains(s, `"interrupted"`) || !strings.Contains(s, `"failed": true`) || !strings.Contains(s, `"stopped_by": "`) {
		t.Errorf("report JSON = %.300s...; want failed and stopped_by, and no interrupted", s)
	}
}

// TestRunInterruptedAtLogin checks that an interrupt while the pre-flight
// waits on a server that accepted the connection and never answers ends
// the run at once, as an interrupt (context.Canceled), not as bad input
// after the check's 10 s timeout.
func TestRunInterruptedAtLogin(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c // never answered; closed at the end
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for len(held) > 0 {
			(<-held).Close()
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err = rlbench.Run(ctx, rlbench.Config{
		Targets:  []rlbench.TargetSpec{{Addr: ln.Addr().String()}},
		Workload: workload.Config{Workers: 2, Keys: 5, Requests: 10, Prefix: redistest.Prefix(t)},
	}, rlbench.Options{})
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Run(silent server, interrupted after 200ms) returned after %s; want at once", elapsed)
	}
	if !errors.Is(err, context.Canceled) || usageField(err) != "" {
		t.Errorf("Run(silent server, interrupted) error = %v; want context.Canceled, not bad input", err)
	}
}

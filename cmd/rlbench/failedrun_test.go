package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
)

// TestVerifyRefusesAReplica checks that `rlbench verify` on a read-only
// replica stops at the pre-flight with exit 2 and an --addr error naming
// the server, before any check: not a matrix of FAIL cells.
func TestVerifyRefusesAReplica(t *testing.T) {
	t.Parallel()
	primary := redistest.Start(t)
	replica := redistest.Start(t)
	host, port, _ := strings.Cut(primary.Addr(), ":")
	if err := redistest.Client(t, replica).ReplicaOf(t.Context(), host, port).Err(); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := verifyCLI(t, "--addr", replica.Addr(), "--strategy", "lua", "--client", "go-redis")
	if code != exitUsage || !strings.Contains(stderr, "--addr: "+replica.Addr()) || !strings.Contains(stderr, "replica of "+primary.Addr()) {
		t.Errorf("verify --addr REPLICA = %d, stderr %q; want %d and an --addr error naming the replica and its master", code, stderr, exitUsage)
	}
	if strings.Contains(stdout, "FAIL") {
		t.Errorf("verify --addr REPLICA printed a matrix:\n%s", stdout)
	}
}

// TestLoadStoppedByAFailure checks the command line of a run whose first
// cell's audit fails (the user loses SCAN during its load): exit 1, an
// error that says the later cells did not run and gives the clean-up
// command, and a JSON file that says failed and stopped_by, not
// interrupted.
func TestLoadStoppedByAFailure(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	revoked := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if keys, err := rdb.Keys(context.Background(), keyspace.Cell(prefix, "lua", "go-redis")+"*").Result(); err == nil && len(keys) > 0 {
				revoked <- rdb.Do(context.Background(), "ACL", "SETUSER", "default", "-scan").Err()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		revoked <- errors.New("no key of the first cell within 30s")
	}()
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	res := runCLI(t, t.Context(), "--addr", srv.Addr(), "--strategy", "lua,incr-expire", "--clients", "2", "--keys", "5",
		"--duration", "3s", "--prefix", prefix, "--json", jsonPath)
	if err := <-revoked; err != nil {
		t.Fatalf("revoking SCAN: %v", err)
	}
	if res.code != exitFailure || !strings.Contains(res.stderr, "the cells after it did not run") || !strings.Contains(res.stderr, "rlbench cleanup --prefix '"+prefix+"'") {
		t.Errorf("run = %d, stderr %q; want %d, the later cells named as not run, and the clean-up command", res.code, res.stderr, exitFailure)
	}
	rep := readReport(t, jsonPath)
	if rep.Interrupted || !rep.Failed || rep.StoppedBy == "" || len(rep.Runs) != 1 {
		t.Errorf("JSON: interrupted %t, failed %t, stopped_by %q, %d runs; want failed, stopped_by and one run, not interrupted", rep.Interrupted, rep.Failed, rep.StoppedBy, len(rep.Runs))
	}
}

// TestLoadWithNoDecision checks that a run too short for a single decision
// exits 1, saying so, rather than 0 with a verdict.
func TestLoadWithNoDecision(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	res := runCLI(t, t.Context(), "--addr", srv.Addr(), "--duration", "1ns", "--clients", "2", "--keys", "5", "--prefix", redistest.Prefix(t), "--json", jsonPath)
	rep := readReport(t, jsonPath)
	if len(rep.Runs) != 1 || rep.Runs[0].Decisions != 0 {
		t.Skipf("the cell made decisions in 1ns (%+v); nothing to check", rep.Runs)
	}
	if res.code != exitFailure || !strings.Contains(res.stderr, "no decision was made") || !rep.Failed {
		t.Errorf("run --duration 1ns = %d, stderr %q, failed %t; want %d, \"no decision was made\" and failed", res.code, res.stderr, rep.Failed, exitFailure)
	}
	if strings.Contains(res.stdout, "-bound") {
		t.Errorf("run --duration 1ns drew a saturation verdict:\n%s", res.stdout)
	}
}

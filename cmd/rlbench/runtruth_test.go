package main

import (
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/redistest"
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

package verify_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/topology"
	"github.com/rlbench/rlbench/verify"
)

// TestRunRefusesATargetThatTakesNoWrites checks that verify runs the load
// run's pre-flight first: a read-only replica and a server at maxmemory
// are bad input (a *UsageError of Target.Addr naming the server and what it
// said), before any check writes, not a matrix in which every cell is a
// FAIL that blames the strategies.
func TestRunRefusesATargetThatTakesNoWrites(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setUp func(t *testing.T, srv *redisserver.Server)
		says  string
	}{
		{"read-only replica", func(t *testing.T, srv *redisserver.Server) {
			primary := redistest.Start(t)
			host, port, _ := strings.Cut(primary.Addr(), ":")
			if err := redistest.Client(t, srv).ReplicaOf(t.Context(), host, port).Err(); err != nil {
				t.Fatal(err)
			}
		}, "replica of"},
		{"at maxmemory", func(t *testing.T, srv *redisserver.Server) {
			if err := redistest.Client(t, srv).ConfigSet(t.Context(), "maxmemory", "1").Err(); err != nil {
				t.Fatal(err)
			}
		}, "OOM"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			tc.setUp(t, srv)
			m, err := verify.Run(t.Context(), verify.Config{
				Strategies: []string{"lua"}, Clients: []string{"go-redis"},
				Target: topology.Spec{Addr: srv.Addr()}, Prefix: redistest.Prefix(t),
			})
			uerr, ok := errors.AsType[*verify.UsageError](err)
			if !ok || uerr.Field != "Target.Addr" || !strings.Contains(err.Error(), srv.Addr()) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("verify.Run(%s) = %v; want a UsageError of Target.Addr naming %s and saying %q", tc.name, err, srv.Addr(), tc.says)
			}
			if m != nil {
				t.Errorf("verify.Run(%s) matrix = %d rows; want none", tc.name, len(m.Rows))
			}
		})
	}
}

// TestRunHoldsTheClaim: verify on an --addr server claims its prefix for
// its whole run, not only its pre-flight, so that a load run started on the
// same prefix meanwhile is refused; the claim is gone after it.
func TestRunHoldsTheClaim(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	claim := &claimWatch{rdb: rdb, key: keyspace.ClaimKey(prefix)}
	if _, err := verify.Run(t.Context(), verify.Config{
		Strategies: []string{"lua"}, Clients: []string{"go-redis"}, Target: topology.Spec{Addr: srv.Addr()}, Prefix: prefix, Log: claim,
	}); err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if claim.seen == 0 || claim.missed != 0 {
		t.Errorf("claim %s held at %d of the %d log lines written after the pre-flight; want all", claim.key, claim.seen, claim.seen+claim.missed)
	}
	if n := rdb.Exists(t.Context(), claim.key).Val(); n != 0 {
		t.Errorf("EXISTS %s after Run = %d; want the claim released", claim.key, n)
	}
}

// claimWatch is a verify log that checks, at each line, that the claim key
// exists.
type claimWatch struct {
	rdb          *redis.Client
	key          string
	mu           sync.Mutex
	seen, missed int
}

func (w *claimWatch) Write(p []byte) (int, error) {
	n := w.rdb.Exists(context.Background(), w.key).Val()
	w.mu.Lock()
	defer w.mu.Unlock()
	if n == 1 {
		w.seen++
	} else {
		w.missed++
	}
	return len(p), nil
}

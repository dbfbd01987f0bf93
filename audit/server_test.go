package audit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/internal/redistest"
)

// TestScanServerRestarted restarts the server (empty: it has no
// persistence) right after the audit's first SCAN page: the SCAN cursor
// then walks another keyspace, and the audit, by Scan or by the runner's
// Run, must end incomplete, not report the remains as a complete audit.
func TestScanServerRestarted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		scan func(ctx context.Context, rdb *redis.Client, prefix string) (complete bool, err error)
	}{
		{"scan", func(ctx context.Context, rdb *redis.Client, prefix string) (bool, error) {
			rep, err := audit.Scan(ctx, []audit.Node{rdb}, audit.Options{Prefix: prefix, Count: 10, Rate: 2000})
			return rep.Complete, err
		}},
		// The in-run audit: Run is Scan with the runner's options.
		{"run", func(ctx context.Context, rdb *redis.Client, prefix string) (bool, error) {
			_, err := audit.Run(ctx, rdb, prefix, 60)
			return err == nil, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			observer := redistest.Client(t, srv)
			audited := redistest.Client(t, srv)
			ctx := t.Context()
			prefix := redistest.Prefix(t)
			pipe := observer.Pipeline()
			for i := range 3000 {
				pipe.Set(ctx, fmt.Sprintf("%s%d", prefix, i), i, 0)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			var once sync.Once
			audited.AddHook(scanHook(func(ctx context.Context, _ *redis.ScanCmd) {
				once.Do(func() {
					if err := srv.Restart(ctx); err != nil {
						t.Errorf("restart: %v", err)
					}
				})
			}))
			complete, err := tc.scan(ctx, audited, prefix)
			// The client reconnects (its retries) and the next identity
			// read finds a new run_id, or a command fails on the dropped
			// connection: either way the audit is incomplete.
			if complete || err == nil {
				t.Errorf("%s across a restart = complete %t, error %v; want incomplete, with an error", tc.name, complete, err)
			}
		})
	}
}

// TestScanServers: the report says which server each node was.
func TestScanServers(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	if err := rdb.Set(ctx, prefix+"k", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	runID := strings.TrimSpace(strings.SplitN(strings.SplitN(rdb.Info(ctx, "server").Val(), "run_id:", 2)[1], "\n", 2)[0])
	rep, err := audit.Scan(ctx, []audit.Node{rdb}, audit.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	want := audit.Server{Addr: srv.Addr(), DB: 0, Name: srv.Info().Name, Version: srv.Info().Version, RunID: runID, Role: "master"}
	if len(rep.Servers) != 1 || rep.Servers[0] != want {
		t.Errorf("Scan().Servers = %+v; want [%+v]", rep.Servers, want)
	}
	if rep.Matched != 1 {
		t.Errorf("Scan().Matched = %d; want 1", rep.Matched)
	}
}

// TestScanMasterDemoted makes the audited master a replica of another
// server after the first SCAN page, as a failover does to the old master
// (a Sentinel's or a cluster's): same run_id, another role, and the audit
// of the node ends with ErrServerChanged.
func TestScanMasterDemoted(t *testing.T) {
	t.Parallel()
	srv, other := redistest.Start(t), redistest.Start(t)
	observer := redistest.Client(t, srv)
	audited := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	pipe := observer.Pipeline()
	for i := range 300 {
		pipe.Set(ctx, fmt.Sprintf("%s%d", prefix, i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(other.Addr(), ":")
	var once sync.Once
	audited.AddHook(scanHook(func(ctx context.Context, _ *redis.ScanCmd) {
		once.Do(func() {
			if err := observer.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
				t.Errorf("REPLICAOF: %v", err)
			}
		})
	}))
	t.Cleanup(func() { observer.Do(context.Background(), "REPLICAOF", "NO", "ONE") })
	rep, err := audit.Scan(ctx, []audit.Node{audited}, audit.Options{Prefix: prefix, Count: 10})
	if rep.Complete || !errors.Is(err, audit.ErrServerChanged) || !strings.Contains(err.Error(), "role master, then slave") {
		t.Errorf("Scan() of a master demoted mid-audit = complete %t, error %v; want incomplete, %v (role master, then slave)", rep.Complete, err, audit.ErrServerChanged)
	}
}

package rlbench_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/serverinfo"
	"github.com/rlbench/rlbench/workload"
)

// TestHashFieldCrashRate: under --crash-rate, hash-incr-expire leaves
// immortal fields, which the run's field audit counts exactly as an
// independent HTTL count of every field does, while hash-multi-nx leaves
// none. The key audit alone cannot tell the two apart: every hash has no
// key TTL by design, so it calls them all immortal.
func TestHashFieldCrashRate(t *testing.T) {
	t.Parallel()
	srv := redistest.Start74(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	prefix := redistest.Prefix(t)
	rep, err := rlbench.Run(ctx, rlbench.Config{
		Strategies: []string{"hash-incr-expire", "hash-multi-nx"},
		Clients:    []string{"all"},
		Limit:      1_000_000,
		Window:     60,
		Fields:     8,
		Workload:   workload.Config{Workers: 8, Keys: 50, Requests: 4000, Prefix: prefix, CrashRate: 0.1},
		Targets:    []rlbench.TargetSpec{{Addr: srv.Addr()}},
		KeepKeys:   true,
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	for _, r := range rep.Runs {
		label := r.Strategy + "/" + r.Client
		cell := keyspace.Cell(prefix, r.Strategy, r.Client)
		hashes, fields, immortal := countFields(t, rdb, cell)
		a := r.Audit
		t.Logf("%s: %d hashes, %d fields, %d with no TTL (HTTL); audit %+v", label, hashes, fields, immortal, a)
		if a.Keys != hashes || a.Fields != fields || a.ImmortalFields != immortal {
			t.Errorf("%s: audit keys %d, fields %d, immortal fields %d; want %d, %d, %d (HTTL of every field)",
				label, a.Keys, a.Fields, a.ImmortalFields, hashes, fields, immortal)
		}
		switch r.Strategy {
		case "hash-incr-expire":
			if immortal == 0 || a.Immortal == 0 {
				t.Errorf("%s: %d immortal fields in %d immortal hashes; want some, with --crash-rate 0.1", label, immortal, a.Immortal)
			}
		case "hash-multi-nx":
			if immortal != 0 || a.Immortal != 0 {
				t.Errorf("%s: %d immortal fields in %d immortal hashes; want none", label, immortal, a.Immortal)
			}
		}
		// The key audit alone: every hash is immortal, healthy or not.
		keysOnly, err := audit.Scan(ctx, []audit.Node{rdb}, audit.Options{Prefix: cell})
		if err != nil {
			t.Fatal(err)
		}
		if keysOnly.Immortal != hashes || keysOnly.Fields != 0 {
			t.Errorf("%s: key audit alone = %d immortal keys, %d fields; want all %d hashes, no fields", label, keysOnly.Immortal, keysOnly.Fields, hashes)
		}
	}
	if _, err := audit.Scan(ctx, []audit.Node{rdb}, audit.Options{Prefix: prefix, Unlink: true}); err != nil {
		t.Fatal(err)
	}
}

// countFields counts, independently of package audit, the hashes under
// prefix, their fields, and the fields with no TTL (HTTL -1).
func countFields(t *testing.T, rdb *redis.Client, prefix string) (hashes, fields, immortal int64) {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		names, err := rdb.HKeys(ctx, k).Result()
		if err != nil {
			t.Fatalf("HKEYS %s: %v", k, err)
		}
		hashes++
		ttls, err := rdb.HTTL(ctx, k, names...).Result()
		if err != nil {
			t.Fatalf("HTTL %s: %v", k, err)
		}
		for _, ttl := range ttls {
			fields++
			if ttl == -1 {
				immortal++
			}
		}
	}
	return hashes, fields, immortal
}

// TestHashFieldRefusedOn70: on the redis-server 7.0 on PATH, a run of a
// hash-field strategy is refused before any write, as bad input naming
// the strategy, the missing command and the version it needs.
func TestHashFieldRefusedOn70(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	if v := srv.Info().RedisVersion; serverinfo.VersionAtLeast(v, "7.4.0") {
		t.Skipf("the server is Redis %s, which has hash-field TTLs; set %s to a redis-server before 7.4", v, redistest.BinaryEnv)
	}
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	_, err := rlbench.Run(context.Background(), rlbench.Config{
		Strategies: []string{"hash-multi-nx"},
		Workload:   workload.Config{Requests: 10, Prefix: prefix},
		Targets:    []rlbench.TargetSpec{{Addr: srv.Addr()}},
	}, rlbench.Options{})
	var ue *rlbench.UsageError
	if !errors.As(err, &ue) || ue.Field != "Strategies" {
		t.Fatalf("Run(hash-multi-nx) on Redis %s = %v; want a UsageError on Strategies", srv.Info().RedisVersion, err)
	}
	for _, want := range []string{"does not know HEXPIRE", "strategy hash-multi-nx needs Redis >= 7.4.0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Run(hash-multi-nx) = %q; want it to say %q", err, want)
		}
	}
	if keys := rdb.Keys(context.Background(), prefix+"*").Val(); len(keys) != 0 {
		t.Errorf("keys under the prefix after the refusal = %q; want none", keys)
	}
}

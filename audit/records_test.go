package audit_test

import (
	"testing"
	"time"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
)

// TestScanFixTTLLeavesRecords fixes the immortal keys of a killed run:
// its counters get the TTL, but the records of the ACL user and library
// it left (no TTL by design) are left out and counted: with a TTL they
// would expire, and rlbench cleanup, which finds those objects only by
// their records, would leave the user and the library for good.
func TestScanFixTTLLeavesRecords(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	records := []string{keyspace.ObjectKey(prefix, keyspace.ObjectACLUser, "rlbench-run-00000000000000aa"), keyspace.ObjectKey(prefix, keyspace.ObjectLibrary, "mylib")}
	for _, k := range append([]string{prefix + "lua:go-redis:{1}"}, records...) {
		if err := rdb.Set(ctx, k, "", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, dryRun := range []bool{true, false} {
		rep, err := audit.Scan(ctx, []audit.Node{rdb}, audit.Options{Prefix: prefix, FixTTL: time.Hour, DryRun: dryRun})
		if err != nil {
			t.Fatalf("Scan(DryRun %t) error: %v", dryRun, err)
		}
		fixed := rep.Fixed + rep.WouldFix
		if fixed != 1 || rep.FixRecords != 2 {
			t.Errorf("Scan(DryRun %t): fixed or would fix %d, records left out %d; want 1, 2", dryRun, fixed, rep.FixRecords)
		}
	}
	for _, k := range records {
		if ttl := rdb.TTL(ctx, k).Val(); ttl != -1 {
			t.Errorf("after the fix, TTL %s = %s; want none", k, ttl)
		}
	}
	if ttl := rdb.TTL(ctx, prefix+"lua:go-redis:{1}").Val(); ttl <= 0 {
		t.Errorf("after the fix, the counter's TTL = %s; want one", ttl)
	}
}

package audit_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/internal/redistest"
)

// TestRunNodesAndCleanupNodes checks RunNodes and CleanupNodes on a
// 3-master cluster whose keys, inside the prefix and out, lie in many
// slots: the total equals the seeded counts, each master reports its own
// share (every master holds some), and CleanupNodes deletes every key under
// the prefix on every master and no other.
func TestRunNodesAndCleanupNodes(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	rdb := redistest.ClusterClient(t, cl)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	want := seedInside(t, rdb, prefix)
	// More keys, one per {tag}, so that every master holds some.
	for i := range 30 {
		if err := rdb.Set(ctx, fmt.Sprintf("%s{%d}", prefix, i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	want.Keys += 30
	want.Immortal += 30
	outside := []string{"other:{1}", "other:{2}", "other:{3}", prefix[:len(prefix)-1], "x" + prefix + "{4}"}
	seedOutside(t, rdb, outside)

	var nodes []*redis.Client
	for _, addr := range cl.MasterAddrs() {
		node := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
		t.Cleanup(func() { node.Close() })
		nodes = append(nodes, node)
	}
	got, per, err := audit.RunNodes(ctx, nodes, prefix, window)
	if err != nil || got != want {
		t.Fatalf("RunNodes() = %+v, %v; want %+v", got, err, want)
	}
	if len(per) != len(nodes) {
		t.Fatalf("RunNodes() per node = %d results; want %d", len(per), len(nodes))
	}
	var sum int64
	for i, nr := range per {
		if nr.Addr != cl.MasterAddrs()[i] || nr.Keys == 0 {
			t.Errorf("RunNodes() node %d = %+v; want addr %s and some keys", i, nr, cl.MasterAddrs()[i])
		}
		sum += nr.Keys
	}
	if sum != want.Keys {
		t.Errorf("RunNodes() per-node keys sum to %d; want %d", sum, want.Keys)
	}

	deleted, err := audit.CleanupNodes(ctx, nodes, prefix)
	if err != nil || deleted != want.Keys {
		t.Errorf("CleanupNodes() = %d, %v; want %d", deleted, err, want.Keys)
	}
	if got, _, err := audit.RunNodes(ctx, nodes, prefix, window); err != nil || got != (audit.Result{}) {
		t.Errorf("RunNodes() after CleanupNodes = %+v, %v; want zero", got, err)
	}
	for _, key := range outside {
		if v := rdb.Get(ctx, key).Val(); v != "outside:"+key {
			t.Errorf("GET %q after CleanupNodes = %q; want it untouched", key, v)
		}
	}
	if _, _, err := audit.RunNodes(ctx, nodes, "", window); !errors.Is(err, audit.ErrEmptyPrefix) {
		t.Errorf("RunNodes(\"\") error = %v; want ErrEmptyPrefix", err)
	}
}

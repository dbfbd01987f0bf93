package audit_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/internal/redistest"
)

// TestScanNodesAndDelete checks Scan, and Scan with Unlink, on a
// 3-master cluster whose keys, inside the prefix and out, lie in many
// slots: the total equals the seeded counts, each master reports its own
// share (every master holds some), and Scan with Unlink deletes every key under
// the prefix on every master and no other.
func TestScanNodesAndDelete(t *testing.T) {
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

	var nodes []audit.Node
	for _, addr := range cl.MasterAddrs() {
		node := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
		t.Cleanup(func() { node.Close() })
		nodes = append(nodes, node)
	}
	runOptions := audit.Options{Prefix: prefix, MaxTTL: window * time.Second, Dedup: true}
	rep, err := audit.Scan(ctx, nodes, runOptions)
	got, per := rep.Result(), rep.NodeResults()
	if err != nil || got != want {
		t.Fatalf("Scan() = %+v, %v; want %+v", got, err, want)
	}
	if len(per) != len(nodes) {
		t.Fatalf("Scan() per node = %d results; want %d", len(per), len(nodes))
	}
	var sum int64
	for i, nr := range per {
		if nr.Addr != cl.MasterAddrs()[i] || nr.Keys == 0 {
			t.Errorf("Scan() node %d = %+v; want addr %s and some keys", i, nr, cl.MasterAddrs()[i])
		}
		sum += nr.Keys
	}
	if sum != want.Keys {
		t.Errorf("Scan() per-node keys sum to %d; want %d", sum, want.Keys)
	}

	deleting := runOptions
	deleting.Unlink = true
	if rep, err := audit.Scan(ctx, nodes, deleting); err != nil || rep.Deleted != want.Keys {
		t.Errorf("Scan(Unlink) deleted %d, %v; want %d", rep.Deleted, err, want.Keys)
	}
	if rep, err := audit.Scan(ctx, nodes, runOptions); err != nil || rep.Result() != (audit.Result{}) {
		t.Errorf("Scan() after Scan(Unlink) = %+v, %v; want zero", rep.Result(), err)
	}
	for _, key := range outside {
		if v := rdb.Get(ctx, key).Val(); v != "outside:"+key {
			t.Errorf("GET %q after Scan(Unlink) = %q; want it untouched", key, v)
		}
	}
	for _, o := range []audit.Options{{Unlink: true}, {Unlink: true, Match: "*"}} {
		if _, err := audit.Scan(ctx, nodes, o); !errors.Is(err, audit.ErrUnlinkNeedsPrefix) {
			t.Errorf("Scan(%+v) error = %v; want ErrUnlinkNeedsPrefix: it would delete keys not the run's", o, err)
		}
	}
	for _, key := range outside {
		if rdb.Exists(ctx, key).Val() != 1 {
			t.Errorf("key %q gone after the refused Scan(Unlink)", key)
		}
	}
}

// TestScanGoesOnPastADeadNode checks that a master that cannot be audited
// (here, down) leaves the others audited: the report has every node, the
// dead one incomplete, and the error names it.
func TestScanGoesOnPastADeadNode(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	rdb := redistest.ClusterClient(t, cl)
	prefix := redistest.Prefix(t)
	for i := range 60 {
		if err := rdb.Set(t.Context(), fmt.Sprintf("%s{%d}", prefix, i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	masters := cl.MasterAddrs()
	var nodes []audit.Node
	for _, addr := range masters {
		node := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, MaxRetries: -1})
		t.Cleanup(func() { node.Close() })
		nodes = append(nodes, node)
	}
	dead := masters[0] // the first: an audit that stopped there would see no key
	if err := cl.Node(dead).Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Scan(t.Context(), nodes, audit.Options{Prefix: prefix})
	if err == nil || !strings.Contains(err.Error(), dead) || rep.Complete {
		t.Fatalf("Scan() with master %s down = complete %t, %v; want incomplete and an error naming it", dead, rep.Complete, err)
	}
	per := rep.PerNode
	if len(per) != 3 || per[0].Complete || !per[1].Complete || !per[2].Complete || per[1].Keys == 0 || per[2].Keys == 0 {
		t.Errorf("Scan() per node = %+v; want 3 nodes, the first incomplete, the others complete with keys", per)
	}
	var text strings.Builder
	if err := audit.Text(rep)(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "INCOMPLETE: 1 of 3 nodes not audited to the end") {
		t.Errorf("Text() lacks the incomplete node count:\n%s", text.String())
	}
}

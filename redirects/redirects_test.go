package redirects_test

import (
	"context"
	"maps"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redirects"
)

func TestParse(t *testing.T) {
	t.Parallel()
	text := "# Errorstats\r\nerrorstat_ERR:count=3\r\nerrorstat_MOVED:count=12\r\nerrorstat_CLUSTERDOWN:count=1\r\n"
	got, err := redirects.Parse(text)
	want := map[string]int64{"MOVED": 12, "ASK": 0, "TRYAGAIN": 0, "CLUSTERDOWN": 1}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("Parse(%q) = %v, %v; want %v (ERR is not a cluster reply)", text, got, err, want)
	}
	if _, err := redirects.Parse("errorstat_ASK:count=many\r\n"); err == nil {
		t.Error("Parse(count=many) = nil error; want one")
	}
}

func TestDelta(t *testing.T) {
	t.Parallel()
	before := redirects.Snapshot{
		"a:1": {"MOVED": 10, "ASK": 2},
		"b:2": {"MOVED": 50},
	}
	after := redirects.Snapshot{
		"a:1": {"MOVED": 15, "ASK": 2},
		"b:2": {"MOVED": 4},       // restarted: 4 since
		"c:3": {"CLUSTERDOWN": 1}, // joined
	}
	want := map[string]int64{"MOVED": 9, "ASK": 0, "TRYAGAIN": 0, "CLUSTERDOWN": 1}
	if got := redirects.Delta(before, after); !maps.Equal(got, want) {
		t.Errorf("Delta = %v; want %v", got, want)
	}
}

// TestTake reads every node of a real cluster after one node was asked for
// a key of a slot it does not serve, twice.
func TestTake(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	rdb := redistest.ClusterClient(t, cl)
	ctx := context.Background()
	before, err := redirects.Take(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != len(cl.Addrs()) {
		t.Fatalf("Take read %d nodes; want %d", len(before), len(cl.Addrs()))
	}
	// The key's slot is served by one master; ask all three.
	for _, addr := range cl.MasterAddrs() {
		node := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, MaxRetries: -1})
		node.Get(ctx, "k")
		node.Get(ctx, "k")
		node.Close()
	}
	after, err := redirects.Take(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"MOVED": 4, "ASK": 0, "TRYAGAIN": 0, "CLUSTERDOWN": 0}
	if got := redirects.Delta(before, after); !maps.Equal(got, want) {
		t.Errorf("Delta after two GETs on each of 3 masters = %v; want %v (two masters redirect, twice)", got, want)
	}
}

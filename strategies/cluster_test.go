package strategies_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/strategies"
)

// TestCluster checks every strategy on every client with cluster support
// (not redigo: clients.Topologies) against a 3-master
// Redis Cluster, through the client's own cluster support: for keys whose
// {tags} spread them over the masters, the first request is allowed, a
// burst admits exactly the limit and then rejects, and every key the
// strategy keeps has a TTL. The window is long, so that no gcra or
// token-bucket refill admits an extra request.
func TestCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	rdb := redistest.ClusterClient(t, cl)
	const limit, window = 3, 60
	for _, info := range keyStrategies() {
		for _, cname := range clients.Names {
			t.Run(info.Name+"/"+cname, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				c, err := clients.New(cname, clients.Options{Cluster: cl.Addrs(), Workers: 2})
				if errors.Is(err, clients.ErrTopology) {
					t.Skipf("%s has no cluster support (clients.Topologies): %v", cname, err)
				}
				if err != nil {
					t.Fatalf("clients.New(%q, cluster) error: %v", cname, err)
				}
				t.Cleanup(func() { c.Close() })
				s := newStrategy(t, c, info.Name, strategies.Config{Limit: limit, Window: window})
				// Tags 0..5 land on all three masters of a 3-master cluster.
				for tag := range 6 {
					key := fmt.Sprintf("%s{%d}", redistest.Prefix(t), tag)
					for i := 1; i <= limit+2; i++ {
						d, err := s.Decide(ctx, c, key)
						if err != nil {
							t.Fatalf("Decide(%q) #%d error: %v", key, i, err)
						}
						if want := i <= limit; d.Allowed != want {
							t.Errorf("Decide(%q) #%d allowed = %t; want %t (count %d)", key, i, d.Allowed, want, d.Count)
						}
					}
					for _, k := range stateKeys(info.Name, key) {
						if ttl := rdb.PTTL(ctx, k).Val(); ttl <= 0 {
							t.Errorf("PTTL(%q) after %d requests = %v; want > 0", k, limit+2, ttl)
						}
					}
				}
			})
		}
	}
}

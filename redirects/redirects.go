// Package redirects counts the replies by which Redis Cluster turns a
// command away: the MOVED and ASK redirections, which the clients follow
// without telling the caller, and the TRYAGAIN and CLUSTERDOWN errors.
//
// The counts are the servers' own. Take reads INFO errorstats (Redis 6.2 and
// later) on every node of the cluster, masters and replicas, and Delta
// subtracts two snapshots. A node counts every client's replies, so on a
// cluster that others use too the counts include theirs.
package redirects

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/serverinfo"
)

// Kinds are the reply kinds counted, in the order reports list them
// (results.ClusterErrorKinds).
var Kinds = results.ClusterErrorKinds

// MinRedis is the first Redis version with INFO errorstats.
const MinRedis = "6.2.0"

// Snapshot holds each node's error counters at one moment: by host:port,
// then by kind.
type Snapshot map[string]map[string]int64

// Take reads INFO errorstats on every node that c knows of.
func Take(ctx context.Context, c *redis.ClusterClient) (Snapshot, error) {
	var mu sync.Mutex
	s := make(Snapshot)
	err := c.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
		text, err := node.Info(ctx, "errorstats").Result()
		if err != nil {
			return fmt.Errorf("%s: info errorstats: %w", node.Options().Addr, err)
		}
		counts, err := Parse(text)
		if err != nil {
			return fmt.Errorf("%s: %w", node.Options().Addr, err)
		}
		mu.Lock()
		defer mu.Unlock()
		s[node.Options().Addr] = counts
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Parse reads the counts of Kinds from the text of INFO errorstats, whose
// lines read "errorstat_MOVED:count=12". A kind the server has not sent yet
// has no line, and counts 0.
func Parse(text string) (map[string]int64, error) {
	counts := make(map[string]int64, len(Kinds))
	for _, k := range Kinds {
		counts[k] = 0
	}
	for k, v := range serverinfo.Parse(text) {
		kind, ok := strings.CutPrefix(k, "errorstat_")
		if _, counted := counts[kind]; !ok || !counted {
			continue
		}
		n, ok := strings.CutPrefix(v, "count=")
		if ok {
			n, _, _ = strings.Cut(n, ",")
		}
		count, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("info errorstats: %s: unexpected value %q", k, v)
		}
		counts[kind] = count
	}
	return counts, nil
}

// Delta is what the nodes sent between two snapshots, by kind, summed over
// the nodes. A node missing from before (one that joined) counts from zero,
// and so does a node whose counter went down (one that restarted, which
// resets INFO errorstats): its count since the restart is what is known.
func Delta(before, after Snapshot) map[string]int64 {
	d := make(map[string]int64, len(Kinds))
	for _, k := range Kinds {
		d[k] = 0
	}
	for addr, a := range after {
		b := before[addr]
		for _, k := range Kinds {
			if n := a[k] - b[k]; n >= 0 {
				d[k] += n
			} else {
				d[k] += a[k]
			}
		}
	}
	return d
}

package redistest

import (
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rlbench/rlbench/redisserver"
)

// StartCluster starts a private Redis Cluster of masters masters with
// replicas replicas each for tb, and closes it in tb.Cleanup. The binary is
// chosen, and a missing one fails the test, as in Start. A cluster takes
// about 2 seconds to form: start one per test that changes its topology
// (Failover, Restart), and run such tests in parallel.
func StartCluster(tb testing.TB, masters, replicas int) *redisserver.Cluster {
	tb.Helper()
	binary := os.Getenv(BinaryEnv)
	c, err := redisserver.StartCluster(tb.Context(), redisserver.ClusterOptions{
		Masters:  masters,
		Replicas: replicas,
		Binary:   binary,
	})
	started(tb, err, c.Close)
	return c
}

// ClusterClient returns a go-redis ClusterClient to c, seeded with every
// node's address and closed in tb.Cleanup, for assertions made
// independently of the code under test. It follows MOVED redirections, so it
// keeps working across c.Failover.
func ClusterClient(tb testing.TB, c *redisserver.Cluster) *redis.ClusterClient {
	tb.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                    c.Addrs(),
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	tb.Cleanup(func() {
		if err := rdb.Close(); err != nil {
			tb.Errorf("redistest: close cluster client: %v", err)
		}
	})
	return rdb
}

package topology

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/connection"
)

// Masters opens spec, logged in with spec.Login, and returns an admin connection to each of its masters, ordered by address: the server
// of --addr or --url, every master of a Redis Cluster (replicas skipped),
// the master that Sentinel names now (a connection to that server, which
// does not follow a later failover). closeFn closes them, and stops what
// Masters started.
//
// It runs none of a load run's checks: it writes nothing and asks nothing
// of the server beyond the login check (AUTH, SELECT, PING) and, on a
// cluster, its slot map, so that a user allowed only to read keys can use
// it (rlbench audit). A target that cannot be reached is a *UsageError.
func Masters(ctx context.Context, spec Spec) (masters []*redis.Client, closeFn func(), err error) {
	t, err := reachTopology(ctx, spec, spec.Login)
	if err != nil {
		return nil, nil, err
	}
	if spec.IsSentinel() {
		return sentinelMaster(t)
	}
	if masters, err = t.Nodes(ctx); err != nil {
		t.Close()
		return nil, nil, usage(t.field(), fmt.Errorf("%s: %w", spec.Label, err))
	}
	return masters, t.Close, nil
}

// sentinelMaster is Masters of a Sentinel target: a connection straight to
// the master the sentinels named when t was opened, not the admin one that
// follows failovers. Its address names it (a failover client's is
// "FailoverClient"), and a SCAN cursor belongs to one server.
func sentinelMaster(t *Target) ([]*redis.Client, func(), error) {
	m, err := connection.Admin{Settings: t.Login}.Client(t.Server.Addr)
	if err != nil {
		t.Close()
		return nil, nil, usage("Connection", fmt.Errorf("%s: %w", t.Spec.Label, err))
	}
	return []*redis.Client{m}, func() { m.Close(); t.Close() }, nil
}

package rlbench

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/connection"
)

// Masters opens the one target cfg names (cfg.Targets[0], or cfg.Addr; a
// private server when neither is given) with its login, and returns an
// admin connection to each of its masters, ordered by address: the server
// of --addr or --url, every master of a Redis Cluster (replicas skipped),
// the master that Sentinel names now (a connection to that server, which
// does not follow a later failover). closeFn closes them, and stops what
// Masters started.
//
// It runs none of a load run's checks: it writes nothing and asks nothing
// of the server beyond the login check (AUTH, SELECT, PING) and, on a
// cluster, its slot map, so that a user allowed only to read keys can use
// it (rlbench audit). More than one target is a *UsageError, as is a
// target that cannot be reached.
func Masters(ctx context.Context, cfg Config) (masters []*redis.Client, closeFn func(), err error) {
	n := len(cfg.Targets)
	if cfg.Addr != "" || cfg.RedisServer != "" {
		n++
	}
	if n > 1 {
		return nil, nil, usage("Targets.Addr", fmt.Errorf("%d targets given; give one: --addr, --url, --cluster and --sentinel are exclusive, each given once", n))
	}
	cfg = cfg.withDefaults()
	spec := cfg.Targets[0]
	if err := cfg.validateTarget(spec); err != nil {
		return nil, nil, err
	}
	if db := cfg.login(spec).DB; db < 0 {
		return nil, nil, usage("DB", fmt.Errorf("db must be >= 0, got %d", db))
	}
	t, err := reachTopology(ctx, cfg, spec)
	if err != nil {
		return nil, nil, err
	}
	if spec.isSentinel() {
		return sentinelMaster(t)
	}
	if masters, err = t.nodes(ctx); err != nil {
		t.close()
		return nil, nil, usage(t.field(), fmt.Errorf("%s: %w", spec.Label, err))
	}
	return masters, t.close, nil
}

// sentinelMaster is Masters of a Sentinel target: a connection straight to
// the master the sentinels named when t was opened, not the admin one that
// follows failovers. Its address names it (a failover client's is
// "FailoverClient"), and a SCAN cursor belongs to one server.
func sentinelMaster(t *target) ([]*redis.Client, func(), error) {
	m, err := connection.Admin{Settings: t.login}.Client(t.server.Addr)
	if err != nil {
		t.close()
		return nil, nil, usage("Connection", fmt.Errorf("%s: %w", t.spec.Label, err))
	}
	return []*redis.Client{m}, func() { m.Close(); t.close() }, nil
}

// Preflight runs, on every target cfg names, the checks that Run makes
// before its first write (the login; the prefix holds no key; the target
// is a master and takes writes; the server knows every command of cfg's
// strategies and the user may send them; maxclients fits the workers),
// for a command that writes under cfg's prefix on its own (rlbench
// verify), so that a replica, a server at maxmemory or a read-only user is
// bad input naming the target rather than a failure of every check.
// Errors are Run's *UsageError. The run's claim on the prefix is held
// until release is called: the caller calls it when it has done writing.
func Preflight(ctx context.Context, cfg Config) (release func(), err error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var opened []*target
	release = func() {
		for _, t := range opened {
			t.close()
		}
	}
	for _, spec := range cfg.Targets {
		t, err := openTarget(ctx, cfg, spec)
		if err != nil {
			release()
			return nil, err
		}
		opened = append(opened, t)
	}
	return release, nil
}

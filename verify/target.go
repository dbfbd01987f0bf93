package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/target"
)

// opened is the target of a verify run, opened through target.Open: what
// the rows connect to and read through.
type opened struct {
	server Server
	// describe says what the target is, for the first log line.
	describe string
	// private is the private single server, which the server-wide checks
	// restart and flush; nil for any other target.
	private *redisserver.Server
	// sentinel is the private Sentinel set-up with replicas, its nodes
	// behind relays, which the split-brain check cuts; nil for any other.
	sentinel *redisserver.Sentinel
	// observer makes the checks' own reads and seeds, through go-redis:
	// a cluster client on a cluster, one that follows the master that
	// Sentinel names.
	observer redis.UniversalClient
	// nodes are the masters, which the checks' SCANs walk.
	nodes []*redis.Client
	// endpoint is where and how the clients under test connect, but for
	// the TLS configuration, which each client makes of its own.
	endpoint clients.Options
	tlsFiles *connection.TLSFiles
	// target is the target opened, which the user strategies' watchdogs
	// watch (watchUserCode).
	target *target.Target
	close  func()
}

// spec is the target cfg names, logged in to with cfg's login: Target
// (with its own Login, if not the zero one), or the server at Addr, the
// caller's Server, a private one of RedisServer.
func (c Config) spec() target.Spec {
	spec := target.Spec{Addr: c.Addr, RedisServer: c.RedisServer, Login: c.login()}
	switch {
	case c.Target != nil:
		spec = c.targetSpec()
	case c.Server != nil:
		spec = target.Spec{Addr: c.Server.Addr(), Login: c.login()}
	}
	// The split-brain check cuts a private set-up's master off through
	// the relays in front of its nodes (the clients dial them directly),
	// and waits, each row, for the old master to rejoin: quick periods
	// make that some 3 s after the heal, not 10 to 20.
	spec.Relays = spec.ManagedSentinel != ""
	spec.QuickRejoin = spec.Relays
	return target.Label([]target.Spec{spec})[0]
}

// openTarget finds or starts the target of cfg (target.Open), and runs the
// load run's pre-flight on an existing one. A failure is bad input: of
// Addr when nothing answers there, of the login (a "Connection" error
// that names its flag) when the server refuses the TLS handshake, the user
// or the password, of RedisServer when the private server does not start.
func openTarget(ctx context.Context, cfg Config) (*opened, error) {
	spec := cfg.spec()
	if spec.Addr != "" && cfg.Server == nil {
		if err := checkAddr(ctx, cfg); err != nil {
			return nil, err
		}
	}
	t, err := target.Open(ctx, spec)
	if err != nil {
		return nil, fieldOf(err)
	}
	on := &opened{close: t.Close, private: t.PrivateServer(), describe: t.Describe(), target: t}
	if cfg.Server != nil {
		on.private = cfg.Server
	}
	if !spec.Private() && cfg.Server == nil {
		if err := preflight(ctx, cfg, t); err != nil {
			t.Close()
			return nil, err
		}
	}
	if err := on.connect(ctx, t); err != nil {
		on.close()
		return nil, err
	}
	on.server = serverOf(t.Server.Addr, t.Info, on.private != nil)
	on.server.Cluster = spec.IsCluster()
	if spec.ManagedSentinel != "" && spec.ManagedSentinel != "0" {
		on.sentinel = t.ManagedSentinel()
		on.server.Sentinel = on.sentinel != nil
	}
	if !spec.IsCluster() && !spec.IsSentinel() {
		on.describe = describeServer(on.server)
	}
	return on, nil
}

// connect makes on's observer and reads t's masters.
func (on *opened) connect(ctx context.Context, t *target.Target) error {
	observer, err := t.NewAdmin(connection.Admin{PoolSize: 32})
	if err != nil {
		return usage("TLS", err) // target.Open has read the files already
	}
	closeTarget := on.close
	on.observer, on.close = observer, func() { observer.Close(); closeTarget() }
	if on.nodes, err = t.Nodes(ctx); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	on.endpoint = t.ClientOptions(clients.Options{})
	on.endpoint.TLS, on.tlsFiles = nil, t.Login.TLS
	return nil
}

// checkAddr logs in to the server at cfg's address as the clients will
// (connection.Check: TLS, AUTH, SELECT, PING): an address where nothing
// answers is bad input of Addr.
func checkAddr(ctx context.Context, cfg Config) error {
	addr := cfg.spec().Addr
	if err := connection.Check(ctx, addr, cfg.spec().Login); err != nil {
		if errors.Is(err, connection.ErrCheckInterrupted) {
			return err // not bad input
		}
		if ce, ok := errors.AsType[*connection.CheckError](err); ok && errors.Is(err, connection.ErrUnreachable) {
			return usage("Addr", fmt.Errorf("%s: %w: %s; %s", ce.Addr, ce.Kind, ce.Said, ce.Hint))
		}
		return usage("Connection", err) // it names the flag
	}
	return nil
}

// preflight runs the load run's pre-flight (target.Preflight) on t before
// any check writes: a replica, a server at maxmemory or a user who may not
// write is bad input naming the server, not a matrix of FAIL cells that
// blames the strategies. It checks the strategies of the plan that the
// server's version runs on every client (plan.Plan.Runnable); the others
// are unsupported cells, or are checked as they run. The claim on the
// prefix is released when t closes.
func preflight(ctx context.Context, cfg Config, t *target.Target) error {
	return fieldOf(t.Preflight(ctx, target.Checks{
		Prefix: cfg.Prefix, RunID: audit.NewRunID(), Strategies: cfg.plan.Runnable(t.Info.RedisVersion), Registry: cfg.Registry,
		Clients: cfg.Clients, Workers: cfg.Workers,
	}))
}

// fieldOf is err with the load run's field, if it is a *UsageError, as
// verify.Config names it.
func fieldOf(err error) error {
	uerr, ok := errors.AsType[*UsageError](err)
	if !ok {
		return err
	}
	field, known := map[string]string{
		"Targets.Addr": "Addr", "Targets.URL": "Addr", "Targets.RedisServer": "RedisServer",
		"Workload.Workers": "Workers", "Workload.Prefix": "Prefix",
		"Targets.Login.DB": "DB", "Targets.Login.Username": "Username",
	}[uerr.Field]
	if !known {
		field = uerr.Field
	}
	return usage(field, uerr.Err)
}

package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/topology"
)

// spec is cfg's Target, labelled. The split-brain check cuts a private
// set-up's master off through the relays in front of its nodes (the
// clients dial them directly), and waits, each row, for the old master to
// rejoin: quick periods make that some 3 s after the heal, not 10 to 20.
func (c Config) spec() topology.Spec {
	spec := c.Target
	spec.Relays = spec.ManagedSentinel != ""
	spec.QuickRejoin = spec.Relays
	return topology.Label([]topology.Spec{spec})[0]
}

// openTarget opens the target of cfg (topology.Open), and runs the load
// run's pre-flight on an existing one. A failure is bad input: of the
// address when nothing answers there, of the login (a "Connection" error
// that names its flag) when the server refuses the TLS handshake, the user
// or the password, of RedisServer when the private server does not start.
func openTarget(ctx context.Context, cfg Config) (*topology.Target, error) {
	spec := cfg.spec()
	if spec.Addr != "" {
		if err := checkAddr(ctx, spec); err != nil {
			return nil, err
		}
	}
	t, err := topology.Open(ctx, spec)
	if err != nil {
		return nil, fieldOf(err)
	}
	if !spec.Private() {
		if err := preflight(ctx, cfg, t); err != nil {
			t.Close()
			return nil, err
		}
	}
	return t, nil
}

// serverOf describes t in the matrix.
func serverOf(t *topology.Target) Server {
	return Server{
		Addr: t.Server.Addr, Name: t.Info.Name, Version: t.Info.Version, RedisVersion: t.Info.RedisVersion,
		Managed: t.PrivateServer() != nil, Cluster: t.Spec.IsCluster(),
		Sentinel: t.Spec.ManagedSentinel != "0" && t.ManagedSentinel() != nil,
	}
}

// checkAddr logs in to the server at spec's address as the clients will
// (connection.Check: TLS, AUTH, SELECT, PING): an address where nothing
// answers is bad input of Target.Addr.
func checkAddr(ctx context.Context, spec topology.Spec) error {
	if err := connection.Check(ctx, spec.Addr, spec.Login); err != nil {
		if errors.Is(err, connection.ErrCheckInterrupted) {
			return err // not bad input
		}
		if ce, ok := errors.AsType[*connection.CheckError](err); ok && errors.Is(err, connection.ErrUnreachable) {
			return usage("Target.Addr", fmt.Errorf("%s: %w: %s; %s", ce.Addr, ce.Kind, ce.Said, ce.Hint))
		}
		return usage("Connection", err) // it names the flag
	}
	return nil
}

// preflight runs the load run's pre-flight (topology.Preflight) on t before
// any check writes: a replica, a server at maxmemory or a user who may not
// write is bad input naming the server, not a matrix of FAIL cells that
// blames the strategies. It checks the strategies of the plan that the
// server's version runs on every client (plan.Plan.Runnable); the others
// are unsupported cells, or are checked as they run. The claim on the
// prefix is released when t closes.
func preflight(ctx context.Context, cfg Config, t *topology.Target) error {
	return fieldOf(t.Preflight(ctx, topology.Checks{
		Prefix: cfg.Prefix, RunID: audit.NewRunID(), Strategies: cfg.plan.Runnable(t.Info.RedisVersion), Registry: cfg.Registry,
		Clients: cfg.Clients, Workers: cfg.Workers,
	}))
}

// fieldOf is err with the load run's field, if it is a *UsageError, as
// verify.Config names it: a target's field (Targets.X) is Target.X, and a
// URL's is Target.Addr.
func fieldOf(err error) error {
	uerr, ok := errors.AsType[*UsageError](err)
	if !ok {
		return err
	}
	field, known := map[string]string{
		"Targets.URL": "Target.Addr", "Workload.Workers": "Workers", "Workload.Prefix": "Prefix",
	}[uerr.Field]
	switch {
	case known:
	case strings.HasPrefix(uerr.Field, "Targets."):
		field = "Target." + strings.TrimPrefix(uerr.Field, "Targets.")
	default:
		field = uerr.Field
	}
	return usage(field, uerr.Err)
}

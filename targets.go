package rlbench

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/plan"
	"github.com/rlbench/rlbench/topology"
)

// checks are what c asks of target i of plan p before its first write;
// its pre-flight takes the plan's second step there (plan.Plan.LeaveOut).
func (c Config) checks(p *plan.Plan, i int) topology.Checks {
	kinds := make([]string, len(c.Faults))
	for i, f := range c.Faults {
		kinds[i] = f.Kind
	}
	return topology.Checks{
		Prefix: c.Workload.Prefix, RunID: c.RunID, Strategies: p.Strategies, Registry: p.Registry,
		LeaveOut: func(ctx context.Context, t *topology.Target, nodes []*redis.Client, probeKey string) ([]string, error) {
			return p.LeaveOut(ctx, i, t, nodes, probeKey)
		},
		Clients: p.Clients, Workers: c.Workload.Workers, Faults: kinds,
	}
}

// openTarget opens target i of cfg: starts or reaches its servers and
// checks that every cell of plan p can run there, before anything is
// written.
func openTarget(ctx context.Context, cfg Config, p *plan.Plan, i int) (*topology.Target, error) {
	spec := cfg.privateSpec(cfg.Targets[i])
	t, err := topology.Open(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := t.Preflight(ctx, cfg.checks(p, i)); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Masters opens the one target cfg names (cfg.Targets[0]; a private
// server when none is given) with its login, and returns an admin
// connection to each of its masters (topology.Masters); closeFn closes them,
// and stops what Masters started. More than one target is a *UsageError,
// as is a target that cannot be reached.
func Masters(ctx context.Context, cfg Config) (masters []*redis.Client, closeFn func(), err error) {
	if n := len(cfg.Targets); n > 1 {
		return nil, nil, usage("Targets.Addr", fmt.Errorf("%d targets given; give one: --addr, --url, --cluster and --sentinel are exclusive, each given once", n))
	}
	cfg = cfg.withDefaults()
	spec := cfg.Targets[0]
	if err := cfg.validateTarget(spec); err != nil {
		return nil, nil, err
	}
	if db := spec.Login.DB; db < 0 {
		return nil, nil, usage("Targets.Login.DB", fmt.Errorf("db must be >= 0, got %d", db))
	}
	spec = cfg.privateSpec(spec)
	return topology.Masters(ctx, spec)
}

// CleanupOptions say how far Cleanup goes (topology.CleanupOptions).
type CleanupOptions = topology.CleanupOptions

// CleanupReport is what Cleanup found and did (topology.CleanupReport).
type CleanupReport = topology.CleanupReport

// Cleanup deletes every key under cfg.Workload.Prefix on every master of
// every existing target of cfg (topology.Cleanup), once each target's spec
// is checked.
func Cleanup(ctx context.Context, cfg Config, opts CleanupOptions) (CleanupReport, error) {
	prefix := cfg.Workload.Prefix
	if prefix != "" {
		cfg = cfg.withDefaults()
		for _, spec := range cfg.Targets {
			if spec.Private() {
				break // refused by topology.Cleanup, naming it
			}
			if err := cfg.validateTarget(spec); err != nil {
				return CleanupReport{Prefix: prefix, Left: -1}, err
			}
		}
	}
	return topology.Cleanup(ctx, cfg.Targets, prefix, opts)
}

// The limits and errors of Cleanup (topology.Cleanup).
const (
	CleanupConfirmAbove = topology.CleanupConfirmAbove
	CleanupSample       = topology.CleanupSample
)

// The errors of Cleanup (topology.Cleanup).
var (
	ErrCleanupUnconfirmed = topology.ErrCleanupUnconfirmed
	ErrCleanupInterrupted = topology.ErrCleanupInterrupted
)

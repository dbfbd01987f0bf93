package rlbench

import (
	"context"
	"fmt"

	"github.com/rlbench/rlbench/workload"
)

// Cleanup deletes every key under cfg.Workload.Prefix on every master of
// every existing target of cfg, with no load and no audit: the keys of a
// run that was killed before it could delete them (with SIGKILL, or a
// second interrupt). The prefix must be given; private targets hold
// nothing to clean. It returns the number of keys deleted.
func Cleanup(ctx context.Context, cfg Config) (int64, error) {
	if cfg.Workload.Prefix == "" {
		return 0, usage("Workload.Prefix", fmt.Errorf("%w: give the prefix of the keys to delete", workload.ErrEmptyPrefix))
	}
	cfg = cfg.withDefaults()
	var deleted int64
	for _, spec := range cfg.Targets {
		if spec.private() {
			return deleted, usage("Targets.Addr", fmt.Errorf("%s: a private server holds nothing to clean: give the target of the run (--addr or --cluster)", spec.Label))
		}
		if err := cfg.validateTarget(spec); err != nil {
			return deleted, err
		}
		t, err := openTopology(ctx, cfg, spec)
		if err != nil {
			return deleted, err
		}
		rep, err := t.scanKeys(ctx, cfg.Workload.Prefix, 0, true, false)
		deleted += rep.Deleted
		t.close()
		if err != nil {
			return deleted, fmt.Errorf("%s: %w", spec.Label, err)
		}
	}
	return deleted, nil
}

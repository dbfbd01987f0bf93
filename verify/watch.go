package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/rlbench/rlbench/topology"
	"github.com/rlbench/rlbench/usercode"
)

// watches are the --script-timeout watchdogs of the user strategies Run
// checks (usercode.Watch, the load run's), one per strategy: a script or
// function of it that blocks the server longer than Config.ScriptTimeout
// gets SCRIPT KILL (FUNCTION KILL), the rest of its rows' checks stop,
// and Run fails saying so; at the end Run waits until none of their code
// runs, so that verify never leaves a server BUSY.
type watches struct {
	names  []string
	ctxs   map[string]context.Context // the rows' of each strategy
	guards map[string]*usercode.Guard
}

// watchUserCode starts the watchdog of each user strategy of cfg on t's
// masters (none for a built-in strategy or a sequence).
func watchUserCode(ctx context.Context, cfg Config, t *topology.Target) (*watches, error) {
	w := &watches{ctxs: map[string]context.Context{}, guards: map[string]*usercode.Guard{}}
	for _, name := range cfg.Strategies {
		info, _ := cfg.plan.Info(name)
		wctx, g, err := usercode.Watch(ctx, usercode.Cell{Strategy: name, Info: info, Registry: cfg.Registry, Label: name, Prefix: cfg.Prefix,
			RunPrefix: cfg.Prefix, ScriptTimeout: cfg.ScriptTimeout, Target: t})
		if err != nil {
			return nil, errors.Join(fmt.Errorf("verify: %s: %w", name, err), w.settle())
		}
		if g != nil {
			w.names = append(w.names, name)
			w.ctxs[name], w.guards[name] = wctx, g
		}
	}
	return w, nil
}

// of returns the context the rows of strategy name run under: ctx, or
// the one its watchdog cancels.
func (w *watches) of(ctx context.Context, name string) context.Context {
	if c, ok := w.ctxs[name]; ok {
		return c
	}
	return ctx
}

// settle waits until no script of the watched strategies runs on the
// server (a watchdog kills one that runs too long, even after an
// interrupt), stops the watchdogs, and returns their errors.
func (w *watches) settle() error {
	var errs []error
	for _, name := range w.names {
		errs = append(errs, w.guards[name].Settle(context.Background())) // it has no user to delete
	}
	return errors.Join(errs...)
}

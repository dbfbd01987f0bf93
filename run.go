// Package rlbench runs rate-limiter counter strategies under load against a
// real Redis and reports latency, throughput, admissions and the immortal
// keys (counters left with no TTL) each strategy leaves behind.
//
// The command in cmd/rlbench is a thin layer over Run: it parses flags into
// a Config and prints the Report. docs/ARCHITECTURE.md draws the data path.
package rlbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/failover"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/plan"
	"github.com/rlbench/rlbench/probe"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/topology"
)

// Options says where Run writes while it works. Its zero value is silent.
type Options struct {
	// Log receives the header (which server, which version) and one line
	// when each cell starts; nil discards them.
	Log io.Writer
	// Progress receives a live one-line display, rewritten each second with
	// a carriage return; nil means none.
	Progress io.Writer
	// Abort, once done, stops what Run still does after ctx is done: the
	// audit and the clean-up of the cell that was interrupted (a second
	// interrupt). Run then says which keys it left. nil means never.
	Abort context.Context
	// Metrics receives each cell's live figures while it measures
	// (rlbench --metrics-addr: metrics.Exporter); nil means none.
	Metrics LiveMetrics
}

// LiveMetrics is what Run tells while each cell's measured load runs.
type LiveMetrics interface {
	// Probe returns the probe (package probe) of a cell whose measured
	// load is about to start: its workers record into rec; immortal, when
	// not nil (AuditEvery), gives the periodic audit's latest count (nil
	// before its first). The cell starts it before the load's first
	// decision, tells it each injected fault as it ends when it is a
	// probe.FaultObserver, and stops it once the load has ended and rec
	// holds the figures of the cell's results.Run.
	Probe(target, strategy, client string, rec *results.Recorder, immortal func() *int64) probe.Probe
}

// Run validates cfg, opens every target and checks that it can run every
// cell, then runs the cells in order (targets, then strategies, then
// clients) and appends each one's results.Run to the report: the load, the
// audit of the cell's keys, and (unless KeepKeys) their deletion.
//
// Bad input, an unreachable server and a cell the server cannot run are
// *UsageError, returned before anything is written to Redis.
func Run(ctx context.Context, cfg Config, opts Options) (*results.Report, error) {
	cfg, p, err := cfg.withDefaults().plan()
	if err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}

	// Every target is opened and checked before the first write: bad input
	// on any of them is found before anything touches Redis.
	var targets []*topology.Target
	defer func() {
		for _, t := range targets {
			t.Close()
		}
	}()
	for i := range cfg.Targets {
		t, err := openTarget(ctx, cfg, p, i)
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
	}

	rep := &results.Report{
		Tool:    "rlbench",
		Started: time.Now().UTC(),
		Server:  targets[0].Server,
		Config:  cfg,
	}
	for i, t := range targets {
		p.LogHeader(log, i, t)
	}
	fmt.Fprintf(log, "rlbench: run %s, prefix %q (claimed: %s), %d clients, %d keys (%s), limit %d per %ds window\n",
		cfg.RunID, cfg.Workload.Prefix, keyspace.ClaimKey(cfg.Workload.Prefix), cfg.Workload.Workers, cfg.Workload.Keys, cfg.Workload.KeyDist, cfg.Limit, cfg.Window)

	// A target whose claim on the prefix is lost stops the load at once
	// (claimLost); the clean-up after it, under abort, deletes nothing.
	ctx, loseClaim := context.WithCancelCause(ctx)
	defer loseClaim(nil)
	for _, t := range targets {
		lost := t.ClaimLost()
		defer context.AfterFunc(lost, func() { loseClaim(fmt.Errorf("%s: %w", t.Spec.Label, context.Cause(lost))) })()
	}
	abort, cancel := topology.AbortContext(ctx, opts.Abort)
	defer cancel()
	var failed []error
	for i, t := range targets {
		for _, pc := range p.Cells(i) {
			if unsupported, ok := errors.AsType[*plan.ClientUnsupported](pc.LeftOut); ok {
				fmt.Fprintf(log, "rlbench: skipping %s/%s: %v\n", pc.Info.Name, pc.Client, unsupported)
			}
			if pc.LeftOut != nil {
				continue
			}
			c, err := newCell(cfg, t, p.Registry, pc)
			if err != nil {
				return rep, err
			}
			c.live = opts.Metrics
			run, err := c.run(ctx, log, opts.Progress, abort)
			if stop, err := settle(ctx, rep, c, run, err, &failed); stop {
				return rep, err
			}
		}
	}
	return rep, errors.Join(failed...)
}

// settle adds cell c's run to rep, and says whether the run stops there,
// with its error: an interrupt or c's failure (err) stops it; a cell that
// measured nothing is added to failed, and the other cells still run.
func settle(ctx context.Context, rep *results.Report, c *cell, run results.Run, err error, failed *[]error) (bool, error) {
	if run.Strategy != "" {
		// Its figures explain a failure: keep them.
		rep.Runs = append(rep.Runs, run)
	}
	switch {
	case errors.Is(context.Cause(ctx), topology.ErrClaimLost):
		if !errors.Is(err, topology.ErrClaimLost) {
			// Lost on another target: c, on a target whose claim the
			// run holds, was audited and cleaned up as usual.
			err = errors.Join(err, fmt.Errorf("%w; the run stopped after %s, and the cells after it did not run", context.Cause(ctx), c.label))
		}
		rep.Failed, rep.StoppedBy = true, err.Error()
		return true, err
	case ctx.Err() != nil:
		rep.Interrupted = true // the cells after this one did not run
		if err == nil {
			err = ctx.Err() // else it may name the keys left (a second interrupt)
		}
		return true, err
	case errors.Is(err, failover.ErrServerRestarted), errors.Is(err, failover.ErrCountersWiped):
		// The cell was audited and cleaned up: the later cells still run.
		*failed = append(*failed, err)
		rep.Failed = true
		return false, nil
	case err != nil:
		return true, errors.Join(append(*failed, stopped(rep, c, err))...)
	}
	if err := measuredNothing(c.label, run); err != nil {
		*failed = append(*failed, err)
		rep.Failed = true
	}
	return false, nil
}

// ErrStopped is returned, wrapped with the failure, when a cell's failure
// stopped the run before its later cells: one that could not connect, be
// measured or be audited.
var ErrStopped = errors.New("the run stopped there, and the cells after it did not run")

// stopped marks rep as stopped by err, the failure of cell c, and returns
// the run's error: err, that the later cells did not run, and the keys
// that may remain, with the clean-up command.
func stopped(rep *results.Report, c *cell, err error) error {
	rep.Failed, rep.StoppedBy = true, err.Error()
	return &stoppedError{err: err, keysLeft: c.keysLeft()}
}

// stoppedError is the error of a run that a cell's failure stopped: one
// error, whose message is the failure, ErrStopped and the keys left, if
// any (a
// fmt.Errorf of two %w would be split in two by errors.Join's readers,
// losing the keys).
type stoppedError struct {
	err      error
	keysLeft string
}

func (e *stoppedError) Error() string {
	if e.keysLeft == "" {
		return fmt.Sprintf("%v: %v", e.err, ErrStopped)
	}
	return fmt.Sprintf("%v: %v; %s", e.err, ErrStopped, e.keysLeft)
}

func (e *stoppedError) Unwrap() error { return e.err }

// Is makes errors.Is(err, ErrStopped) true.
func (e *stoppedError) Is(target error) bool { return target == ErrStopped }

// ErrNoDecision is returned, wrapped, when a cell made no decision at all
// (a --duration too short for one): it measured no load, and draws no
// saturation verdict. The other cells still run.
var ErrNoDecision = errors.New("no decision was made")

// measuredNothing says why run measured nothing: it made no decision, or
// every one failed (allFailed); nil otherwise.
func measuredNothing(label string, run results.Run) error {
	if run.Decisions == 0 {
		load := time.Duration(run.DurationS * float64(time.Second)).Round(time.Microsecond)
		return fmt.Errorf("%s: %w in %s of load: its figures measure nothing; give a longer --duration", label, ErrNoDecision, load)
	}
	return allFailed(label, run)
}

// ErrAllFailed is returned, wrapped, when every decision of a cell failed:
// its figures measure the errors, not a limiter. The other cells still run.
var ErrAllFailed = errors.New("every decision failed")

// allFailed says why run measured nothing: every decision failed, other
// than the crashes that --crash-rate simulates; nil otherwise.
func allFailed(label string, run results.Run) error {
	crashed := run.ErrorKinds[results.KindCrashed]
	if run.Decisions == crashed || run.Errors != run.Decisions {
		return nil
	}
	return fmt.Errorf("%s: %w (%s): the target refused the cell's commands", label, ErrAllFailed, results.FormatErrorKinds(run.ErrorKinds, ", "))
}

// configFields is Config without its MarshalJSON.
type configFields Config

// MarshalJSON writes c as a report holds it (results.Report.Config): its
// fields, then the login of its first target (the run's first, as
// withDefaults and the command line order them) as "user" (omitted for the
// default user) and "db", the keys the single-server fields had before
// each target had a login of its own (compare leaves them out of the
// settings it compares). The password and the TLS files are never
// written.
func (c Config) MarshalJSON() ([]byte, error) {
	var login connection.Settings
	if len(c.Targets) > 0 {
		login = c.Targets[0].Login
	}
	// Without HTML escapes: the report's encoder applies its own.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(struct {
		configFields
		User string `json:"user,omitempty"`
		DB   int    `json:"db"`
	}{configFields(c), login.Username, login.DB})
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}

// Package samplers runs what a cell samples while its load runs: the
// progress line and the per-second series (Monitor), and the periodic
// audit of its keys (PeriodicAudit).
package samplers

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/target"
)

// Monitor samples rec once a second into a time series (counts, p50 and
// p99, and the latest immortal count from immortal, when not nil) and,
// when w is not nil, rewrites a one-line progress display on w. The
// returned function stops it, ends the line, and returns the series, whose
// last entry covers the part-second since the last tick.
func Monitor(w io.Writer, label string, rec *results.Recorder, immortal func() *int64) func() []results.Second {
	done := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	var series []results.Second
	var last results.Totals
	var interval results.Interval
	sample := func(now time.Time) results.Totals {
		t, h := rec.Snapshot()
		sec := results.Second{
			T:         now.Sub(start).Seconds(),
			Decisions: t.Decisions - last.Decisions,
			Allowed:   t.Allowed - last.Allowed,
			Rejected:  t.Rejected - last.Rejected,
			Errors:    t.Errors - last.Errors,
		}
		sec.P50US, sec.P99US = interval.Next(h)
		if immortal != nil {
			sec.Immortal = immortal()
		}
		series = append(series, sec)
		return t
	}
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		lastAt := start
		for {
			select {
			case <-done:
				if t := rec.Totals(); t.Decisions > last.Decisions {
					sample(time.Now())
				}
				if w != nil {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case now := <-tick.C:
				t := sample(now)
				if w != nil {
					rate := float64(t.Decisions-last.Decisions) / now.Sub(lastAt).Seconds()
					fmt.Fprint(w, "\r\033[K"+results.Progress(label, now.Sub(start), t, rate))
				}
				last, lastAt = t, now
			}
		}
	}()
	return func() []results.Second { close(done); <-finished; return series }
}

// PeriodicAudit audits prefix every `every` until the returned stop
// function is called, and returns a function that gives the latest count of
// immortal keys (nil before the first audit). every <= 0 means none: both
// functions are then no-ops and the second is nil.
func PeriodicAudit(ctx context.Context, t *target.Target, prefix string, window int64, every time.Duration, fields bool) (latest func() *int64, stop func()) {
	if every <= 0 {
		return nil, func() {}
	}
	var n atomic.Int64
	n.Store(-1)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if res, _, err := t.Audit(ctx, prefix, window, fields); err == nil {
					n.Store(res.Immortal)
				}
			}
		}
	}()
	latest = func() *int64 {
		if v := n.Load(); v >= 0 {
			return &v
		}
		return nil
	}
	return latest, func() { cancel(); <-done }
}

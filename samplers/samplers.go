// Package samplers runs what a cell samples while its load runs, each one
// of the cell's probes (package probe): the progress line and the
// per-second series (Monitor), and the periodic audit of its keys
// (PeriodicAudit).
package samplers

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/probe"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/topology"
)

// Monitor samples a recorder once a second into a time series (counts, p50
// and p99, and the latest immortal count, when it has a source) and, when
// it has a writer, rewrites a one-line progress display on it. Its Report
// fills the run's per-second series, whose last entry covers the
// part-second since the last tick.
type Monitor struct {
	w        io.Writer
	label    string
	rec      *results.Recorder
	immortal func() *int64
	labels   func([]results.Second)
	done     chan struct{}
	finished chan struct{}
	series   []results.Second
}

// NewMonitor returns the Monitor of rec: w, when not nil, receives the
// progress line of the cell named label; immortal, when not nil, gives the
// latest immortal count (PeriodicAudit.Latest); labels, when not nil,
// labels the series once it is complete (workload.Config.LabelSeries).
func NewMonitor(w io.Writer, label string, rec *results.Recorder, immortal func() *int64, labels func([]results.Second)) *Monitor {
	return &Monitor{w: w, label: label, rec: rec, immortal: immortal, labels: labels}
}

// Start starts the sampling.
func (m *Monitor) Start(context.Context) {
	m.done, m.finished = make(chan struct{}), make(chan struct{})
	start := time.Now()
	var last results.Totals
	var interval results.Interval
	sample := func(now time.Time) results.Totals {
		t, h := m.rec.Snapshot()
		sec := results.Second{
			T:         now.Sub(start).Seconds(),
			Decisions: t.Decisions - last.Decisions,
			Allowed:   t.Allowed - last.Allowed,
			Rejected:  t.Rejected - last.Rejected,
			Errors:    t.Errors - last.Errors,
		}
		sec.P50US, sec.P99US = interval.Next(h)
		if m.immortal != nil {
			sec.Immortal = m.immortal()
		}
		m.series = append(m.series, sec)
		return t
	}
	go func() {
		defer close(m.finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		lastAt := start
		for {
			select {
			case <-m.done:
				if t := m.rec.Totals(); t.Decisions > last.Decisions {
					sample(time.Now())
				}
				if m.w != nil {
					fmt.Fprint(m.w, "\r\033[K")
				}
				return
			case now := <-tick.C:
				t := sample(now)
				if m.w != nil {
					rate := float64(t.Decisions-last.Decisions) / now.Sub(lastAt).Seconds()
					fmt.Fprint(m.w, "\r\033[K"+results.Progress(m.label, now.Sub(start), t, rate))
				}
				last, lastAt = t, now
			}
		}
	}()
}

// Stop stops the sampling and ends the progress line.
func (m *Monitor) Stop(context.Context, time.Time) {
	close(m.done)
	<-m.finished
	if m.labels != nil {
		m.labels(m.series)
	}
}

// Report fills run.PerSecond.
func (m *Monitor) Report(run *results.Run) { run.PerSecond = m.series }

// PeriodicAudit audits a cell's keys every so often while its load runs,
// and gives the latest count of immortal keys (Latest), which the Monitor
// and the live metrics read. It fills no group of the run: the audit at
// the cell's end does.
type PeriodicAudit struct {
	t      *topology.Target
	prefix string
	window int64
	every  time.Duration
	fields bool
	n      atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}
}

// NewPeriodicAudit returns the periodic audit of the keys under prefix on
// t, every `every` (audit.Options: window in whole seconds; fields for a
// strategy whose counters are hash fields). every <= 0 means none: the
// probe then does nothing, and Latest is nil.
func NewPeriodicAudit(t *topology.Target, prefix string, window int64, every time.Duration, fields bool) *PeriodicAudit {
	a := &PeriodicAudit{t: t, prefix: prefix, window: window, every: every, fields: fields}
	a.n.Store(-1)
	return a
}

// Latest returns the function that gives the latest count of immortal
// keys (nil before the first audit); nil when the probe audits nothing.
func (a *PeriodicAudit) Latest() func() *int64 {
	if a.every <= 0 {
		return nil
	}
	return func() *int64 {
		if v := a.n.Load(); v >= 0 {
			return &v
		}
		return nil
	}
}

// Start starts the audits, which stop with ctx or Stop.
func (a *PeriodicAudit) Start(ctx context.Context) {
	if a.every <= 0 {
		return
	}
	ctx, a.cancel = context.WithCancel(ctx)
	a.done = make(chan struct{})
	go func() {
		defer close(a.done)
		tick := time.NewTicker(a.every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if res, _, err := a.t.Audit(ctx, a.prefix, a.window, a.fields); err == nil {
					a.n.Store(res.Immortal)
				}
			}
		}
	}()
}

// Stop stops the audits, and waits for the one under way.
func (a *PeriodicAudit) Stop(context.Context, time.Time) {
	if a.cancel != nil {
		a.cancel()
		<-a.done
	}
}

// Report fills nothing.
func (a *PeriodicAudit) Report(*results.Run) {}

var (
	_ probe.Probe = (*Monitor)(nil)
	_ probe.Probe = (*PeriodicAudit)(nil)
)

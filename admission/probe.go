package admission

import (
	"context"
	"slices"
	"time"

	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/probe"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

// Probe is a Tracker as one of a cell's probes: it observes each decision
// the load records as successful, and fills the run's Admission group and,
// for each fault with a span, the fresh counters created during it
// (results.FaultEvent.FirstIncrements).
type Probe struct {
	tracker *Tracker
	faults  []faults.Fault
}

// NewProbe returns the probe of a cell's measured load of keys counters of
// a strategy with the given limit and window (New), counting the fixed
// windows that start during each of the cell's faults fs, from the fault's
// time to its end (faults.Fault.Arg; none for a fault of no length).
func NewProbe(info strategies.Info, keys int, limit, window int64, fs []faults.Fault) *Probe {
	t := New(info, keys, limit, window)
	spans := make([]Span, len(fs))
	for i, f := range fs {
		spans[i] = Span{From: f.At, To: f.At + f.Arg}
	}
	t.WatchSpans(spans)
	return &Probe{tracker: t, faults: fs}
}

// Start does nothing: the Tracker is ready.
func (p *Probe) Start(context.Context) {}

// Observe tracks d when the load records it as successful: the strategy
// answered, and --crash-rate did not kill its worker.
func (p *Probe) Observe(d probe.Decision) {
	if d.Err == nil && !d.Crashed {
		p.tracker.Observe(d.Key, strategies.Decision{Allowed: d.Allowed, Count: d.Count}, d.At)
	}
}

// Stop does nothing: no decision comes after it.
func (p *Probe) Stop(context.Context, time.Time) {}

// Report fills run.Admission, and gives each event of run.Faults whose
// fault has a span and succeeded the counters created during it (none
// when the strategy's windows are not delimited: Tracker.Creations). Events
// name their fault in faults.Parse's syntax; two faults of the same name
// have the same span.
func (p *Probe) Report(run *results.Run) {
	run.Admission = p.tracker.Result()
	created := p.tracker.Creations()
	if created == nil {
		return
	}
	for i := range run.Faults {
		ev := &run.Faults[i]
		j := slices.IndexFunc(p.faults, func(f faults.Fault) bool { return f.String() == ev.Fault })
		if j >= 0 && p.faults[j].Arg > 0 && ev.Error == "" {
			ev.FirstIncrements = &created[j]
		}
	}
}

var (
	_ probe.Probe    = (*Probe)(nil)
	_ probe.Observer = (*Probe)(nil)
)

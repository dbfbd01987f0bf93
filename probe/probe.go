// Package probe is the one lifecycle of a cell's measurements, on the model
// of k6's output.Output (Start, AddMetricSamples, Stop): a Probe starts as
// the measured load starts, observes each decision (Observer) and each
// fault as it ends (FaultObserver) when it wants them, stops once the load
// has ended, and fills its own group of the cell's results.Run.
//
// A List runs several probes as one: it starts them in order, stops them
// in the reverse order (a probe stops after those started after it, as
// deferred calls run) and reports in order. It is itself a Probe and an
// Observer, which is what workload.Run takes.
//
// The package imports nothing of rlbench's but the data model, results.
package probe

import (
	"context"
	"time"

	"github.com/rlbench/rlbench/results"
)

// Probe is one measurement of a cell's measured load.
type Probe interface {
	// Start is called before the load's first decision.
	Start(ctx context.Context)
	// Stop is called once the load, which started at started, has ended:
	// no decision is observed after it. started carries the monotonic
	// clock: the probe's times count from it.
	Stop(ctx context.Context, started time.Time)
	// Report fills the probe's group of run, once every probe has stopped
	// and run holds the load's own figures (its counts, its faults).
	Report(run *results.Run)
}

// Observer sees each decision of a load. Observe is called on the
// worker's goroutine, once per decision, before the decision is recorded:
// it must not block, and it should not allocate (the recorder's hot path
// makes no allocation).
type Observer interface {
	Observe(d Decision)
}

// FaultObserver sees each injected fault as it ends, from the fault's
// goroutine (faults.ScheduleNotify).
type FaultObserver interface {
	Fault(ev results.FaultEvent)
}

// Decision is one decision of a load, as the strategy returned it: what it
// answered, and whether the load cut it short.
type Decision struct {
	// Key is the index of the decision's key, from 0; Name is its name
	// (workload.KeyName).
	Key  int
	Name string
	// Allowed and Count are the strategy's answer (strategies.Decision);
	// zero when Err is not nil.
	Allowed bool
	Count   int64
	// Err is the strategy's error; nil on success. It is
	// strategies.ErrCrashed when --crash-rate killed a non-atomic
	// strategy's worker between its commands.
	Err error
	// At is when the decision returned, from the load's start; Sent when
	// it was sent (in an open loop, when it was due: no later than sent),
	// so that the server ran it between the two.
	At, Sent time.Duration
	// Cut is set when the decision's context had ended when it returned:
	// the end of the run's context (an interrupt), or --crash-rate cutting
	// an atomic strategy's request. The server may yet run its increment,
	// though no client is told of it.
	Cut bool
	// Crashed is set when --crash-rate killed the worker during the
	// decision: the load records it as crashed, whatever Err says (a reply
	// that came before the cut is not told to the client).
	Crashed bool
}

// List is probes that run as one. Its zero value is an empty list.
type List struct {
	probes    []Probe
	observers []Observer
	faults    []FaultObserver
}

// NewList returns the list of ps, in order; a nil probe is left out.
func NewList(ps ...Probe) *List {
	l := &List{}
	for _, p := range ps {
		l.Add(p)
	}
	return l
}

// Add appends p to the list; a nil p is left out. Call it before Start.
func (l *List) Add(p Probe) {
	if p == nil {
		return
	}
	l.probes = append(l.probes, p)
	if o, ok := p.(Observer); ok {
		l.observers = append(l.observers, o)
	}
	if f, ok := p.(FaultObserver); ok {
		l.faults = append(l.faults, f)
	}
}

// Start starts each probe, in order.
func (l *List) Start(ctx context.Context) {
	for _, p := range l.probes {
		p.Start(ctx)
	}
}

// Observe gives d to each probe that observes decisions.
func (l *List) Observe(d Decision) {
	for _, o := range l.observers {
		o.Observe(d)
	}
}

// Fault gives ev to each probe that observes faults.
func (l *List) Fault(ev results.FaultEvent) {
	for _, f := range l.faults {
		f.Fault(ev)
	}
}

// Stop stops each probe, in the reverse order of Start.
func (l *List) Stop(ctx context.Context, started time.Time) {
	for i := len(l.probes) - 1; i >= 0; i-- {
		l.probes[i].Stop(ctx, started)
	}
}

// Report has each probe fill its group of run, in order.
func (l *List) Report(run *results.Run) {
	for _, p := range l.probes {
		p.Report(run)
	}
}

var (
	_ Probe         = (*List)(nil)
	_ Observer      = (*List)(nil)
	_ FaultObserver = (*List)(nil)
)

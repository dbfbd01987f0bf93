package admission

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/probe"
	"github.com/rlbench/rlbench/results"
)

// TestProbe checks the Tracker as a probe: it tracks the decisions the load
// records as successful only (not an error, nor one --crash-rate killed
// after its reply came), and its Report fills the run's Admission group
// and gives each fault with a span that succeeded the counters created
// during it.
func TestProbe(t *testing.T) {
	t.Parallel()
	fs := []faults.Fault{
		{Kind: faults.Stall, At: 0, Arg: time.Second},
		{Kind: faults.Restart, At: 500 * time.Millisecond},
		{Kind: faults.Stall, At: 2 * time.Second, Arg: time.Second},
	}
	p := NewProbe(luaInfo, 2, 2, 60, fs)
	ctx := context.Background()
	p.Start(ctx)
	at := 100 * time.Millisecond
	for _, d := range []probe.Decision{
		{Key: 0, Allowed: true, Count: 1, At: at},
		{Key: 0, Allowed: true, Count: 2, At: at},
		{Key: 0, Allowed: true, Count: 3, At: at, Crashed: true},
		{Key: 0, Allowed: true, Count: 4, At: at, Err: errors.New("boom")},
		{Key: 1, Allowed: true, Count: 1, At: at},
		{Key: 1, Allowed: true, Count: 2, At: at},
	} {
		p.Observe(d)
	}
	p.Stop(ctx, time.Now())
	run := results.Run{Faults: []results.FaultEvent{
		{Fault: fs[0].String()}, {Fault: fs[1].String()}, {Fault: fs[2].String(), Error: "ERR boom"},
	}}
	p.Report(&run)
	if run.OverAdmitted == nil || *run.OverAdmitted != 0 {
		t.Errorf("over-admitted = %v; want 0 (key 0's counts 3 and 4, over the limit 2, not recorded as successful)", run.OverAdmitted)
	}
	if f := run.Faults[0].FirstIncrements; f == nil || *f != 2 {
		t.Errorf("first increments of %s = %v; want 2", fs[0], f)
	}
	for _, ev := range run.Faults[1:] {
		if ev.FirstIncrements != nil {
			t.Errorf("first increments of %s = %d; want none (no span, or failed)", ev.Fault, *ev.FirstIncrements)
		}
	}
	gcra := NewProbe(gcraInfo, 2, 2, 60, fs)
	gcra.Observe(probe.Decision{Key: 0, Allowed: true, Count: 1, At: at})
	run = results.Run{Faults: []results.FaultEvent{{Fault: fs[0].String()}}}
	gcra.Report(&run)
	if run.Faults[0].FirstIncrements != nil || run.OverAdmitted != nil {
		t.Errorf("gcra: first increments %v, over-admitted %v; want neither: its windows are not delimited", run.Faults[0].FirstIncrements, run.OverAdmitted)
	}
}

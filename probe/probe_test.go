package probe_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rlbench/rlbench/probe"
	"github.com/rlbench/rlbench/results"
)

// logged is a probe that notes each call of its lifecycle in a shared log.
type logged struct {
	name string
	log  *[]string
}

func (p *logged) Start(context.Context)           { *p.log = append(*p.log, "start "+p.name) }
func (p *logged) Stop(context.Context, time.Time) { *p.log = append(*p.log, "stop "+p.name) }
func (p *logged) Report(*results.Run)             { *p.log = append(*p.log, "report "+p.name) }

// observing is a logged probe that observes decisions and faults too.
type observing struct{ logged }

func (p *observing) Observe(d probe.Decision) {
	*p.log = append(*p.log, "observe "+p.name+" "+d.Name)
}

func (p *observing) Fault(ev results.FaultEvent) {
	*p.log = append(*p.log, "fault "+p.name+" "+ev.Fault)
}

// TestListLifecycle checks the order a List runs its probes in: started
// in order, stopped in the reverse one, reported in order; decisions and
// faults go only to the probes that observe them, and a nil probe is left
// out.
func TestListLifecycle(t *testing.T) {
	t.Parallel()
	var log []string
	l := probe.NewList(&logged{"a", &log}, nil, &observing{logged{"b", &log}})
	l.Add(&logged{"c", &log})
	ctx := context.Background()
	l.Start(ctx)
	l.Observe(probe.Decision{Name: "k"})
	l.Fault(results.FaultEvent{Fault: "stall@1s:1s"})
	l.Stop(ctx, time.Now())
	l.Report(&results.Run{})
	want := []string{
		"start a", "start b", "start c",
		"observe b k", "fault b stall@1s:1s",
		"stop c", "stop b", "stop a",
		"report a", "report b", "report c",
	}
	if !slices.Equal(log, want) {
		t.Errorf("lifecycle = %q; want %q", log, want)
	}
}

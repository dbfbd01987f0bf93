package redirects

import (
	"context"
	"time"

	"github.com/rlbench/rlbench/probe"
	"github.com/rlbench/rlbench/results"
)

// Probe counts a cell's cluster redirections, one of its probes: a
// Snapshot as the measured load starts and one once it has ended, whose
// Delta fills the run's cluster_errors.
type Probe struct {
	read          func(context.Context) Snapshot
	before, after Snapshot
}

// NewProbe returns the probe that reads its snapshots with read (a
// target's Redirects: nil for a single server, a server without INFO
// errorstats, or a node that could not be read).
func NewProbe(read func(context.Context) Snapshot) *Probe { return &Probe{read: read} }

// Start takes the snapshot before the load.
func (p *Probe) Start(ctx context.Context) { p.before = p.read(ctx) }

// Stop takes the snapshot after the load, even after an interrupt.
func (p *Probe) Stop(ctx context.Context, _ time.Time) { p.after = p.read(context.WithoutCancel(ctx)) }

// Report fills run.ClusterErrors when both snapshots were read.
func (p *Probe) Report(run *results.Run) {
	if p.before != nil && p.after != nil {
		run.ClusterErrors = Delta(p.before, p.after)
	}
}

var _ probe.Probe = (*Probe)(nil)

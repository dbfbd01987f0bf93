package saturation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/probe"
	"github.com/rlbench/rlbench/results"
)

// Reading is one Sample per master of a target, by address (what
// topology.Sample reads).
type Reading struct {
	Addrs   []string
	Samples []Sample
}

// Restarted says which of r's servers restarted before later was read:
// each address in both whose INFO run_id changed, "127.0.0.1:6379 (run_id
// 3f1c..., then 9a0e...)", joined by "; "; "" when none did. An address in
// one reading only (a failover) is no restart.
func (r Reading) Restarted(later Reading) string {
	var out []string
	for i, addr := range r.Addrs {
		j := slices.Index(later.Addrs, addr)
		if j < 0 || i >= len(r.Samples) || j >= len(later.Samples) {
			continue
		}
		if was, is := r.Samples[i].ServerRunID, later.Samples[j].ServerRunID; was != "" && is != "" && was != is {
			out = append(out, fmt.Sprintf("%s (run_id %s, then %s)", addr, was, is))
		}
	}
	return strings.Join(out, "; ")
}

// sameServers reports whether a and b were read from the same server
// processes: the same addresses and the same run_ids.
func sameServers(a, b Reading) bool {
	return slices.Equal(a.Addrs, b.Addrs) && slices.EqualFunc(a.Samples, b.Samples, func(x, y Sample) bool {
		return x.ServerRunID == y.ServerRunID
	})
}

// Probe is the self-check of one cell, one of its probes: the servers are
// read when the cell starts, before its client connects (NewProbe), as
// its measured load starts (Start) and once it has ended (Stop); Report
// compares the readings into the run's Saturation group.
type Probe struct {
	read func(context.Context) (Reading, error)
	// connected, before and after are the readings; err is why one
	// failed, which leaves the figures unknown.
	connected, before, after Reading
	err                      error
	// peakOfRun says that the peak RSS could not be reset at the cell's
	// start: the samples' peak is the run's so far.
	peakOfRun bool
}

// NewProbe returns the self-check of a cell that is about to connect its
// client, whose servers read reads: it resets the process' peak RSS, so
// that the cell's is its own, not the earlier cells', and reads the
// servers, so that the client's connections are counted.
func NewProbe(ctx context.Context, read func(context.Context) (Reading, error)) *Probe {
	p := &Probe{read: read}
	p.peakOfRun = ResetPeakRSS() != nil
	p.connected, p.err = read(ctx)
	return p
}

// Start reads the servers: CPU counts from here, the measured load, not
// the set-up and the warm-up.
func (p *Probe) Start(ctx context.Context) {
	var err error
	p.before, err = p.read(ctx)
	p.err = errors.Join(p.err, err)
}

// Stop reads the servers again, even after an interrupt.
func (p *Probe) Stop(ctx context.Context, _ time.Time) {
	var err error
	p.after, err = p.read(context.WithoutCancel(ctx))
	p.err = errors.Join(p.err, err)
}

// Report fills run.Saturation: nil when a reading failed, the masters
// changed (by address, or by process: a Sentinel target's master failed
// over by hand), or a fault left the figures unknown (run.Faults). Its CPU
// per decision is over the load's decisions; it gives no verdict for a
// load of no decision (the CPUs measured the set-up), one whose open loop
// kept its schedule (the schedule set the pace), or one a stall paused.
func (p *Probe) Report(run *results.Run) {
	if p.err != nil || slices.ContainsFunc(run.Faults, unknownAfter) ||
		!sameServers(p.connected, p.before) || !sameServers(p.before, p.after) {
		run.Saturation = nil
		return
	}
	sat := Compare(p.before.Samples, p.after.Samples)
	PerDecision(&sat, p.before.Samples, p.after.Samples, run.Decisions)
	// Connections count from before the client connected.
	sat.ConnectionsOpened = Compare(p.connected.Samples, p.after.Samples).ConnectionsOpened
	sat.PeakRSSOfRun = p.peakOfRun
	scheduled := run.OpenLoop != nil && run.Rate > 0 && run.RateNote == ""
	if run.Decisions == 0 || scheduled || slices.ContainsFunc(run.Faults, isStall) {
		// Neither side's CPU tells what bound the load.
		sat.Verdict = ""
	}
	run.Saturation = &sat
}

// Restarted says which servers restarted since the cell's client connected
// (Reading.Restarted), from the reading after the load or, when that one
// failed, a new one: the first reading after a restart may meet a closed
// connection.
func (p *Probe) Restarted(ctx context.Context) string {
	after := p.after
	if len(after.Samples) == 0 {
		after, _ = p.read(ctx)
	}
	return p.connected.Restarted(after)
}

// unknownAfter reports whether fault event e left the figures unknown: a
// restart starts the server's CPU counters again from zero, and a failover
// changes which nodes are masters.
func unknownAfter(e results.FaultEvent) bool {
	k := e.Kind()
	return k == faults.Restart || k == faults.Failover || k == faults.SentinelFailover
}

// isStall reports whether e is a stall, which pauses the server.
func isStall(e results.FaultEvent) bool { return e.Kind() == faults.Stall }

var _ probe.Probe = (*Probe)(nil)

package results

import (
	"bytes"
	"fmt"
	"strconv"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Stage is what one stage of a load shape (--stages) measured: its span
// on the plan, the target it ramped between, and its decisions and their
// latency.
type Stage struct {
	// Stage is the stage's number, from 1, in the order given.
	Stage int `json:"stage"`
	// StartS and EndS are the stage's span on the plan, in seconds from the
	// start of the load.
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	// Of names what the targets count: TargetWorkers in a closed loop,
	// TargetRate in an open one.
	Of string `json:"target_of"`
	// From and To are the targets at the stage's start and end, in
	// workers or decisions per second (see Of): the target moves linearly
	// from one to the other.
	From float64 `json:"from"`
	To   float64 `json:"to"`
	// Decisions, Allowed, Rejected and Errors count the decisions that
	// completed during the stage.
	Decisions int64 `json:"decisions"`
	Allowed   int64 `json:"allowed"`
	Rejected  int64 `json:"rejected"`
	Errors    int64 `json:"errors"`
	// ThroughputPerS is Decisions over the stage's measured length, per
	// second; 0 for a stage of no planned length (0s:T).
	ThroughputPerS float64 `json:"throughput_per_s"`
	// LatencyUS summarises the latency of the stage's decisions, in
	// microseconds (corrected, in an open loop, as the run's).
	LatencyUS Latency `json:"latency_us"`
}

// What a Stage's targets count.
const (
	TargetWorkers = "workers"
	TargetRate    = "decisions/s"
)

// StageOf fills the figures of a stage from the recorder's cumulative
// totals and histogram at its end (from Recorder.Snapshot), those at its
// start (prev, and iv, which has seen the start's histogram), and the
// stage's measured length in seconds. A stage of no planned length (a
// jump, 0s:T) has no throughput: its measured length is the few
// microseconds between two timers.
func StageOf(s Stage, now, prev Totals, h *hdrhistogram.Histogram, iv *Interval, seconds float64) Stage {
	s.Allowed, s.Rejected, s.Errors = now.Allowed-prev.Allowed, now.Rejected-prev.Rejected, now.Errors-prev.Errors
	s.Decisions = s.Allowed + s.Rejected + s.Errors
	if seconds > 0 && s.EndS > s.StartS {
		s.ThroughputPerS = float64(s.Decisions) / seconds
	}
	s.LatencyUS = LatencyOf(iv.NextHistogram(h))
	return s
}

// writeStages writes the figures of each stage of a shaped load, a line
// each: its span, its targets, its decisions, throughput and latency.
func writeStages(buf *bytes.Buffer, r Run, label string) {
	for _, s := range r.Stages {
		u := s.LatencyUS
		fmt.Fprintf(buf, "%s stage %d (%gs-%gs, %s %s to %s): %d decisions, %s/s, %d errors, p50 %s, p99 %s, p99.9 %s\n",
			label, s.Stage, s.StartS, s.EndS, s.Of, formatTarget(s.From), formatTarget(s.To), s.Decisions,
			strconv.FormatFloat(s.ThroughputPerS, 'f', 0, 64), s.Errors, FormatUS(u.P50), FormatUS(u.P99), FormatUS(u.P999))
	}
}

// formatTarget writes a target without a pointless fraction: 100, 0.5.
func formatTarget(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

package thresholds

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/rlbench/rlbench/results"
)

// measure returns th's metric in run r, in th.Value's unit, and "" or why
// the cell did not measure it; note, when not "", qualifies a figure
// measured (a sample, errors among the latencies, keys immortal by design).
func (th Threshold) measure(r *results.Run) (v float64, why, note string) {
	switch th.Metric {
	case "throughput":
		// The decisions made: an error is no decision, and a run whose
		// requests fail fast must not pass on their rate.
		if r.DurationS <= 0 {
			return 0, "not measured: no load duration", ""
		}
		return float64(r.Allowed+r.Rejected) / r.DurationS, "", ""
	case "errors":
		return float64(r.Errors), "", ""
	case "immortal":
		return measureImmortal(r)
	case "over":
		if r.OverAdmitted == nil {
			return 0, "not measured: not a fixed window", ""
		}
		return float64(*r.OverAdmitted), "", sampleNote(r)
	case "phantom":
		l := r.Failover.LostIncrements
		switch {
		case l == nil:
			return 0, "not measured: no increment-first counter", ""
		case l.Error != "":
			return 0, "not measured: " + l.Error, ""
		}
		return float64(l.Phantom), "", ""
	}
	h := r.Histogram
	if h == nil || h.TotalCount() == 0 {
		return 0, "no latency recorded", ""
	}
	if r.Errors > 0 {
		// The recorder keeps one histogram of every attempt.
		note = fmt.Sprintf("includes the %d errors: see errors==0", r.Errors)
	}
	switch th.Metric {
	case "max":
		return float64(h.Max()), "", note
	case "mean":
		return h.Mean(), "", note
	}
	return float64(h.ValueAtQuantile(th.quantile)), "", note
}

// measureImmortal is measure's immortal: the live keys with no TTL (the
// stale keys of a stamped strategy, whose window has ended, lock no user
// out and are left out), noting a strategy that sets no TTL by design.
func measureImmortal(r *results.Run) (float64, string, string) {
	a := r.Audit
	if a.Error != "" {
		return 0, "the audit failed: " + a.Error, ""
	}
	note := ""
	if a.Stale != nil && *a.Stale > 0 {
		note = fmt.Sprintf("%d stale keys of ended windows left out", *a.Stale)
	}
	if r.ImmortalByDesign {
		note = "the strategy sets no TTL by design: every key it writes has none"
	}
	return float64(a.Live()), "", note
}

// sampleNote says, for a run with more keys than package admission
// follows, that over covers a sample.
func sampleNote(r *results.Run) string {
	n := r.AdmissionKeysTracked
	switch {
	case n <= 0:
		return ""
	case r.Audit.Error == "" && r.Audit.Keys > n:
		return fmt.Sprintf("sampled %d of %d keys", n, r.Audit.Keys)
	}
	return fmt.Sprintf("sampled: keys {0} to {%d} only", n-1)
}

// Check checks every threshold against every cell of rep it applies to,
// records each result in the cell's Thresholds (in the order given) and
// returns the number checked and the number that failed. A threshold that
// applies to no cell fails once, in rep.UnmatchedThresholds.
func Check(rep *results.Report, ths []Threshold) (checked, failed int) {
	for _, th := range ths {
		matched := false
		for i := range rep.Runs {
			r := &rep.Runs[i]
			if !th.Applies(r) {
				continue
			}
			matched = true
			res := results.ThresholdResult{Threshold: th.Expr}
			v, why, note := th.measure(r)
			if why != "" {
				res.Note = why
			} else {
				res.Measured, res.Value, res.Note = &v, th.format(v), note
				res.Pass = th.holds(v)
			}
			checked++
			if !res.Pass {
				failed++
			}
			r.Thresholds = append(r.Thresholds, res)
		}
		if !matched {
			checked++
			failed++
			rep.UnmatchedThresholds = append(rep.UnmatchedThresholds, results.ThresholdResult{Threshold: th.Expr, Note: "no cell " + th.Strategy + "/" + th.Client + " in the run"})
		}
	}
	return checked, failed
}

// format shows v in th.Metric's unit: a latency as a duration, a count as
// an integer, throughput to the decision per second.
func (th Threshold) format(v float64) string {
	if counts[th.Metric] {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return results.FormatUS(v)
}

// Text writes one line per checked threshold: the cell, the threshold, the
// measured value and ok or FAILED, then the unmatched ones.
func Text(w io.Writer, rep *results.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "thresholds:\tcell\tmeasured\tresult")
	line := func(cell string, t results.ThresholdResult) {
		verdict, value := "ok", t.Value
		if !t.Pass {
			verdict = "FAILED"
		}
		switch {
		case t.Note != "" && t.Measured != nil:
			value += " (" + t.Note + ")"
		case t.Note != "":
			value = t.Note
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", t.Threshold, cell, value, verdict)
	}
	for _, r := range rep.Runs {
		cell := r.Strategy + "/" + r.Client
		if multiTarget(rep) {
			cell = r.Target + ": " + cell
		}
		for _, t := range r.Thresholds {
			line(cell, t)
		}
	}
	for _, t := range rep.UnmatchedThresholds {
		line("-", t)
	}
	return tw.Flush()
}

// multiTarget reports whether rep's cells ran on more than one target.
func multiTarget(rep *results.Report) bool {
	for _, r := range rep.Runs {
		if r.Target != rep.Runs[0].Target {
			return true
		}
	}
	return false
}

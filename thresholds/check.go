package thresholds

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/rlbench/rlbench/results"
)

// measure returns th's metric in run r, in th.Value's unit, and "" or why
// the cell did not measure it.
func (th Threshold) measure(r *results.Run) (float64, string) {
	switch th.Metric {
	case "throughput":
		return r.ThroughputPerS, ""
	case "errors":
		return float64(r.Errors), ""
	case "immortal":
		if r.Audit.Error != "" {
			return 0, "the audit failed: " + r.Audit.Error
		}
		return float64(r.Audit.Immortal), ""
	case "over":
		if r.OverAdmitted == nil {
			return 0, "not measured: not a fixed window"
		}
		return float64(*r.OverAdmitted), ""
	case "phantom":
		l := r.Failover.LostIncrements
		switch {
		case l == nil:
			return 0, "not measured: no increment-first counter"
		case l.Error != "":
			return 0, "not measured: " + l.Error
		}
		return float64(l.Phantom), ""
	}
	h := r.Histogram
	if h == nil || h.TotalCount() == 0 {
		return 0, "no latency recorded"
	}
	switch th.Metric {
	case "max":
		return float64(h.Max()), ""
	case "mean":
		return h.Mean(), ""
	}
	return float64(h.ValueAtQuantile(th.quantile)), ""
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
			v, why := th.measure(r)
			if why != "" {
				res.Note = why
			} else {
				res.Measured, res.Value = &v, th.format(v)
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
		if t.Note != "" {
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

package compare

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/rlbench/rlbench/results"
)

// BaselineText returns a reporter for a baseline comparison: the legend of
// the files, the settings that differ between them, then one row per cell
// of each later file and metric, with the medians of the per-second
// samples in the baseline and in the file, the change, the U test's
// p-value and sample sizes, and the verdict; then the notes and a last
// line that says whether anything regressed.
func BaselineText(b *BaselineResult) results.Reporter {
	return func(w io.Writer) error {
		var buf bytes.Buffer
		writeBaseline(&buf, b)
		if _, err := w.Write(buf.Bytes()); err != nil {
			return fmt.Errorf("compare: write: %w", err)
		}
		return nil
	}
}

// The verdicts of a Judgement, as BaselineText prints them.
const (
	VerdictRegression = "REGRESSION"
	VerdictWorse      = "worse, within the limit"
	VerdictBetter     = "better"
	VerdictNoise      = "~ (no change beyond the noise)"
)

// Verdict says what the judgement makes of the change: why it cannot be
// judged, a regression, worse within the limit, better, or no change
// beyond the noise.
func (j Judgement) Verdict() string {
	switch {
	case j.Unjudged != "":
		return j.Unjudged
	case j.Regression:
		return VerdictRegression
	case (!j.Significant || j.Change == 0 || math.IsNaN(j.Change)) && j.LowPower:
		return VerdictNoise + ", accepted with too few samples to judge (--accept-low-power)"
	case !j.Significant || j.Change == 0 || math.IsNaN(j.Change):
		return VerdictNoise
	case (j.Change > 0) == j.Metric.HigherIsWorse:
		return VerdictWorse
	}
	return VerdictBetter
}

func writeBaseline(buf *bytes.Buffer, b *BaselineResult) {
	c := b.Comparison
	tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
	for _, f := range c.Files {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, f.Path, Describe(f))
	}
	tw.Flush()
	writeSettings(buf, c, "settings that differ between the files")
	base := c.Files[0].Name
	fmt.Fprintf(buf, "\nagainst the baseline %s: medians of the per-second samples; a change counts when a Mann-Whitney U test of the samples of both files gives p <= %g (as benchstat does), and is a regression when worse by more than %s (the error rate: any rise); throughput counts the decisions answered, not the errors; with %d runs or more of a cell in both files, the samples are each run's median (n in runs); detects is the smallest worsening these samples could tell from the noise, and one over %s with no change found cannot pass\n",
		base, b.Options.Alpha, formatPct(b.Options.MaxRegression), samplesNeeded(b.Options.Alpha), formatPct(b.Options.MaxRegression))
	tw = tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "target\tstrategy\tclient\tfile\tmetric\t%s\tfile's\tchange\tp\tn\tdetects\tverdict\n", base)
	for _, cj := range b.Cells {
		for _, j := range cj.Judgements {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				cj.Key.Target, cj.Key.Strategy, cj.Key.Client, c.Files[cj.File].Name, metricLabel(j.Metric),
				j.Metric.Format(j.Base), j.Metric.Format(j.New), formatChange(j.Change),
				strconv.FormatFloat(j.Test.P, 'f', 3, 64), sizes(j), formatDetectable(j.Detectable), j.Verdict())
		}
	}
	tw.Flush()
	writeBaselineNotes(buf, b)
}

// writeBaselineNotes writes the U test's warnings, the cells that are not
// in both files, what is not judged, and the outcome.
func writeBaselineNotes(buf *bytes.Buffer, b *BaselineResult) {
	var notes []string
	var regressions []string
	for _, cj := range b.Cells {
		name := b.Comparison.Files[cj.File].Name + " " + cj.Key.String()
		for _, j := range cj.Judgements {
			for _, w := range j.Test.Warnings {
				notes = append(notes, fmt.Sprintf("%s, %s: %v", name, metricLabel(j.Metric), w))
			}
			if j.Regression {
				regressions = append(regressions, fmt.Sprintf("%s %s %s", name, metricLabel(j.Metric), formatChange(j.Change)))
			}
		}
	}
	for _, m := range b.Missing {
		notes = append(notes, "not compared: "+m)
	}
	notes = append(notes, "p99.9 is not judged: the per-second series records p50 and p99 only")
	buf.WriteByte('\n')
	for _, n := range notes {
		fmt.Fprintf(buf, "note: %s\n", n)
	}
	writeBaselineOutcome(buf, b, regressions)
}

// writeBaselineOutcome writes the last lines: an all-clear only when
// Passed, else each reason the comparison fails.
func writeBaselineOutcome(buf *bytes.Buffer, b *BaselineResult, regressions []string) {
	limit := formatPct(b.Options.MaxRegression)
	if b.Passed() {
		fmt.Fprintf(buf, "no regression beyond the noise past %s\n", limit)
		return
	}
	if len(regressions) > 0 {
		fmt.Fprintf(buf, "%d regression(s) beyond the noise past %s: %s\n", len(regressions), limit, strings.Join(regressions, "; "))
	}
	if u := b.Unjudged(); len(u) > 0 {
		fmt.Fprintf(buf, "FAIL: %d figure(s) cannot be judged: %s\n", len(u), strings.Join(u, "; "))
	}
	if len(b.Cells) == 0 {
		fmt.Fprintf(buf, "FAIL: nothing compared: no cell is in the baseline and a later file\n")
	} else if b.Absent > 0 && !b.Options.AllowMissing {
		fmt.Fprintf(buf, "FAIL: %d cell(s) of the baseline missing from a later file (--allow-missing passes them)\n", b.Absent)
	}
}

// sizes is the judgement's sample sizes, "10+10" (seconds), or "5+5 runs".
func sizes(j Judgement) string {
	n := fmt.Sprintf("%d+%d", j.Test.N1, j.Test.N2)
	if j.PerRun {
		n += " runs"
	}
	return n
}

// metricLabel is a metric's name without its unit: "throughput", "p50".
func metricLabel(m BaselineMetric) string {
	name, _, _ := strings.Cut(m.Name, " ")
	return name
}

// formatChange formats a change as a signed percentage, "-31.2%", or "-"
// for NaN.
func formatChange(v float64) string {
	if math.IsNaN(v) {
		return missing
	}
	return fmt.Sprintf("%+.1f%%", v*100)
}

// formatPct formats a fraction as a percentage: "5%", "2.5%".
func formatPct(v float64) string { return strconv.FormatFloat(v*100, 'f', -1, 64) + "%" }

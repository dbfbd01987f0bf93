package compare

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"

	"golang.org/x/perf/benchmath"

	"github.com/rlbench/rlbench/results"
)

// DefaultAlpha is the significance level of a baseline comparison: a
// change counts when the Mann-Whitney U test's p-value is below it, as in
// benchstat.
const DefaultAlpha = 0.05

// DefaultMaxRegression is the regression a baseline comparison tolerates,
// as a fraction: 0.05 is 5%.
const DefaultMaxRegression = 0.05

// ErrInvalidMaxRegression is returned by ParseRegression for a limit that
// is not a percentage from 0% to 1000%.
var ErrInvalidMaxRegression = errors.New("want a percentage from 0% to 1000%, e.g. 5%")

// ErrInvalidAlpha is returned by BaselineOptions.Validate for an alpha
// outside (0, 1).
var ErrInvalidAlpha = errors.New("want a significance level above 0 and below 1, e.g. 0.05")

// ParseRegression reads a regression limit written as a percentage,
// "5%" or "2.5%", into a fraction (0.05, 0.025).
func ParseRegression(s string) (float64, error) {
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	if !ok {
		return 0, fmt.Errorf("%w, got %q", ErrInvalidMaxRegression, s)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || !(v >= 0 && v <= 1000) {
		return 0, fmt.Errorf("%w, got %q", ErrInvalidMaxRegression, s)
	}
	return v / 100, nil
}

// BaselineOptions are the thresholds of a baseline comparison. The zero
// value means the defaults.
type BaselineOptions struct {
	// MaxRegression is the regression tolerated, as a fraction (0.05 is
	// 5%): a throughput lower, or a latency higher, by more than this, and
	// beyond the noise, is a regression. 0 tolerates none (the command
	// line's default is DefaultMaxRegression).
	MaxRegression float64
	// Alpha is the significance level of the Mann-Whitney U test; 0 means
	// DefaultAlpha to Baseline (Validate, which checks what a user gave,
	// refuses it).
	Alpha float64
	// AllowMissing passes a comparison in which a later file lacks some
	// of the baseline's cells; without it such a comparison fails.
	AllowMissing bool
	// AcceptLowPower passes a figure with no change beyond the noise
	// whose samples could not have detected a change of MaxRegression
	// (Judgement.Detectable above it); without it such a figure cannot be
	// judged, which fails the comparison.
	AcceptLowPower bool
}

// withDefaults returns o with its zero fields replaced by the defaults.
func (o BaselineOptions) withDefaults() BaselineOptions {
	o.MaxRegression = max(o.MaxRegression, 0)
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	return o
}

// Validate checks options as a user gave them: Alpha above 0 and below 1.
func (o BaselineOptions) Validate() error {
	if !(o.Alpha > 0 && o.Alpha < 1) {
		return fmt.Errorf("%w, got %g", ErrInvalidAlpha, o.Alpha)
	}
	return nil
}

// A BaselineMetric is a figure judged against the baseline: its per-second
// samples in a run, and which way is worse.
type BaselineMetric struct {
	// Metric names and formats the figure.
	Metric
	// PerSecond returns the figure's per-second samples of a run.
	PerSecond func(*results.Run) []float64
	// HigherIsWorse is true for a latency, false for a throughput.
	HigherIsWorse bool
	// AnyRise makes any rise beyond the noise a regression, whatever
	// MaxRegression (the error rate).
	AnyRise bool
	// Empty says why a file may have no sample of the figure.
	Empty string
}

// MinSecond is the shortest entry of a run's per-second series that is a
// sample, in seconds: the part-second at the end of a load is left out
// when shorter, its figures too noisy to judge.
const MinSecond = 0.5

// ErrorRate is the share of a run's decisions that failed.
var ErrorRate = Metric{Name: "errors (share of decisions)", Format: formatShare,
	Value: func(r *results.Run) float64 { return share(r.Errors, r.Decisions) }}

// BaselineMetrics are the figures judged, in the order printed. The
// throughput counts the decisions answered (allowed or rejected), not the
// errors, which the error rate judges: any rise of it beyond the noise is a
// regression. The per-second series has no p99.9, so p99.9 is not judged.
var BaselineMetrics = []BaselineMetric{
	{Metric: Throughput, PerSecond: perSecond(func(s results.Second, d float64) (float64, bool) {
		return float64(s.Allowed+s.Rejected) / d, true
	}), Empty: "no per-second series"},
	{Metric: P50, PerSecond: perSecond(latency(func(s results.Second) float64 { return s.P50US })),
		HigherIsWorse: true, Empty: "no per-second latency (a merged report has none)"},
	{Metric: P99, PerSecond: perSecond(latency(func(s results.Second) float64 { return s.P99US })),
		HigherIsWorse: true, Empty: "no per-second latency (a merged report has none)"},
	{Metric: ErrorRate, PerSecond: perSecond(func(s results.Second, _ float64) (float64, bool) {
		return share(s.Errors, s.Decisions), s.Decisions > 0
	}), HigherIsWorse: true, AnyRise: true, Empty: "no per-second series"},
}

// seconds yields each entry of the run's per-second series at least
// MinSecond long, with its length in seconds.
func seconds(r *results.Run) iter.Seq2[results.Second, float64] {
	return func(yield func(results.Second, float64) bool) {
		prev := 0.0
		for _, s := range r.PerSecond {
			d := s.T - prev
			prev = s.T
			if d >= MinSecond && !yield(s, d) {
				return
			}
		}
	}
}

// perSecond is the samples v gives of the entries that seconds yields,
// those it says are a sample.
func perSecond(v func(s results.Second, d float64) (float64, bool)) func(*results.Run) []float64 {
	return func(r *results.Run) []float64 {
		var out []float64
		for s, d := range seconds(r) {
			if x, ok := v(s, d); ok {
				out = append(out, x)
			}
		}
		return out
	}
}

// latency is a latency of each entry with decisions, left out when 0 (a
// merged report's per-second series has none).
func latency(v func(results.Second) float64) func(results.Second, float64) (float64, bool) {
	return func(s results.Second, _ float64) (float64, bool) {
		x := v(s)
		return x, s.Decisions > 0 && x > 0
	}
}

// share is n over of, 0 when of is 0.
func share(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// formatShare formats a share as a percentage: "0.12%".
func formatShare(v float64) string { return strconv.FormatFloat(v*100, 'f', 2, 64) + "%" }

// Judgement is one metric of one cell against the baseline.
type Judgement struct {
	// Metric is the figure judged.
	Metric BaselineMetric
	// Base and New are the medians of the samples, in the baseline and in
	// the file judged.
	Base, New float64
	// PerRun is true when the samples are one per run (each run's median
	// of its seconds: both files hold enough repeated runs of the cell),
	// false when they are the runs' seconds, pooled.
	PerRun bool
	// Change is New / Base - 1: -0.3 is 30% less; NaN when Base is 0.
	Change float64
	// Test is the Mann-Whitney U test of the two samples (benchmath's
	// AssumeNothing): its p-value, sample sizes, alpha and warnings.
	Test benchmath.Comparison
	// Unjudged says why the figure cannot be judged ("cannot judge
	// (n<4)": too few samples for any p-value to reach alpha, or no
	// sample at all); empty when it is judged. An unjudged figure fails
	// the comparison.
	Unjudged string
	// Significant is true when Test's p-value is not above its alpha (as
	// benchmath counts only p > alpha as noise): the change is beyond the
	// noise.
	Significant bool
	// Regression is true when the change is significant, worse, and by
	// more than BaselineOptions.MaxRegression.
	Regression bool
	// Detectable is the smallest worsening, as a fraction of Base, that
	// these samples could have told from the noise at the test's alpha
	// (see detectable): +Inf when no p-value of these sample sizes reaches
	// alpha; NaN when not estimated (no sample, a Base of 0, or the error
	// rate, where any rise counts).
	Detectable float64
	// LowPower is true when the change is not beyond the noise and
	// Detectable is above BaselineOptions.MaxRegression (a limit of 0
	// asks for no power: no samples detect a change of 0): "no regression"
	// would say more than the samples can. Unless
	// BaselineOptions.AcceptLowPower, Unjudged says so.
	LowPower bool
}

// CellJudgement is a cell of a file against the same cell in the
// baseline: one Judgement per BaselineMetrics.
type CellJudgement struct {
	// Key is the cell's target, strategy and client (Settings is empty:
	// the files' settings may differ, which is what a baseline measures).
	Key Key
	// File is the index of the file judged in Comparison.Files.
	File       int
	Judgements []Judgement
}

// Regressed reports whether any of the cell's metrics regressed.
func (cj CellJudgement) Regressed() bool {
	for _, j := range cj.Judgements {
		if j.Regression {
			return true
		}
	}
	return false
}

// BaselineResult is every file's cells against the first file's.
type BaselineResult struct {
	// Comparison is the files compared; the first is the baseline.
	Comparison *Comparison
	// Options are the thresholds applied, with defaults.
	Options BaselineOptions
	// Cells are the cells present in the baseline and in a later file, by
	// file, then in the baseline's order.
	Cells []CellJudgement
	// Missing lists the cells of a later file that the baseline lacks,
	// and those of the baseline a later file lacks, as "B lacks key".
	Missing []string
	// Absent counts the baseline's cells a later file lacks (in Missing
	// too): unless Options.AllowMissing, they fail the comparison.
	Absent int
}

// Unjudged lists the figures that cannot be judged, as "B key metric:
// why".
func (b *BaselineResult) Unjudged() []string {
	var out []string
	for _, cj := range b.Cells {
		for _, j := range cj.Judgements {
			if j.Unjudged != "" {
				out = append(out, fmt.Sprintf("%s %s %s: %s", b.Comparison.Files[cj.File].Name, cj.Key, metricLabel(j.Metric), j.Unjudged))
			}
		}
	}
	return out
}

// Passed reports whether the comparison is an all-clear: something was
// compared, nothing regressed, every figure was judged, and no later file
// lacks a cell of the baseline (unless Options.AllowMissing).
func (b *BaselineResult) Passed() bool {
	return len(b.Cells) > 0 && !b.Regressed() && len(b.Unjudged()) == 0 && (b.Options.AllowMissing || b.Absent == 0)
}

// Regressed reports whether any cell of any file regressed.
func (b *BaselineResult) Regressed() bool {
	for _, cj := range b.Cells {
		if cj.Regressed() {
			return true
		}
	}
	return false
}

// Baseline judges every cell of files[1:] against the same cell (target,
// strategy and client, whatever the settings) of files[0], metric by
// metric: from one sample per run when both files hold enough repeated
// runs of the cell for a U test to reach alpha (4 at 0.05), else from the
// per-second samples of all the cell's runs in each file.
func Baseline(files []*File, opts BaselineOptions) *BaselineResult {
	opts = opts.withDefaults()
	res := &BaselineResult{Comparison: New(files), Options: opts}
	base := runsByCell(files[0])
	for fi := 1; fi < len(files); fi++ {
		runs := runsByCell(files[fi])
		for _, k := range base.order {
			if _, ok := runs.runs[k]; !ok {
				res.Missing = append(res.Missing, files[fi].Name+" lacks "+k.String())
				res.Absent++
				continue
			}
			cj := CellJudgement{Key: k, File: fi}
			for _, m := range BaselineMetrics {
				cj.Judgements = append(cj.Judgements, judge(m, base.runs[k], runs.runs[k], opts))
			}
			res.Cells = append(res.Cells, cj)
		}
		for _, k := range runs.order {
			if _, ok := base.runs[k]; !ok {
				res.Missing = append(res.Missing, files[0].Name+" lacks "+k.String()+" of "+files[fi].Name)
			}
		}
	}
	return res
}

// cellRuns are a file's runs by cell, with the cells in run order.
type cellRuns struct {
	order []Key
	runs  map[Key][]*results.Run
}

func runsByCell(f *File) cellRuns {
	c := cellRuns{runs: map[Key][]*results.Run{}}
	for i := range f.Report.Runs {
		k := f.Key(i)
		if _, ok := c.runs[k]; !ok {
			c.order = append(c.order, k)
		}
		c.runs[k] = append(c.runs[k], &f.Report.Runs[i])
	}
	return c
}

// judge compares the metric's per-second samples of the baseline's runs
// and of the file's.
func judge(m BaselineMetric, base, runs []*results.Run, opts BaselineOptions) Judgement {
	thresholds := benchmath.DefaultThresholds
	thresholds.CompareAlpha = opts.Alpha
	bv, nv, perRun := samplesOf(m, base, runs, samplesNeeded(opts.Alpha))
	b := benchmath.NewSample(bv, &thresholds)
	n := benchmath.NewSample(nv, &thresholds)
	j := Judgement{Metric: m, Base: median(b.Values), New: median(n.Values), Change: math.NaN(), PerRun: perRun, Detectable: math.NaN()}
	j.Test = benchmath.AssumeNothing.Compare(b, n)
	if m.AnyRise && mean(b.Values) == 0 && mean(n.Values) == 0 {
		j.Test.Warnings = nil // no error either side: "all samples are equal" says nothing
	}
	j.Significant = !(j.Test.P > j.Test.Alpha)
	switch {
	case len(b.Values) == 0 || len(n.Values) == 0:
		j.Unjudged = "not judged: " + m.Empty
	case !j.Significant && minP(len(b.Values), len(n.Values)) > opts.Alpha:
		j.Unjudged = fmt.Sprintf("cannot judge (n<%d)", samplesNeeded(opts.Alpha))
	}
	j.Significant = j.Significant && j.Unjudged == ""
	if j.Base != 0 {
		j.Change = j.New/j.Base - 1
	}
	worse := j.Change
	if !m.HigherIsWorse {
		worse = -worse
	}
	if m.AnyRise {
		j.Regression = j.Significant && (j.New > j.Base || j.New == j.Base && mean(n.Values) > mean(b.Values))
		return j
	}
	j.Regression = j.Significant && worse > opts.MaxRegression
	if j.Unjudged == "" {
		j.Detectable = detectable(m, b, n, &thresholds)
		// A limit of 0 asks only for the changes the test finds: no
		// samples could detect a change of 0.
		if j.LowPower = opts.MaxRegression > 0 && !j.Significant && j.Detectable > opts.MaxRegression; j.LowPower && !opts.AcceptLowPower {
			j.Unjudged = fmt.Sprintf("too few samples to judge %s: they detect %s", formatPct(opts.MaxRegression), formatDetectable(j.Detectable))
		}
	}
	return j
}

// mean is the mean of vs, 0 for none.
func mean(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	return sum / float64(len(vs))
}

// samplesOf is the metric's samples of the baseline's runs and of the
// file's: one per run (the median of its per-second samples), as benchstat
// judges repeated runs, when each side has at least need runs with a
// sample; else every run's per-second samples, pooled.
func samplesOf(m BaselineMetric, base, runs []*results.Run, need int) (b, n []float64, perRun bool) {
	b, n = perRunSamples(m, base), perRunSamples(m, runs)
	if len(b) >= need && len(n) >= need {
		return b, n, true
	}
	return pooled(m, base), pooled(m, runs), false
}

// perRunSamples is the median of each run's per-second samples of the
// metric, for the runs that have some.
func perRunSamples(m BaselineMetric, runs []*results.Run) []float64 {
	var out []float64
	for _, r := range runs {
		if s := m.PerSecond(r); len(s) > 0 {
			out = append(out, median(s))
		}
	}
	return out
}

// pooled is the metric's per-second samples of every run.
func pooled(m BaselineMetric, runs []*results.Run) []float64 {
	var out []float64
	for _, r := range runs {
		out = append(out, m.PerSecond(r)...)
	}
	return out
}

// ErrStagesDiffer is returned by CheckBaseline for files whose load shapes
// (--stages) differ: their per-second samples, pooled over the stages,
// would measure the shape, not the change.
var ErrStagesDiffer = errors.New("the files' --stages differ; a baseline comparison pools the per-second samples of every stage, so it compares only files of one load shape")

// CheckBaseline checks that files can be judged against the first: their
// --stages are the same.
func CheckBaseline(files []*File) error {
	var first *string
	for _, f := range files {
		s, ok := f.Settings()["stages"]
		if !ok {
			s = unset
		}
		if first == nil {
			first = &s
			continue
		}
		if s != *first {
			return fmt.Errorf("%w: %s has %s, %s has %s", ErrStagesDiffer, files[0].Name, *first, f.Name, s)
		}
	}
	return nil
}

package compare

import (
	"errors"
	"fmt"
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
	// DefaultAlpha.
	Alpha float64
}

// withDefaults returns o with its zero fields replaced by the defaults.
func (o BaselineOptions) withDefaults() BaselineOptions {
	o.MaxRegression = max(o.MaxRegression, 0)
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	return o
}

// Validate checks the options once defaults are applied.
func (o BaselineOptions) Validate() error {
	o = o.withDefaults()
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
}

// MinSecond is the shortest entry of a run's per-second series that is a
// sample, in seconds: the part-second at the end of a load is left out
// when shorter, its figures too noisy to judge.
const MinSecond = 0.5

// BaselineMetrics are the figures judged, in the order printed. The
// per-second series has no p99.9, so p99.9 is not judged.
var BaselineMetrics = []BaselineMetric{
	{Metric: Throughput, PerSecond: perSecondRate},
	{Metric: P50, PerSecond: perSecondLatency(func(s results.Second) float64 { return s.P50US }), HigherIsWorse: true},
	{Metric: P99, PerSecond: perSecondLatency(func(s results.Second) float64 { return s.P99US }), HigherIsWorse: true},
}

// perSecondRate is each entry's decisions over its length, for the
// entries at least MinSecond long.
func perSecondRate(r *results.Run) []float64 {
	var out []float64
	prev := 0.0
	for _, s := range r.PerSecond {
		if d := s.T - prev; d >= MinSecond {
			out = append(out, float64(s.Decisions)/d)
		}
		prev = s.T
	}
	return out
}

// perSecondLatency is a latency of each entry with decisions, of those at
// least MinSecond long.
func perSecondLatency(v func(results.Second) float64) func(*results.Run) []float64 {
	return func(r *results.Run) []float64 {
		var out []float64
		prev := 0.0
		for _, s := range r.PerSecond {
			if s.Decisions > 0 && s.T-prev >= MinSecond {
				out = append(out, v(s))
			}
			prev = s.T
		}
		return out
	}
}

// Judgement is one metric of one cell against the baseline.
type Judgement struct {
	// Metric is the figure judged.
	Metric BaselineMetric
	// Base and New are the medians of the per-second samples, in the
	// baseline and in the file judged.
	Base, New float64
	// Change is New / Base - 1: -0.3 is 30% less; NaN when Base is 0.
	Change float64
	// Test is the Mann-Whitney U test of the two samples (benchmath's
	// AssumeNothing): its p-value, sample sizes, alpha and warnings.
	Test benchmath.Comparison
	// Significant is true when Test's p-value is below its alpha: the
	// change is beyond the noise.
	Significant bool
	// Regression is true when the change is significant, worse, and by
	// more than BaselineOptions.MaxRegression.
	Regression bool
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
	// and those of the baseline a later file lacks, as "B: key".
	Missing []string
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
// metric, from the per-second samples of all the cell's runs in each file.
func Baseline(files []*File, opts BaselineOptions) *BaselineResult {
	opts = opts.withDefaults()
	res := &BaselineResult{Comparison: New(files), Options: opts}
	base := runsByCell(files[0])
	for fi := 1; fi < len(files); fi++ {
		runs := runsByCell(files[fi])
		for _, k := range base.order {
			if _, ok := runs.runs[k]; !ok {
				res.Missing = append(res.Missing, files[fi].Name+" lacks "+k.String())
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
	b := benchmath.NewSample(pooled(m, base), &thresholds)
	n := benchmath.NewSample(pooled(m, runs), &thresholds)
	j := Judgement{Metric: m, Base: median(b.Values), New: median(n.Values), Change: math.NaN()}
	j.Test = benchmath.AssumeNothing.Compare(b, n)
	j.Significant = len(b.Values) > 0 && len(n.Values) > 0 && j.Test.P < j.Test.Alpha
	if j.Base != 0 {
		j.Change = j.New/j.Base - 1
	}
	worse := j.Change
	if !m.HigherIsWorse {
		worse = -worse
	}
	j.Regression = j.Significant && worse > opts.MaxRegression
	return j
}

// pooled is the metric's per-second samples of every run.
func pooled(m BaselineMetric, runs []*results.Run) []float64 {
	var out []float64
	for _, r := range runs {
		out = append(out, m.PerSecond(r)...)
	}
	return out
}

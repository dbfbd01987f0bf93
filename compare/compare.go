// Package compare lines up the cells of several rlbench JSON reports (the
// files written by `rlbench --json`) and computes what `rlbench compare`
// prints: each cell's figures per file, their ratios against the first file,
// and, when a cell ran more than once, the spread of its runs.
//
// A cell is one target x strategy x client. Its Key's target is the run's
// target label when the file has one, else the server's name and version for
// a private server (whose address is a random port, so that files from the
// same command line up), else the server's address. Two runs with the same
// Key, in one file or in several, are runs of the same cell.
//
// Baseline judges the cells of later files against the first's from the
// per-second samples of both, with a Mann-Whitney U test (that of
// golang.org/x/perf/benchmath, as benchstat), for `rlbench compare
// --baseline`; BaselineText prints its verdicts.
//
// Runs with different settings are never one cell: the settings (Settings)
// that differ between the files are part of the Key, so that a cell's
// ratios and spread are over like runs only, and its rows say which.
//
// A run that did not finish ("complete": false, from an interrupted
// rlbench) is compared, and flagged: Describe says how many a file has, and
// Text adds a note for each. ReadFiles refuses files that the report reader
// refuses (see results.ReadFile and results.Validate).
//
//	files, err := compare.ReadFiles([]string{"a.json", "b.json"})
//	...
//	err = compare.Text(compare.New(files))(os.Stdout)
package compare

import (
	"math"
	"slices"

	"github.com/rlbench/rlbench/results"
)

// Key identifies a cell across files.
type Key struct {
	// Target names the server (see File.Target).
	Target string
	// Strategy and Client are the run's strategy and client names.
	Strategy string
	Client   string
	// Settings are the settings that differ between the files compared,
	// with the values of the run's file: "clients=200 crash-rate=0"; ""
	// when none differs.
	Settings string
}

// String is "target strategy/client", then the settings in parentheses
// when the files differ in some.
func (k Key) String() string {
	s := k.Target + " " + k.Strategy + "/" + k.Client
	if k.Settings != "" {
		s += " (" + k.Settings + ")"
	}
	return s
}

// Sample is one run of a cell.
type Sample struct {
	// File is the index of the run's file in Comparison.Files.
	File int
	// Index is the run's index in that file's Report.Runs.
	Index int
	// Run is the run itself.
	Run *results.Run
	// Server is the server the run was made against (see File.Server).
	Server results.Server
}

// Cell is every run of one Key, in file order, then run order.
type Cell struct {
	Key     Key
	Samples []Sample
}

// Comparison is the cells of a list of files.
type Comparison struct {
	// Files are the files compared; the first is the baseline of ratios.
	Files []*File
	// Cells are in the order of their first run: file by file, run by run.
	Cells []*Cell
	// Settings are the names of the settings (File.Settings) whose values
	// differ between the files that record them, sorted; see SettingsValue.
	Settings []string
	// settings are each file's, in the order of Files.
	settings []map[string]string
}

// New groups the runs of files into cells: those of one target, strategy
// and client, from files whose settings are the same.
func New(files []*File) *Comparison {
	c := &Comparison{Files: files}
	c.Settings, c.settings = differingSettings(files)
	byKey := map[Key]*Cell{}
	for fi, f := range files {
		label := c.SettingsLabel(fi)
		for ri := range f.Report.Runs {
			r := &f.Report.Runs[ri]
			k := f.Key(ri)
			k.Settings = label
			cell := byKey[k]
			if cell == nil {
				cell = &Cell{Key: k}
				byKey[k] = cell
				c.Cells = append(c.Cells, cell)
			}
			cell.Samples = append(cell.Samples, Sample{File: fi, Index: ri, Run: r, Server: f.Server(ri)})
		}
	}
	return c
}

// Repeated reports whether any cell has more than one run.
func (c *Comparison) Repeated() bool {
	return slices.ContainsFunc(c.Cells, func(cell *Cell) bool { return len(cell.Samples) > 1 })
}

// InFile returns the cell's runs in file fi, in run order.
func (cell *Cell) InFile(fi int) []Sample {
	var out []Sample
	for _, s := range cell.Samples {
		if s.File == fi {
			out = append(out, s)
		}
	}
	return out
}

// Metric is one figure of a run that compare puts side by side.
type Metric struct {
	// Name is the metric's heading, e.g. "p99 latency".
	Name string
	// Value reads the metric from a run.
	Value func(*results.Run) float64
	// Format shows one value in a table.
	Format func(float64) string
	// Optional is for a figure that a run may not have (Value 0): such a
	// run is left out of the metric's values, and the metric's table is
	// printed only when some run has it.
	Optional bool
}

// The metrics that compare gives ratios and spreads for. A ratio above 1 is
// more throughput, or a slower latency.
var (
	Throughput = Metric{Name: "throughput (decisions/s)", Format: formatCount,
		Value: func(r *results.Run) float64 { return r.ThroughputPerS }}
	P50 = Metric{Name: "p50 latency", Format: results.FormatUS,
		Value: func(r *results.Run) float64 { return r.LatencyUS.P50 }}
	P99 = Metric{Name: "p99 latency", Format: results.FormatUS,
		Value: func(r *results.Run) float64 { return r.LatencyUS.P99 }}
	P999 = Metric{Name: "p99.9 latency", Format: results.FormatUS,
		Value: func(r *results.Run) float64 { return r.LatencyUS.P999 }}
	// RlbenchCPU and ServerCPU are the saturation's CPU per decision, of
	// rlbench and of the server: a ratio above 1 is more CPU per decision.
	RlbenchCPU = Metric{Name: "rlbench CPU per decision", Format: formatCPU, Optional: true,
		Value: func(r *results.Run) float64 { return saturation(r).ClientCPUPerDecisionUS }}
	ServerCPU = Metric{Name: "server CPU per decision", Format: formatCPU, Optional: true,
		Value: func(r *results.Run) float64 { return saturation(r).ServerCPUPerDecisionUS }}
)

// Metrics lists the metrics with ratios, in the order compare prints them.
var Metrics = []Metric{Throughput, P50, P99, P999, RlbenchCPU, ServerCPU}

// saturation is r's saturation, or none when it was not measured.
func saturation(r *results.Run) results.Saturation {
	if r.Saturation == nil {
		return results.Saturation{}
	}
	return *r.Saturation
}

// Value is the metric in file fi: the median of the cell's runs in that
// file (one run, normally); ok is false when the cell did not run there.
func (cell *Cell) Value(m Metric, fi int) (v float64, ok bool) {
	vs := values(cell.InFile(fi), m)
	if len(vs) == 0 {
		return 0, false
	}
	return median(vs), true
}

// Ratio is the metric in file fi over the metric in the first file; ok is
// false when the cell is missing from either, or its first value is 0.
func (cell *Cell) Ratio(m Metric, fi int) (ratio float64, ok bool) {
	base, okBase := cell.Value(m, 0)
	v, okV := cell.Value(m, fi)
	if !okBase || !okV || base == 0 {
		return 0, false
	}
	return v / base, true
}

// Spread is the metric over every run of the cell, in every file.
func (cell *Cell) Spread(m Metric) Spread { return SpreadOf(values(cell.Samples, m)) }

// Immortal is the most immortal keys any run of the cell left in file fi;
// ok is false when the cell did not run there.
func (cell *Cell) Immortal(fi int) (n int64, ok bool) {
	for _, s := range cell.InFile(fi) {
		n, ok = max(n, s.Run.Audit.Immortal), true
	}
	return n, ok
}

// OverAdmitted is the largest over-admission of the cell's runs in file fi;
// ok is false when the cell did not run there or is not a fixed window
// (see results.Run.OverAdmitted).
func (cell *Cell) OverAdmitted(fi int) (n int64, ok bool) {
	for _, s := range cell.InFile(fi) {
		if s.Run.OverAdmitted != nil {
			n, ok = max(n, *s.Run.OverAdmitted), true
		}
	}
	return n, ok
}

// values is the metric of each sample, less those an Optional metric's
// runs do not have.
func values(samples []Sample, m Metric) []float64 {
	out := make([]float64, 0, len(samples))
	for _, s := range samples {
		if v := m.Value(s.Run); v != 0 || !m.Optional {
			out = append(out, v)
		}
	}
	return out
}

// Has reports whether some run of some cell of c has metric m.
func (c *Comparison) Has(m Metric) bool {
	for _, cell := range c.Cells {
		if len(values(cell.Samples, m)) > 0 {
			return true
		}
	}
	return false
}

// Spread summarises repeated measurements of one figure.
type Spread struct {
	// N is the number of values.
	N int
	// Min, Median, Max and Mean are in the figure's unit.
	Min, Median, Max, Mean float64
	// CV is the coefficient of variation: the sample standard deviation
	// over the mean (0.02 is 2%); NaN with fewer than two values or a zero
	// mean.
	CV float64
}

// SpreadOf summarises vs. The zero Spread, with a NaN CV, stands for no
// values.
func SpreadOf(vs []float64) Spread {
	s := Spread{N: len(vs), CV: math.NaN()}
	if len(vs) == 0 {
		return s
	}
	s.Min, s.Max, s.Median = slices.Min(vs), slices.Max(vs), median(vs)
	var sum float64
	for _, v := range vs {
		sum += v
	}
	s.Mean = sum / float64(len(vs))
	if len(vs) < 2 || s.Mean == 0 {
		return s
	}
	var sq float64
	for _, v := range vs {
		sq += (v - s.Mean) * (v - s.Mean)
	}
	s.CV = math.Sqrt(sq/float64(len(vs)-1)) / math.Abs(s.Mean)
	return s
}

// median of vs, which it does not modify; 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	sorted := slices.Clone(vs)
	slices.Sort(sorted)
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

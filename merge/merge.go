// Package merge combines the reports of several rlbench processes (load
// generators, on one machine or many) that ran the same cells against the
// same target at the same time into one report, exactly:
//
//   - Latency histograms are added bucket by bucket (each run carries its own,
//     encoded, in latency_histogram), and latency_us and latency_percentiles
//     are computed from the sum. Percentiles are never averaged.
//   - Counts are summed: decisions, allowed, rejected, errors and their kinds,
//     admitted, script fallbacks, workers (clients).
//   - Throughput is the sum of every part's decisions over the common
//     interval: from the latest start to the earliest end among the parts,
//     each part's end being its started_at + duration_s. The merged run's
//     started_at and duration_s are that interval, so throughput_per_s =
//     decisions / duration_s holds for a merged run as for any other, and a
//     merged file merges again. Decisions made outside the common interval
//     are counted too: when the parts did not start together, this
//     overstates the combined rate, and a note says by how much (against the
//     sum of the parts' own throughputs).
//   - per_second is aligned on wall-clock seconds from the merged started_at:
//     each part's second goes to the merged second that holds its midpoint,
//     and seconds are summed (seconds before the common interval have t_s <= 0).
//     The immortal count of a second combines each part's latest as the audit
//     does (below). Per-second p50_us and p99_us cannot be combined without
//     per-second histograms and are left 0, with a note.
//   - The audit is summed over parts that used different key prefixes (their
//     keys are disjoint; rlbench's default prefix is unique per process). Parts
//     that shared a prefix audited the same keys: the largest of their audits
//     counts once, and a note says so.
//   - over_admitted and max_admitted_per_window_span are the largest over the
//     parts. With different prefixes every key belongs to one part, so the
//     largest over keys is the largest over parts: exact. With a shared prefix
//     each part saw only its own admissions to a key, and admissions cannot be
//     combined after the fact: the figure is a lower bound.
//   - cluster_errors (redirections and cluster errors, by kind) are counts
//     the cluster's nodes kept for all their clients, so each part saw the
//     others' too: the merged figure is each kind's largest over the parts,
//     not their sum.
//   - Each part's own figures and environment (server, client options,
//     environment, saturation, started_at, duration_s, throughput, file) are
//     kept in the run's parts list; saturation, which each generator measured
//     of itself, is null in the merged run.
//
// Cells are matched as rlbench compare matches them (see compare.Key). Only
// the cells present in every report are merged; the others are dropped with
// a note. The config is the first report's, with a note naming the keys in
// which the reports' configs differ, the key prefix aside.
//
// Merge refuses what would count a decision twice or distort the common
// interval: a run that did not finish ("complete": false, from an
// interrupted rlbench: ErrIncomplete), and the same run in two files (the
// same start, cell and key prefix: a file given twice, or a copy of it:
// ErrSameRun).
//
// A merged report is written like any other (with merged_from, merge_notes
// and each run's parts besides), so rlbench compare and rlbench report read
// it, and so does Merge: a merged file is then one part, whose own parts are
// not carried over.
package merge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/rlbench/rlbench/compare"
	"github.com/rlbench/rlbench/results"
)

// Errors Merge returns, wrapped with the file and cell at fault.
var (
	// ErrTooFew means fewer than two reports were given.
	ErrTooFew = errors.New("merge needs two reports or more")
	// ErrNotMergeable means a run has no latency_histogram or no started_at.
	ErrNotMergeable = errors.New("written by an older rlbench; cannot merge exactly")
	// ErrInconsistent means a run's histogram does not hold one latency per
	// decision, or cannot be decoded: the file was not written by rlbench as it is.
	ErrInconsistent = errors.New("histogram and counts disagree")
	// ErrDuplicateCell means one report has two runs of the same cell.
	ErrDuplicateCell = errors.New("cell appears twice in one report")
	// ErrNoCommonCells means no cell is in every report.
	ErrNoCommonCells = errors.New("no cell is in every report")
	// ErrNoOverlap means the parts of a cell did not run at the same time:
	// they have no common interval to compute a throughput over.
	ErrNoOverlap = errors.New("the parts did not run at the same time")
	// ErrIncomplete means a run did not finish ("complete": false, as in
	// the file of an interrupted rlbench): its figures cover part of its
	// load, and would distort the common interval and the throughput.
	ErrIncomplete = errors.New("the run did not finish (complete: false); merge only complete runs")
	// ErrSameRun means two files hold the same run: the same start,
	// target, strategy, client and key prefix (the same file given twice,
	// or a copy of it). Its decisions would count twice.
	ErrSameRun = errors.New("the same run is in both files")
)

// overstatementNote is how far (as a fraction) the merged throughput may
// exceed the sum of the parts' own throughputs before a note says so.
const overstatementNote = 0.01

// File is one report to merge.
type File struct {
	// Name names the report in the merged one: its path, as given.
	Name string
	// Report is the report, e.g. from results.ReadReportFile.
	Report *results.Report
}

// Report is a merged report. Its JSON is a results.Report's, with
// merged_from, merge_notes and each run's parts besides.
type Report struct {
	// Tool is "rlbench".
	Tool string `json:"tool"`
	// Started is the earliest Started of the reports.
	Started time.Time `json:"started"`
	// Server is the first report's.
	Server results.Server `json:"server"`
	// Config is the first report's (see Notes for differences).
	Config any `json:"config"`
	// MergedFrom names the reports merged, in the order given.
	MergedFrom []string `json:"merged_from"`
	// Notes says what the merge could not do exactly or left out: cells not
	// in every report, configs that differ, shared prefixes, parts that did
	// not start together.
	Notes []string `json:"merge_notes,omitempty"`
	// Runs are the merged cells, in the first report's order.
	Runs []Run `json:"runs"`
}

// Run is one merged cell: the combined run, and the parts it combines.
type Run struct {
	results.Run
	// Parts are the cell's runs, one per report, in the order given.
	Parts []Part `json:"parts"`
}

// Part is what one report's run of a cell contributed, and what it ran on.
type Part struct {
	// File names the report (File.Name).
	File string `json:"file"`
	// Server is the server the part ran against.
	Server results.Server `json:"server"`
	// Environment is the part's client library, Go and CPUs.
	Environment *results.Environment `json:"environment,omitempty"`
	// ClientOptions are the part's client settings.
	ClientOptions string `json:"client_options"`
	// Clients is the part's number of workers.
	Clients int `json:"clients"`
	// Prefix is the part's key prefix (its config's workload.prefix); "" when
	// unknown.
	Prefix string `json:"prefix,omitempty"`
	// StartedAt and DurationS are the part's load phase: its wall-clock
	// start, and its length in seconds.
	StartedAt time.Time `json:"started_at"`
	DurationS float64   `json:"duration_s"`
	// Decisions and Errors are the part's counts.
	Decisions int64 `json:"decisions"`
	Errors    int64 `json:"errors"`
	// ThroughputPerS is the part's own: Decisions / DurationS, per second.
	ThroughputPerS float64 `json:"throughput_per_s"`
	// LatencyUS is the part's own latency summary, in microseconds.
	LatencyUS results.Latency `json:"latency_us"`
	// Saturation is who was busier during the part's load: its generator
	// or the server; nil when unmeasured.
	Saturation *results.Saturation `json:"saturation"`
	// RateNote is the part's open-loop note, if any.
	RateNote string `json:"rate_note,omitempty"`
}

// Results returns r as a results.Report, without the parts, e.g. for
// results.Text.
func (r *Report) Results() *results.Report {
	out := &results.Report{Tool: r.Tool, Started: r.Started, Server: r.Server, Config: r.Config}
	for _, run := range r.Runs {
		out.Runs = append(out.Runs, run.Run)
	}
	return out
}

// JSON returns a reporter that writes r as indented JSON, as results.JSON
// writes a report.
func JSON(r *Report) results.Reporter {
	return func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("merged report: encode: %w", err)
		}
		return nil
	}
}

// source is one report, ready to merge: its cells keyed as compare keys
// them, and its flattened config.
type source struct {
	name   string
	file   *compare.File
	cells  map[compare.Key]int // run index by cell
	config map[string]string   // flattened config: dotted key -> compact JSON
	prefix string              // workload.prefix; "" when unknown
}

// part is one report's run of the cell being merged.
type part struct {
	src    *source
	run    *results.Run
	server results.Server
	end    time.Time
}

// Merge merges files, two or more, into one report (see the package doc).
// Every error is bad input, and names the file and cell at fault.
func Merge(files []File) (*Report, error) {
	if len(files) < 2 {
		return nil, fmt.Errorf("%w, got %d", ErrTooFew, len(files))
	}
	srcs := make([]*source, len(files))
	for i, f := range files {
		s, err := newSource(f)
		if err != nil {
			return nil, err
		}
		srcs[i] = s
	}
	if err := sameRuns(srcs); err != nil {
		return nil, err
	}
	out := &Report{Tool: "rlbench", Server: files[0].Report.Server, Config: files[0].Report.Config}
	for _, f := range files {
		out.MergedFrom = append(out.MergedFrom, f.Name)
		if s := f.Report.Started; !s.IsZero() && (out.Started.IsZero() || s.Before(out.Started)) {
			out.Started = s
		}
	}

	common, notes := commonCells(srcs)
	out.Notes = append(out.Notes, notes...)
	if len(common) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoCommonCells, strings.Join(out.MergedFrom, ", "))
	}
	if diff := configDiff(srcs); len(diff) > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("the configs differ in %s: config is %s's", strings.Join(diff, ", "), srcs[0].name))
	}
	groups := prefixGroups(srcs)
	out.Notes = append(out.Notes, prefixNotes(srcs, groups)...)

	for _, key := range common {
		parts := make([]part, len(srcs))
		for i, s := range srcs {
			ri := s.cells[key]
			r := &s.file.Report.Runs[ri]
			parts[i] = part{src: s, run: r, server: s.file.Server(ri), end: r.StartedAt.Add(seconds(r.DurationS))}
		}
		run, notes, err := mergeCell(key, parts, groups)
		if err != nil {
			return nil, err
		}
		out.Runs = append(out.Runs, run)
		for _, n := range notes {
			if !slices.Contains(out.Notes, n) {
				out.Notes = append(out.Notes, n)
			}
		}
	}
	return out, nil
}

// newSource keys f's runs as compare does.
func newSource(f File) (*source, error) {
	if f.Report == nil {
		return nil, fmt.Errorf("%s: no report", f.Name)
	}
	cf := &compare.File{Path: f.Name, Report: f.Report}
	s := &source{name: f.Name, file: cf, cells: map[compare.Key]int{}}
	for i := range f.Report.Runs {
		k := cf.Key(i)
		if _, dup := s.cells[k]; dup {
			return nil, fmt.Errorf("%s: %s: %w", f.Name, k, ErrDuplicateCell)
		}
		s.cells[k] = i
	}
	var err error
	if s.config, err = flattenConfig(f.Report.Config); err != nil {
		return nil, fmt.Errorf("%s: config: %w", f.Name, err)
	}
	if p, ok := s.config[prefixKey]; ok {
		_ = json.Unmarshal([]byte(p), &s.prefix) // "" unless a JSON string
	}
	return s, nil
}

// runID identifies one run of rlbench: no two runs share a start, a cell
// and a key prefix.
type runID struct {
	start  time.Time
	cell   compare.Key
	prefix string
}

// sameRuns refuses two sources with one name (a path given twice), and
// two sources that hold the same run (a file and its copy): merged, its
// decisions would count twice. A run without a start or a source without a
// known prefix cannot be told apart from another, and is let through.
func sameRuns(srcs []*source) error {
	seen := map[runID]string{}
	names := map[string]bool{}
	for _, s := range srcs {
		if names[s.name] {
			return fmt.Errorf("%s is given twice: %w", s.name, ErrSameRun)
		}
		names[s.name] = true
		if s.prefix == "" {
			continue
		}
		for i, r := range s.file.Report.Runs {
			if r.StartedAt.IsZero() {
				continue
			}
			id := runID{start: r.StartedAt.UTC(), cell: s.file.Key(i), prefix: s.prefix}
			if other, ok := seen[id]; ok && other != s.name {
				return fmt.Errorf("%s and %s: %s started at %s with prefix %q: %w", other, s.name, id.cell, id.start.Format(time.RFC3339Nano), id.prefix, ErrSameRun)
			}
			seen[id] = s.name
		}
	}
	return nil
}

// commonCells returns the cells that are in every source, in the first's run
// order, and a note for each cell that is not.
func commonCells(srcs []*source) ([]compare.Key, []string) {
	var order []compare.Key
	seen := map[compare.Key]bool{}
	for _, s := range srcs {
		for i := range s.file.Report.Runs {
			k := s.file.Key(i)
			if !seen[k] {
				seen[k] = true
				order = append(order, k)
			}
		}
	}
	var common []compare.Key
	var notes []string
	for _, k := range order {
		var in []string
		for _, s := range srcs {
			if _, ok := s.cells[k]; ok {
				in = append(in, s.name)
			}
		}
		if len(in) == len(srcs) {
			common = append(common, k)
			continue
		}
		notes = append(notes, fmt.Sprintf("cell %s is only in %s: not merged", k, strings.Join(in, ", ")))
	}
	return common, notes
}

// mergeCell merges one cell's parts, one per source: each group of the
// run adds up as its Add says, the audit by prefix group, the series and
// faults on the common interval's clock.
func mergeCell(key compare.Key, parts []part, groups []int) (Run, []string, error) {
	var out Run
	for i, p := range parts {
		r, err := p.prepared(key)
		if err != nil {
			return Run{}, nil, err
		}
		out.Parts = append(out.Parts, p.summary())
		if i == 0 {
			out.Run = r
			continue
		}
		out.Cell.Add(r.Cell)
		out.Load.Add(r.Load)
		out.OpenLoop = out.OpenLoop.Add(r.OpenLoop)
		out.Outage.Add(r.Outage)
		out.Admission.Add(r.Admission)
		out.ScriptFallbacks += r.ScriptFallbacks
		out.Libraries = results.AddLibraries(out.Libraries, r.Libraries)
		out.Failover.Add(r.Failover)
		out.Cluster.Add(r.Cluster)
		if err := out.Distribution.Add(r.Distribution); err != nil {
			return Run{}, nil, fmt.Errorf("%s: %s: latency_histogram: %w: %w", p.src.name, key, ErrInconsistent, err)
		}
	}
	if out.DurationS <= 0 {
		return Run{}, nil, fmt.Errorf("%s: %w: %s", key, ErrNoOverlap, intervals(parts))
	}
	out.StartedAt = out.StartedAt.UTC()
	out.LatencyUS = results.LatencyOf(out.Histogram)
	out.Audits = mergeAudits(parts, groups)
	out.PerSecond = alignSeries(out.StartedAt, parts, groups)
	out.Faults = mergeFaults(out.StartedAt, parts)
	out.Stages = nil // the generators' --stages figures are not combined

	var notes []string
	if n := overstatement(out.ThroughputPerS, out.DurationS, parts); n != "" {
		notes = append(notes, key.String()+": "+n)
	}
	if slices.ContainsFunc(parts, func(p part) bool {
		return slices.ContainsFunc(p.run.PerSecond, func(s results.Second) bool { return s.P50US != 0 || s.P99US != 0 })
	}) {
		notes = append(notes, "per_second p50_us and p99_us cannot be added from the files: they are 0 in merged runs (latency_us and latency_percentiles are exact)")
	}
	if slices.ContainsFunc(parts, func(p part) bool { return p.run.OpenLoop != nil && p.run.LatencyUncorrectedUS != nil }) {
		notes = append(notes, key.String()+": the open loop's uncorrected latencies have no histogram in the files and are not merged")
	}
	notes = append(notes, serverNotes(key, parts)...)
	return out, notes, nil
}

// prepared is the part's run as it enters the merge: checked, its
// histogram decoded and checked against its counts, its server the part's
// (see compare.File.Server), its rate note led by its file, and without
// its saturation, which each generator measured of itself (parts keep it).
func (p part) prepared(key compare.Key) (results.Run, error) {
	if err := p.check(key); err != nil {
		return results.Run{}, err
	}
	r := *p.run
	server := p.server
	r.Server, r.Saturation, r.Histogram = &server, nil, nil
	if err := r.Distribution.Decode(); err != nil {
		return results.Run{}, fmt.Errorf("%s: %s: latency_histogram: %w: %w", p.src.name, key, ErrInconsistent, err)
	}
	// Simulated crashes are counted but their latencies are not recorded.
	if got, want := r.Histogram.TotalCount(), r.Decisions-r.ErrorKinds[results.KindCrashed]; got != want {
		return results.Run{}, fmt.Errorf("%s: %s: %w: latency_histogram holds %d latencies, decisions less crashes is %d", p.src.name, key, ErrInconsistent, got, want)
	}
	if r.OpenLoop != nil && r.RateNote != "" {
		ol := *r.OpenLoop
		ol.RateNote = p.src.name + ": " + ol.RateNote
		r.OpenLoop = &ol
	}
	return r, nil
}

// check refuses a part that cannot be merged exactly.
func (p part) check(key compare.Key) error {
	switch {
	case p.run.HistogramEncoded == "":
		return fmt.Errorf("%s: %s: no latency_histogram: %w", p.src.name, key, ErrNotMergeable)
	case p.run.StartedAt.IsZero():
		return fmt.Errorf("%s: %s: no started_at: %w", p.src.name, key, ErrNotMergeable)
	case bool(p.run.Incomplete):
		return fmt.Errorf("%s: %s: %w", p.src.name, key, ErrIncomplete)
	}
	return nil
}

// summary is the part's entry in the merged run's parts.
func (p part) summary() Part {
	r := p.run
	s := Part{
		File: p.src.name, Server: p.server, Environment: r.Environment, ClientOptions: r.ClientOptions,
		Clients: r.Workers, Prefix: p.src.prefix, StartedAt: r.StartedAt, DurationS: r.DurationS,
		Decisions: r.Decisions, Errors: r.Errors, ThroughputPerS: r.ThroughputPerS, LatencyUS: r.LatencyUS,
		Saturation: r.Saturation,
	}
	if r.OpenLoop != nil {
		s.RateNote = r.RateNote
	}
	return s
}

// overstatement says how far throughput, over a common interval of
// commonS seconds, exceeds the sum of the parts' own throughputs, when by
// more than overstatementNote; "" otherwise.
func overstatement(throughput, commonS float64, parts []part) string {
	var sum, longest float64
	for _, p := range parts {
		if p.run.DurationS > 0 {
			sum += float64(p.run.Decisions) / p.run.DurationS
		}
		longest = max(longest, p.run.DurationS)
	}
	if sum <= 0 || throughput/sum-1 <= overstatementNote {
		return ""
	}
	return fmt.Sprintf("the parts ran together for %.3f s of up to %.3f s: throughput_per_s (every decision over the common interval) is %.1f%% above the sum of the parts' own throughputs, %.0f/s; start the generators together",
		commonS, longest, (throughput/sum-1)*100, sum)
}

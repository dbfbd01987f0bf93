package htmlreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"slices"
	"strconv"

	"github.com/rlbench/rlbench/compare"
	"github.com/rlbench/rlbench/results"
)

// fileView is one file in the page's legend and environment section.
type fileView struct {
	Name        string
	Path        string
	Description string
	Started     string
	Server      results.Server
	Config      string
	// Extra lists the top-level fields the page does not show elsewhere
	// (e.g. a newer rlbench's environment), flattened.
	Extra []field
	// Common lists the run fields of Extra's kind that every run of the
	// file has with the same value (e.g. the Go version).
	Common []field
	Runs   []runView
}

type field struct{ Name, Value string }

type runView struct {
	Cell          string
	Server        string
	Workload      string
	ClientOptions string
	// Load is the saturation self-check in a sentence, "" when not measured.
	Load       string
	Verdict    string
	ErrorKinds string
	// Extra lists the run's fields the page does not show elsewhere (e.g.
	// its environment), flattened, less those common to every run of the
	// file (fileView.Common).
	Extra []field
}

// cellView is one cell's heading, charts and table rows.
type cellView struct {
	ID        string
	Title     string
	HasCurve  bool
	HasSeries bool
	Rows      []rowView
	Spread    string
	Faults    []string
}

type rowView struct {
	Label string
	// Partial marks a run that did not finish ("complete": false).
	Partial    bool
	Decisions  int64
	Throughput float64
	Ratio      string
	Latency    results.Latency
	Errors     int64
	Immortal   int64
	// Stale is how many of Immortal are stale (their window ended: leaked
	// memory, nobody locked out), for a stamped strategy whose keys tell;
	// nil otherwise. Live is the others, those that lock users out.
	Stale *int64
	Live  int64
	Over  string
}

// shownFileFields and shownRunFields are the JSON fields the page shows in
// their own place; any other field goes to the environment's "other" list.
var (
	shownFileFields = []string{"tool", "started", "server", "config", "runs"}
	shownRunFields  = []string{
		"target", "server", "strategy", "client", "client_options", "clients", "duration_s",
		"decisions", "allowed", "rejected", "errors", "error_kinds", "throughput_per_s",
		"latency_us", "latency_percentiles", "on_error", "admitted", "over_admitted",
		"max_admitted_per_window_span", "faults", "per_second", "saturation",
		"script_fallbacks", "audit", "latency_histogram", "started_at", "parts",
	}
)

func newView(c *compare.Comparison, opts Options) (*view, error) {
	d := newData(c)
	v := &view{
		Title:    opts.Title,
		Charts:   d.charts(),
		Overview: d.overview(),
		Data:     d,
		Library:  template.JS(chartJS),
		Script:   template.JS(reportJS),
		Style:    template.CSS(reportCSS),
	}
	if v.Title == "" {
		v.Title = DefaultTitle
	}
	var err error
	if v.Audits, err = auditSection(opts.Audits); err != nil {
		return nil, err
	}
	for fi, f := range c.Files {
		fv, err := newFileView(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		if label := c.SettingsLabel(fi); label != "" {
			// Its runs are cells of their own (compare.Key.Settings).
			fv.Description += "; settings that differ: " + label
		}
		v.Files = append(v.Files, fv)
	}
	for ci, cell := range c.Cells {
		cd := v.Data.Cells[ci]
		cv := cellView{ID: cd.ID, Title: cd.Title, HasCurve: cd.HasCurve, HasSeries: cd.HasSeries}
		base, hasBase := cell.Value(compare.Throughput, 0)
		for si, s := range cell.Samples {
			r := s.Run
			row := rowView{
				Label: cd.Samples[si].Label, Decisions: r.Decisions, Throughput: r.ThroughputPerS,
				Latency: r.LatencyUS, Errors: r.Errors, Immortal: r.Audit.Immortal, Stale: r.Audit.Stale, Live: r.Audit.Live(), Over: "-",
				Partial: bool(r.Incomplete),
			}
			if hasBase && base > 0 && s.File > 0 {
				row.Ratio = compare.FormatRatio(r.ThroughputPerS / base)
			}
			if r.OverAdmitted != nil {
				row.Over = strconv.FormatInt(*r.OverAdmitted, 10)
			}
			cv.Rows = append(cv.Rows, row)
			for _, f := range r.Faults {
				what := f.Detail
				if f.Error != "" {
					what = "FAILED: " + f.Error
				}
				cv.Faults = append(cv.Faults, fmt.Sprintf("%s: %s at %.2f s: %s", row.Label, f.Fault, f.AtS, what))
			}
		}
		if s := cell.Spread(compare.Throughput); s.N > 1 {
			cv.Spread = fmt.Sprintf("%d runs: throughput min %s, median %s, max %s decisions/s, cv %s",
				s.N, strconv.FormatFloat(s.Min, 'f', 0, 64), strconv.FormatFloat(s.Median, 'f', 0, 64),
				strconv.FormatFloat(s.Max, 'f', 0, 64), compare.FormatCV(s.CV))
		}
		v.Cells = append(v.Cells, cv)
	}
	return v, nil
}

func newFileView(f *compare.File) (fileView, error) {
	rep := f.Report
	fv := fileView{Name: f.Name, Path: f.Path, Description: compare.Describe(f), Server: rep.Server}
	if !rep.Started.IsZero() {
		fv.Started = rep.Started.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	if rep.Config != nil {
		cfg, err := json.MarshalIndent(rep.Config, "", "  ")
		if err != nil {
			return fv, fmt.Errorf("config: %w", err)
		}
		fv.Config = string(cfg)
	}
	fv.Extra = extraFields(f.Fields, shownFileFields)
	extras := make([][]field, len(rep.Runs))
	for i := range rep.Runs {
		if i < len(f.RunFields) {
			extras[i] = extraFields(f.RunFields[i], shownRunFields)
		}
	}
	fv.Common = common(extras)
	for i := range rep.Runs {
		r := &rep.Runs[i]
		rv := runView{
			Cell:          f.Target(i) + " " + r.Strategy + "/" + r.Client,
			Server:        f.Server(i).Short(),
			Workload:      fmt.Sprintf("%d workers, %.2f s, on error %s, %d script fallbacks", r.Workers, r.DurationS, r.OnError, r.ScriptFallbacks),
			ClientOptions: r.ClientOptions,
			ErrorKinds:    results.FormatErrorKinds(r.ErrorKinds, " "),
		}
		if s := r.Saturation; s != nil {
			rv.Load = s.Load()
			rv.Verdict = s.Verdict
		}
		for _, x := range extras[i] {
			if !slices.Contains(fv.Common, x) {
				rv.Extra = append(rv.Extra, x)
			}
		}
		fv.Runs = append(fv.Runs, rv)
	}
	return fv, nil
}

// common returns the fields that every list has, in the first's order.
func common(lists [][]field) []field {
	if len(lists) == 0 {
		return nil
	}
	var out []field
	for _, x := range lists[0] {
		if !slices.ContainsFunc(lists[1:], func(l []field) bool { return !slices.Contains(l, x) }) {
			out = append(out, x)
		}
	}
	return out
}

// extraFields flattens the fields of raw that are not in shown, by name:
// objects into "name.sub", arrays and scalars as compact JSON, strings bare.
func extraFields(raw map[string]json.RawMessage, shown []string) []field {
	var names []string
	for k := range raw {
		if !slices.Contains(shown, k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	var out []field
	for _, k := range names {
		out = flatten(out, k, raw[k], 0)
	}
	return out
}

// maxDepth bounds how deep flatten descends; deeper objects stay JSON.
const maxDepth = 4

// flatten appends the field name, holding raw, to out: an object's fields
// one by one as "name.sub", down to maxDepth.
func flatten(out []field, name string, raw json.RawMessage, depth int) []field {
	var obj map[string]json.RawMessage
	if depth < maxDepth && json.Unmarshal(raw, &obj) == nil && obj != nil {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = flatten(out, name+"."+k, obj[k], depth+1)
		}
		return out
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return append(out, field{name, s})
	}
	var compact bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		return append(out, field{name, string(raw)})
	}
	return append(out, field{name, compact.String()})
}

// Package htmlreport writes the page of `rlbench report`: one self-contained
// HTML file that overlays the runs of several rlbench JSON reports. It shows,
// per cell (target x strategy x client), the latency percentile curve on log
// scales and the throughput and errors over time with the faults marked; for
// all cells, the curves overlaid and the immortal keys; and the environment of
// each file (server, version, configuration, client options, saturation, and
// any field a newer rlbench added).
//
// The page needs no network: every script and style is inlined. The charts
// are drawn by Chart.js 4.6.1 (MIT licence, assets/chart.js.LICENSE.md): the
// file dist/chart.umd.min.js of the npm package chart.js@4.6.1, vendored
// unchanged as assets/chart.umd.min.js and embedded with go:embed;
// scripts/vendor-chartjs.sh fetches it again with `npm pack`. The page's own
// script (assets/report.js) builds the charts from the data that HTML embeds,
// and marks the body with data-charts-drawn (charts drawn with non-empty
// pixels) beside data-charts-total, so that a headless browser can check that
// every chart was drawn.
package htmlreport

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/rlbench/rlbench/compare"
	"github.com/rlbench/rlbench/results"
)

// The attributes of the page's <body> that tell a headless browser whether
// the charts were drawn.
const (
	// TotalAttr holds the number of charts on the page (see Charts).
	TotalAttr = "data-charts-total"
	// DrawnAttr holds the number of charts drawn so far with non-empty
	// pixels on their canvas.
	DrawnAttr = "data-charts-drawn"
	// ErrorAttr is set to the message of a script error, if one happened.
	ErrorAttr = "data-js-error"
)

// ChartJSVersion is the version of the vendored Chart.js.
const ChartJSVersion = "4.6.1"

var (
	//go:embed assets/chart.umd.min.js
	chartJS string
	//go:embed assets/report.js
	reportJS string
	//go:embed assets/report.css
	reportCSS string
	//go:embed assets/report.html.tmpl
	pageTemplate string
)

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"us":    results.FormatUS,
	"count": func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) },
}).Parse(pageTemplate))

// Options are the page's settings. The zero value is ready to use.
type Options struct {
	// Title heads the page; "" means "rlbench report".
	Title string
	// Audits are files of `rlbench audit --json`, shown beside the runs.
	Audits []AuditFile
}

// DefaultTitle is the page's title when Options.Title is "".
const DefaultTitle = "rlbench report"

// HTML returns a reporter that writes the page for c.
func HTML(c *compare.Comparison, opts Options) results.Reporter {
	return func(w io.Writer) error {
		view, err := newView(c, opts)
		if err != nil {
			return fmt.Errorf("html report: %w", err)
		}
		var buf bytes.Buffer
		if err := page.Execute(&buf, view); err != nil {
			return fmt.Errorf("html report: template: %w", err)
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return fmt.Errorf("html report: write: %w", err)
		}
		return nil
	}
}

// Charts is the number of charts the page for c draws: the overlaid curves
// and the immortal keys, then per cell its percentile curve and its time
// series, each when there is something to draw.
func Charts(c *compare.Comparison) int { return newData(c).charts() }

// overview reports whether the page has the chart of every cell's curve.
func (d data) overview() bool {
	return slices.ContainsFunc(d.Cells, func(cell cellData) bool { return cell.HasCurve })
}

// charts counts the charts the page draws from d.
func (d data) charts() int {
	n := 0
	if d.overview() {
		n++
	}
	if len(d.Cells) > 0 {
		n++ // the immortal keys
	}
	for _, cell := range d.Cells {
		if cell.HasCurve {
			n++
		}
		if cell.HasSeries {
			n++
		}
	}
	return n
}

// view is what the template renders.
type view struct {
	Title    string
	Charts   int
	Overview bool
	Data     data
	Files    []fileView
	Cells    []cellView
	Library  template.JS
	Script   template.JS
	Style    template.CSS
	Audits   template.HTML
}

// data is what the page's script draws, embedded as JSON.
type data struct {
	Files []fileData `json:"files"`
	Cells []cellData `json:"cells"`
}

type fileData struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

type cellData struct {
	ID        string       `json:"id"`
	Title     string       `json:"title"`
	HasCurve  bool         `json:"has_curve"`
	HasSeries bool         `json:"has_series"`
	Samples   []sampleData `json:"samples"`
	// Immortal is the most immortal keys of the cell's runs per file, nil
	// where it did not run.
	Immortal []*int64 `json:"immortal"`
}

type sampleData struct {
	// File is the index of the sample's file; Label names the sample: the
	// file's name, then "#2", "#3" for a cell's later runs in one file.
	File  int    `json:"file"`
	Label string `json:"label"`
	// Curve is the percentile curve: [1/(1-q), latency in µs] pairs, q the
	// quantile as a fraction; the 100th percentile (an infinite x) and
	// latencies of 0 (off a log scale) are left out.
	Curve [][2]float64 `json:"curve"`
	// Series is the time series: [end of the interval in s, decisions/s,
	// errors/s].
	Series [][3]float64 `json:"series"`
	Faults []faultData  `json:"faults"`
}

type faultData struct {
	Fault  string  `json:"fault"`
	AtS    float64 `json:"at_s"`
	Failed bool    `json:"failed"`
}

// newData extracts what the charts draw from c.
func newData(c *compare.Comparison) data {
	d := data{Files: make([]fileData, len(c.Files)), Cells: make([]cellData, 0, len(c.Cells))}
	for i, f := range c.Files {
		d.Files[i] = fileData{Name: f.Name, Path: f.Path}
	}
	for ci, cell := range c.Cells {
		cd := cellData{ID: "cell-" + strconv.Itoa(ci+1), Title: cell.Key.String(), Immortal: make([]*int64, len(c.Files))}
		for fi := range c.Files {
			if n, ok := cell.Immortal(fi); ok {
				cd.Immortal[fi] = &n
			}
		}
		for _, s := range cell.Samples {
			// Empty lists, not nil, which JSON would write as null: the
			// script reads them as arrays.
			sd := sampleData{File: s.File, Label: sampleLabel(c, cell, s), Curve: curve(s.Run), Series: series(s.Run), Faults: []faultData{}}
			for _, f := range s.Run.Faults {
				sd.Faults = append(sd.Faults, faultData{Fault: f.Fault, AtS: finite(f.AtS), Failed: f.Error != ""})
			}
			cd.HasCurve = cd.HasCurve || len(sd.Curve) > 0
			cd.HasSeries = cd.HasSeries || len(sd.Series) > 0
			cd.Samples = append(cd.Samples, sd)
		}
		d.Cells = append(d.Cells, cd)
	}
	return d
}

// sampleLabel is the file's name, then "#n" for the n-th run of the cell
// in that file when there are several.
func sampleLabel(c *compare.Comparison, cell *compare.Cell, s compare.Sample) string {
	name := c.Files[s.File].Name
	same := cell.InFile(s.File)
	if len(same) < 2 {
		return name
	}
	for i, o := range same {
		if o.Index == s.Index {
			return name + "#" + strconv.Itoa(i+1)
		}
	}
	return name
}

// curve is r's percentile curve for a log-log plot, never nil. A run
// written before latency_percentiles existed falls back to its latency
// summary.
func curve(r *results.Run) [][2]float64 {
	ps := r.Percentiles
	if len(ps) == 0 && r.Decisions > 0 {
		l := r.LatencyUS
		ps = []results.Percentile{{Quantile: 50, ValueUS: l.P50}, {Quantile: 90, ValueUS: l.P90}, {Quantile: 99, ValueUS: l.P99}, {Quantile: 99.9, ValueUS: l.P999}}
	}
	out := [][2]float64{}
	for _, p := range ps {
		if p.Quantile >= 100 || p.Quantile < 0 || !(p.ValueUS > 0) || math.IsInf(p.ValueUS, 0) {
			continue
		}
		out = append(out, [2]float64{round6(1 / (1 - p.Quantile/100)), p.ValueUS})
	}
	return out
}

// minInterval is the shortest part-second turned into a rate: a shorter
// one says more about the timer than about the load.
const minInterval = 0.05

// series is r's time series as rates, never nil: each entry's counts over
// the time since the previous entry (the last one covers a part-second).
func series(r *results.Run) [][3]float64 {
	out := [][3]float64{}
	prev := 0.0
	for _, s := range r.PerSecond {
		dt := s.T - prev
		if dt < minInterval || math.IsNaN(dt) || math.IsInf(dt, 0) {
			continue
		}
		prev = s.T
		out = append(out, [3]float64{s.T, round6(float64(s.Decisions) / dt), round6(float64(s.Errors) / dt)})
	}
	return out
}

// round6 rounds v to 6 significant digits, which is all a chart shows, so
// that the embedded data reads 10 rather than 10.000000000000002.
func round6(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	if err != nil {
		return v
	}
	return r
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

package htmlreport

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/compare"
	"github.com/rlbench/rlbench/internal/chromiumtest"
	"github.com/rlbench/rlbench/internal/golden"
	"github.com/rlbench/rlbench/results"
)

func ptr[T any](v T) *T { return &v }

// curveOf is a plausible percentile curve rising from p0 µs.
func curveOf(p0 float64) []results.Percentile {
	qs := []float64{0, 50, 90, 99, 99.9, 99.99, 100}
	out := make([]results.Percentile, len(qs))
	for i, q := range qs {
		out[i] = results.Percentile{Quantile: q, ValueUS: p0 * float64(1+i*i)}
	}
	return out
}

// fixedReports are two hand-built reports of the same command: naive
// (leaking, with a restart fault, errors and no saturation after the
// restart) and lua on go-redis; the second file has a cell of its own that
// recorded nothing.
func fixedReports() []*results.Report {
	server := results.Server{Addr: "127.0.0.1:40123", Name: "redis", Version: "7.0.15", Managed: true}
	started := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	naive := func(thr float64, immortal int64) results.Run {
		return results.Run{
			Cell:         results.Cell{Strategy: "naive", Client: "go-redis", ClientOptions: "pool_size=200 protocol=3 retries=off", Workers: 200},
			Load:         results.Load{DurationS: 3.2, Decisions: int64(thr * 3.2), Allowed: int64(thr*3.2) - 40, Errors: 40, ErrorKinds: map[string]int64{"conn-refused": 30, "conn-reset": 10}, ThroughputPerS: thr, LatencyUS: results.Latency{P50: 3071, P90: 5119, P99: 8639, P999: 13119, Max: 27823, Mean: 3210.4}},
			Outage:       results.Outage{OnError: "open", Admitted: int64(thr * 3.2)},
			Faults:       []results.FaultEvent{{Fault: "restart@1s", AtS: 1.0004, Detail: "server restarted in 48ms"}},
			PerSecond:    []results.Second{{T: 1, Decisions: 60000, Allowed: 60000}, {T: 2, Decisions: 30000, Allowed: 29960, Errors: 40}, {T: 3, Decisions: 61000, Allowed: 61000}, {T: 3.2, Decisions: 12000, Allowed: 12000}},
			Admission:    results.Admission{OverAdmitted: ptr(int64(25)), MaxAdmittedPerWindow: 265},
			Audits:       results.Audits{Audit: results.Audit{Keys: 10, Immortal: immortal}},
			Distribution: results.Distribution{Percentiles: curveOf(200)},
		}
	}
	lua := func(thr float64) results.Run {
		return results.Run{
			Cell:      results.Cell{Strategy: "lua", Client: "go-redis", ClientOptions: "pool_size=200 protocol=3 retries=off", Workers: 200},
			Load:      results.Load{DurationS: 3.1, Decisions: int64(thr * 3.1), Allowed: int64(thr * 3.1), ErrorKinds: map[string]int64{}, ThroughputPerS: thr, LatencyUS: results.Latency{P50: 2201, P90: 4011, P99: 6143, P999: 9919, Max: 19411, Mean: 2311.5}},
			Outage:    results.Outage{OnError: "open", Admitted: int64(thr * 3.1)},
			PerSecond: []results.Second{{T: 1, Decisions: 86000, Allowed: 86000}, {T: 2, Decisions: 87000, Allowed: 87000}, {T: 3, Decisions: 86500, Allowed: 86500}, {T: 3.1, Decisions: 8000, Allowed: 8000}},
			Admission: results.Admission{OverAdmitted: ptr(int64(0)), MaxAdmittedPerWindow: 200},
			Saturation: &results.Saturation{ClientCPU: 0.93, ServerCPU: 0.75, ConnectionsOpened: 200, PeakRSSBytes: 60 << 20,
				Verdict: "client-bound: Redis had CPU to spare: the figures measure rlbench, not Redis"},
			ScriptFallbacks: 3,
			Audits:          results.Audits{Audit: results.Audit{Keys: 10}},
			Distribution:    results.Distribution{Percentiles: curveOf(150)},
		}
	}
	return []*results.Report{
		{Tool: "rlbench", Started: started, Server: server, Config: map[string]any{"limit": 1000000, "window_s": 1}, Runs: []results.Run{
			naive(51000, 9), lua(86158),
		}},
		{Tool: "rlbench", Started: started.Add(time.Minute), Server: server, Config: map[string]any{"limit": 1000000, "window_s": 1}, Runs: []results.Run{
			naive(49000, 10), lua(90512),
			{Cell: results.Cell{Strategy: "gcra", Client: "go-redis"}, Load: results.Load{ErrorKinds: map[string]int64{}}, Outage: results.Outage{OnError: "open"}},
		}},
	}
}

// writeFixture writes the fixed reports with results.JSON into dir, adds the
// fields a newer rlbench might write (an environment at the top, a field in
// each run), and reads them back as a Comparison.
func writeFixture(t *testing.T, dir string) (*compare.Comparison, []string) {
	t.Helper()
	var paths []string
	for i, rep := range fixedReports() {
		var buf bytes.Buffer
		if err := results.JSON(rep)(&buf); err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		doc["host"] = map[string]any{"go_version": "go1.26.8", "num_cpu": 2, "<script>": "escaped"}
		for _, r := range doc["runs"].([]any) {
			r.(map[string]any)["client_version"] = "v9.23.0"
		}
		data, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "run"+strconv.Itoa(i+1)+".json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	files, err := compare.ReadFiles(paths)
	if err != nil {
		t.Fatalf("compare.ReadFiles error: %v", err)
	}
	return compare.New(files), paths
}

// render writes the page for c.
func render(t *testing.T, c *compare.Comparison) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := HTML(c, Options{})(&buf); err != nil {
		t.Fatalf("HTML error: %v", err)
	}
	return buf.Bytes()
}

// TestHTMLGolden compares the page for the fixed reports with its golden
// file, the vendored Chart.js left out.
func TestHTMLGolden(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, _ := writeFixture(t, dir)
	page := render(t, c)
	if n := bytes.Count(page, []byte(chartJS)); n != 1 {
		t.Fatalf("the page holds Chart.js %d times; want once", n)
	}
	page = bytes.Replace(page, []byte(chartJS), []byte("/* Chart.js "+ChartJSVersion+" */"), 1)
	page = bytes.ReplaceAll(page, []byte(dir+string(filepath.Separator)), nil)
	golden.Check(t, "report.html", page)
}

// TestHTMLPartial checks that a run that did not finish (the file of an
// interrupted rlbench) is flagged in its row and in the file's legend.
func TestHTMLPartial(t *testing.T) {
	t.Parallel()
	reps := fixedReports()
	reps[1].Interrupted = true
	reps[1].Runs[1].Incomplete = true
	dir := t.TempDir()
	var paths []string
	for i, rep := range reps {
		var buf bytes.Buffer
		if err := results.JSON(rep)(&buf); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "run"+strconv.Itoa(i+1)+".json")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	files, err := compare.ReadFiles(paths)
	if err != nil {
		t.Fatal(err)
	}
	page := string(render(t, compare.New(files)))
	for _, want := range []string{"(did not finish)", "INTERRUPTED, 1 run did not finish"} {
		if n := strings.Count(page, want); n != 1 {
			t.Errorf("the page says %q %d times; want once", want, n)
		}
	}
}

// TestHTMLSettingsApart is issue 22, item 10, in the report: the second
// file ran with 50 workers, not 200, so its runs are cells of their own,
// titled with the setting, and its legend names it.
func TestHTMLSettingsApart(t *testing.T) {
	t.Parallel()
	reps := fixedReports()
	reps[0].Config = map[string]any{"limit": 1000000, "window_s": 1, "workload": map[string]any{"clients": 200}}
	reps[1].Config = map[string]any{"limit": 1000000, "window_s": 1, "workload": map[string]any{"clients": 50}}
	dir := t.TempDir()
	var paths []string
	for i, rep := range reps {
		var buf bytes.Buffer
		if err := results.JSON(rep)(&buf); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "run"+strconv.Itoa(i+1)+".json")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	files, err := compare.ReadFiles(paths)
	if err != nil {
		t.Fatal(err)
	}
	page := string(render(t, compare.New(files)))
	for _, want := range []string{
		"redis 7.0.15 naive/go-redis (clients=200)", "redis 7.0.15 naive/go-redis (clients=50)",
		"settings that differ: clients=50",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "throughput min") {
		t.Errorf("the page has a spread; want none (no cell ran twice with the same settings)")
	}
}

// external matches whatever would make the page load something: a src or
// href to another document, a stylesheet link, a CSS import or url().
var external = regexp.MustCompile(`(?i:\bsrc\s*=|\bhref\s*=\s*["']?[^"'#\s>]|<link\b|@import)|\burl\(`)

// TestExternal checks the pattern that finds what a page would load.
func TestExternal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{`<script src="https://cdn.example/chart.js"></script>`, true},
		{`<link rel="stylesheet" href="s.css">`, true},
		{`<a href="https://www.chartjs.org">`, true},
		{`<img SRC=x.png>`, true},
		{`body { background: url(x.png) }`, true},
		{`@import "x.css";`, true},
		{`<a href="#cell-1">`, false},
		{`return this.canvas.toDataURL(...t)`, false},
		{`<p>the source = a file</p>`, false},
	}
	for _, tc := range tests {
		if got := external.MatchString(tc.in); got != tc.want {
			t.Errorf("external.MatchString(%q) = %t; want %t", tc.in, got, tc.want)
		}
	}
}

// TestHTMLSelfContained checks that the page needs no network and escapes
// what the files hold.
func TestHTMLSelfContained(t *testing.T) {
	t.Parallel()
	c, _ := writeFixture(t, t.TempDir())
	page := string(render(t, c))
	if m := external.FindAllString(page, -1); len(m) > 0 {
		t.Errorf("the page refers to other documents: %q; want everything inlined", m)
	}
	if !strings.Contains(page, "Chart.js v"+ChartJSVersion) {
		t.Errorf("the page does not hold Chart.js v%s", ChartJSVersion)
	}
	if !strings.Contains(page, "host.&lt;script&gt;") {
		t.Errorf("a field named <script> in a file is not escaped in the page")
	}
	for _, want := range []string{"host.go_version", "go1.26.8", "client_version", "pool_size=200 protocol=3 retries=off",
		"client-bound: Redis had CPU to spare", "restart@1s", "conn-refused=30 conn-reset=10", "&#34;window_s&#34;: 1"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
}

// TestChartJSVendored checks that the embedded library is the version the
// package doc names, and that its licence sits beside it.
func TestChartJSVendored(t *testing.T) {
	t.Parallel()
	if !strings.HasPrefix(chartJS, "/*!\n * Chart.js v"+ChartJSVersion+"\n") {
		t.Errorf("assets/chart.umd.min.js starts %q; want the Chart.js v%s banner", chartJS[:min(len(chartJS), 40)], ChartJSVersion)
	}
	lic, err := os.ReadFile(filepath.Join("assets", "chart.js.LICENSE.md"))
	if err != nil || !bytes.Contains(lic, []byte("The MIT License")) {
		t.Errorf("assets/chart.js.LICENSE.md: %v; want the MIT licence", err)
	}
	if strings.Contains(strings.ToLower(chartJS), "</script") {
		t.Errorf("assets/chart.umd.min.js holds </script, which would end its inline <script> early")
	}
}

// TestCharts counts the charts of the fixed page: the overview and the
// immortal keys, then two per cell, none for the cell that recorded nothing.
func TestCharts(t *testing.T) {
	t.Parallel()
	c, _ := writeFixture(t, t.TempDir())
	if got, want := Charts(c), 2+2+2; got != want {
		t.Errorf("Charts(fixture) = %d; want %d", got, want)
	}
	if got := Charts(&compare.Comparison{}); got != 0 {
		t.Errorf("Charts(empty) = %d; want 0", got)
	}
	page := string(render(t, c))
	if got := strings.Count(page, "<canvas "); got != Charts(c) {
		t.Errorf("the page has %d canvases; want Charts() = %d", got, Charts(c))
	}
}

func TestCurve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  results.Run
		want [][2]float64
	}{
		{
			name: "percentiles: q=100 and zero latencies left out",
			run: results.Run{
				Load:         results.Load{Decisions: 5},
				Distribution: results.Distribution{Percentiles: []results.Percentile{{Quantile: 0, ValueUS: 0}, {Quantile: 50, ValueUS: 10}, {Quantile: 99, ValueUS: 40}, {Quantile: 100, ValueUS: 90}}},
			},
			want: [][2]float64{{2, 10}, {100, 40}},
		},
		{
			name: "a file without percentiles: the summary",
			run: results.Run{
				Load: results.Load{Decisions: 5, LatencyUS: results.Latency{P50: 10, P90: 20, P99: 40, P999: 80}},
			},
			want: [][2]float64{{2, 10}, {10, 20}, {100, 40}, {1000, 80}},
		},
		{name: "nothing recorded", run: results.Run{}, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := curve(&tc.run)
			if !slices.EqualFunc(got, tc.want, func(a, b [2]float64) bool { return near(a[0], b[0]) && near(a[1], b[1]) }) {
				t.Errorf("curve(%+v) = %v; want %v", tc.run, got, tc.want)
			}
		})
	}
}

func TestSeries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []results.Second
		want [][3]float64
	}{
		{
			name: "whole seconds, then a part-second as a rate",
			in:   []results.Second{{T: 1, Decisions: 100, Errors: 1}, {T: 2, Decisions: 80}, {T: 2.5, Decisions: 40, Errors: 5}},
			want: [][3]float64{{1, 100, 1}, {2, 80, 0}, {2.5, 80, 10}},
		},
		{
			name: "a tick late by a little: the rate over the real interval",
			in:   []results.Second{{T: 1.25, Decisions: 100}, {T: 2.25, Decisions: 100}},
			want: [][3]float64{{1.25, 80, 0}, {2.25, 100, 0}},
		},
		{
			name: "a last sliver too short to be a rate",
			in:   []results.Second{{T: 1, Decisions: 100}, {T: 1.01, Decisions: 3}},
			want: [][3]float64{{1, 100, 0}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := series(&results.Run{
				PerSecond: tc.in,
			})
			if !slices.EqualFunc(got, tc.want, func(a, b [3]float64) bool { return near(a[0], b[0]) && near(a[1], b[1]) && near(a[2], b[2]) }) {
				t.Errorf("series(%v) = %v; want %v", tc.in, got, tc.want)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestHTMLInChromium opens the fixed page in headless Chromium and checks
// that the page's script drew every chart with ink on its canvas.
// RLBENCH_REPORT_SCREENSHOT=FILE.png also saves a screenshot of the page.
func TestHTMLInChromium(t *testing.T) {
	t.Parallel()
	chromiumtest.Find(t)
	dir := t.TempDir()
	c, _ := writeFixture(t, dir)
	path := filepath.Join(dir, "report.html")
	if err := os.WriteFile(path, render(t, c), 0o644); err != nil {
		t.Fatal(err)
	}
	checkDrawn(t, path, Charts(c))
	if png := os.Getenv("RLBENCH_REPORT_SCREENSHOT"); png != "" {
		chromiumtest.Screenshot(t, path, png, 1400, 2400)
	}
}

// checkDrawn loads the page at path in headless Chromium and fails t unless
// its body says that want charts were drawn and no script failed.
func checkDrawn(t *testing.T, path string, want int) {
	t.Helper()
	dom := chromiumtest.DumpDOM(t, path)
	attrs, err := chromiumtest.BodyAttrs(dom)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := attrs[ErrorAttr]; ok {
		t.Errorf("the page's script failed in Chromium: %s", e)
	}
	total, drawn := attrs[TotalAttr], attrs[DrawnAttr]
	if total != strconv.Itoa(want) || drawn != total {
		t.Errorf("in Chromium, body data-charts-drawn = %q of data-charts-total = %q; want %d of %d", drawn, total, want, want)
	}
}

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/compare"
	"github.com/rlbench/rlbench/htmlreport"
	"github.com/rlbench/rlbench/internal/chromiumtest"
)

// external matches whatever would make a page load something: a src or
// href to another document, a stylesheet link, a CSS import or url().
var external = regexp.MustCompile(`(?i:\bsrc\s*=|\bhref\s*=\s*["']?[^"'#\s>]|<link\b|@import)|\burl\(`)

// TestReportRealRuns writes the page for two files written by real runs,
// checks that it is self-contained, then opens it in headless Chromium and
// checks that every chart was drawn: the overview, the immortal keys, and
// per cell the percentile curve and the time series with its fault.
// RLBENCH_REPORT_SCREENSHOT=FILE.png also saves a screenshot of the page.
func TestReportRealRuns(t *testing.T) {
	t.Parallel()
	chromiumtest.Find(t) // before the runs: without Chromium, skip or fail at once
	paths := realReports(t, 2)
	out := filepath.Join(t.TempDir(), "report.html")
	res := mustRun(t, exitOK, append([]string{"report", "--title", "real runs <&>"}, append(paths, "-o", out)...)...)

	files, err := compare.ReadFiles(paths)
	if err != nil {
		t.Fatal(err)
	}
	c := compare.New(files)
	charts := htmlreport.Charts(c)
	if want := 2 + 2*len(c.Cells); len(c.Cells) != 2 || charts != want {
		t.Fatalf("the real runs give %d cells and %d charts; want 2 cells and %d charts", len(c.Cells), charts, want)
	}
	if want := "wrote " + out + ": 2 cells from 2 files, " + strconv.Itoa(charts) + " charts"; !strings.Contains(res.stderr, want) {
		t.Errorf("rlbench report stderr = %q; want it to say %q", res.stderr, want)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	if m := external.FindAllString(page, -1); len(m) > 0 {
		t.Errorf("the page refers to other documents: %q; want everything inlined", m)
	}
	for _, want := range []string{"<title>real runs &lt;&amp;&gt;</title>", "Chart.js v" + htmlreport.ChartJSVersion, "kill-clients@600ms"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not hold %q", want)
		}
	}
	for _, cell := range c.Cells {
		if !strings.Contains(page, cell.Key.String()) {
			t.Errorf("the page does not name cell %q", cell.Key)
		}
	}

	attrs, err := chromiumtest.BodyAttrs(chromiumtest.DumpDOM(t, out))
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := attrs[htmlreport.ErrorAttr]; ok {
		t.Errorf("the page's script failed in Chromium: %s", e)
	}
	total, drawn := attrs[htmlreport.TotalAttr], attrs[htmlreport.DrawnAttr]
	if total != strconv.Itoa(charts) || drawn != total {
		t.Errorf("in Chromium, body %s = %q of %s = %q; want %d of %d", htmlreport.DrawnAttr, drawn, htmlreport.TotalAttr, total, charts, charts)
	}
	if png := os.Getenv("RLBENCH_REPORT_SCREENSHOT"); png != "" {
		chromiumtest.Screenshot(t, out, png, 1400, 2400)
	}
}

// TestReportOutput checks where the page goes: -o - is stdout; an output
// that cannot be written is bad input.
func TestReportOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.json")
	if err := os.WriteFile(in, []byte(`{"tool":"rlbench","runs":[{"strategy":"lua","client":"go-redis","decisions":1,"latency_percentiles":[{"q":50,"us":90}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, exitOK, "report", in, "-o", "-")
	if !strings.HasPrefix(res.stdout, "<!DOCTYPE html>") || !strings.Contains(res.stdout, `data-charts-total="3"`) {
		t.Errorf("rlbench report -o - wrote %d bytes starting %q; want the page with 3 charts", len(res.stdout), res.stdout[:min(len(res.stdout), 60)])
	}
	for _, unwritable := range []string{filepath.Join(dir, "no-such-dir", "r.html"), dir} {
		res = mustRun(t, exitUsage, "report", in, "-o", unwritable)
		if !strings.Contains(res.stderr, "-o: cannot write "+unwritable+": ") {
			t.Errorf("rlbench report -o %s stderr = %q; want it to name -o and the file", unwritable, res.stderr)
		}
	}
}

// TestReportRefusesANullRun is issue 34, item 19: report drew an empty cell
// of a file whose runs[0] is null. A null run is bad input to report,
// compare and merge alike (they read through results.ReadFile), naming the
// file and the run.
func TestReportRefusesANullRun(t *testing.T) {
	t.Parallel()
	paths := realReports(t, 2)
	rewriteJSON(t, paths[1], func(rep map[string]any) { rep["runs"].([]any)[0] = nil })
	dir := t.TempDir()
	for _, args := range [][]string{
		{"report", paths[1], "-o", filepath.Join(dir, "page.html")},
		{"compare", paths[0], paths[1]},
		{"merge", paths[0], paths[1], "-o", filepath.Join(dir, "all.json")},
	} {
		res := mustRun(t, exitUsage, args...)
		if want := paths[1] + ": read report: runs[0] is null"; !strings.Contains(res.stderr, want) {
			t.Errorf("rlbench %q stderr = %q; want %q", args, res.stderr, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "page.html")); err == nil {
		t.Errorf("rlbench report of a null run wrote its page; want none")
	}
}

package htmlreport

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/compare"
	"github.com/rlbench/rlbench/results"
)

// fixedAudit is a hand-built audit of a 2-master cluster, with a pattern
// that would be markup if it were not escaped.
func fixedAudit() audit.Report {
	r := audit.Report{Tool: audit.ReportTool, Match: "rl:<b>*", Complete: true, ElapsedS: 2, KeysPerS: 500}
	r.Settings.Limit, r.Settings.MaxTTLS = 100, 60
	r.Findings = audit.Findings{Keys: 1000, WithTTL: 960, Immortal: 40, TTLOverMax: 3, LockedOut: 7}
	r.TTL = audit.Buckets{Under1s: 10, Under10s: 200, Under1m: 747, Under10m: 3}
	r.PerNode = []audit.NodeReport{
		{Addr: "10.0.0.1:6379", Complete: true, Findings: audit.Findings{Keys: 600, Immortal: 30}},
		{Addr: "10.0.0.2:6379", Complete: true, Findings: audit.Findings{Keys: 400, Immortal: 10}},
	}
	return r
}

// TestHTMLAudits renders a page with an audit file and no load run: the
// section shows every figure and bar, escapes the pattern, and adds no
// chart; a page without audits has no such section.
func TestHTMLAudits(t *testing.T) {
	t.Parallel()
	var page bytes.Buffer
	c := compare.New(nil)
	opts := Options{Audits: []AuditFile{{Path: "dir/prod.json", Report: fixedAudit()}}}
	if err := HTML(c, opts)(&page); err != nil {
		t.Fatalf("HTML() error: %v", err)
	}
	html := page.String()
	for _, want := range []string{
		`<section id="audits">`, "prod.json: MATCH <code>rl:&lt;b&gt;*</code>", "1000 keys examined",
		`<strong class="bad">40 immortal</strong>`, "3 with a TTL over 60 s", "7 locked out (value &ge; 100)",
		`<td>&lt;10s</td><td class="num">200</td>`, `style="width:26.7%"`, `style="width:100%"`,
		"<code>10.0.0.1:6379</code></td><td class=\"num\">600</td><td class=\"num\">30</td>",
		`data-charts-total="0"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML() with an audit lacks %q", want)
		}
	}
	page.Reset()
	if err := HTML(c, Options{})(&page); err != nil || strings.Contains(page.String(), `id="audits"`) {
		t.Errorf("HTML() without audits = %v, audits section present %t; want none", err, strings.Contains(page.String(), `id="audits"`))
	}
}

// TestHTMLStaleApart is issue 35, item 7: for keys that carry their window
// (--window-stamp in an audit file, a stamped strategy in a load run) the
// page shows the stale immortal keys (window ended: leaked memory, nobody
// locked out) apart from the live ones, as the text does, and marks as bad
// only the live ones.
func TestHTMLStaleApart(t *testing.T) {
	t.Parallel()
	r := fixedAudit()
	r.Settings.WindowStamp, r.Settings.WindowS = "unix", 60
	r.Immortal, r.LockedOut = 250, 7
	r.StaleFindings = &audit.StaleFindings{Stale: 200}
	r.PerNode[0].StaleFindings = &audit.StaleFindings{Stale: 150}
	r.PerNode[1].StaleFindings = &audit.StaleFindings{Stale: 50}
	var page bytes.Buffer
	if err := HTML(compare.New(nil), Options{Audits: []AuditFile{{Path: "stamped.json", Report: r}}})(&page); err != nil {
		t.Fatalf("HTML() error: %v", err)
	}
	html := page.String()
	for _, want := range []string{
		`<td>no TTL, stale (window ended)</td><td class="num">200</td><td class="barcell"><span class="bar stale"`,
		`<td>no TTL, live (window not ended)</td><td class="num">50</td><td class="barcell"><span class="bar bad"`,
		`(200 stale: window ended, leaked memory, nobody locked out; <strong class="bad">50 live</strong>`,
		`<th>stale</th>`, `<td class="num">30</td><td class="num">150</td>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML() of a stamped audit lacks %q", want)
		}
	}
	if strings.Contains(html, "no TTL (immortal)") {
		t.Errorf("HTML() of a stamped audit has the bar %q; want stale and live apart", "no TTL (immortal)")
	}

	// A load run of a stamped strategy: all stale, then some live.
	for _, tc := range []struct {
		name  string
		stale int64
		want  string
	}{
		{name: "all stale", stale: 250, want: `<td class="num">250 (250 stale)</td>`},
		{name: "some live", stale: 200, want: `<td class="num bad">250 (200 stale)</td>`},
	} {
		rep := &results.Report{Tool: "rlbench", Runs: []results.Run{{
			Cell:   results.Cell{Strategy: "fixed-window-stamp", Client: "go-redis", Workers: 10},
			Load:   results.Load{DurationS: 1, Decisions: 100, Allowed: 100, ErrorKinds: map[string]int64{}, ThroughputPerS: 100},
			Outage: results.Outage{OnError: "open", Admitted: 100},
			Audits: results.Audits{Audit: results.Audit{Keys: 300, Immortal: 250, Stamp: "unix", Stale: &tc.stale}},
		}}}
		var buf bytes.Buffer
		if err := results.JSON(rep)(&buf); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "run.json")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files, err := compare.ReadFiles([]string{path})
		if err != nil {
			t.Fatal(err)
		}
		if page := string(render(t, compare.New(files))); !strings.Contains(page, tc.want) {
			t.Errorf("%s: the page lacks %q", tc.name, tc.want)
		}
	}
}

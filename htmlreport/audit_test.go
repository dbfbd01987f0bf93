package htmlreport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/compare"
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

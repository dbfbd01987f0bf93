package htmlreport

import (
	"bytes"
	"fmt"
	"html/template"
	"path/filepath"

	"github.com/rlbench/rlbench/audit"
)

// AuditFile is one file written by `rlbench audit --json`, shown on the page
// beside the load runs: its TTL distribution and its immortal keys per
// master, as bars drawn in HTML (they are not counted in Charts).
type AuditFile struct {
	// Path is the file's path, as given.
	Path string
	// Report is the file's content.
	Report audit.Report
}

// auditPage renders the audits section; html/template escapes every key,
// pattern and address.
var auditPage = template.Must(template.New("audits").Parse(`
<section id="audits">
<style>
#audits .bar{display:inline-block;height:0.9em;background:#4e79a7;vertical-align:middle}
#audits .bar.bad{background:#e15759}
#audits .bar.stale{background:#f28e2b}
#audits td.barcell{width:50%}
</style>
<h2>Keyspace audits</h2>
<p class="note">Files written by <code>rlbench audit --json</code>: the keys matching a pattern on a server rlbench did not write. Immortal keys have no TTL; locked out are immortal counters at or over the limit. With <code>--window-stamp</code> the immortal keys are split by the window in their name: a stale one (its window ended) leaks memory and locks nobody out; a live one (its window not ended) is what locks users out.</p>
{{- range .}}{{$audit := .}}
<h3>{{.Name}}: MATCH <code>{{.Match}}</code>{{if not .Complete}} (INCOMPLETE: {{.Error}}){{end}}</h3>
<p>{{.Keys}} keys examined in {{printf "%.2f" .ElapsedS}} s ({{printf "%.0f" .KeysPerS}} keys/s): {{.WithTTL}} with a TTL, <strong{{if .Live}} class="bad"{{end}}>{{.Immortal}} immortal</strong>{{if .StaleFindings}} ({{.Stale}} stale: window ended, leaked memory, nobody locked out; <strong{{if .Live}} class="bad"{{end}}>{{.Live}} live</strong>: window not ended){{end}}, {{.Vanished}} vanished{{if .MaxTTL}}, {{.TTLOverMax}} with a TTL over {{.MaxTTL}}{{end}}{{if .Limit}}, {{.LockedOut}} locked out (value &ge; {{.Limit}}){{end}}. Audit latency: SCAN p99 {{.ScanP99}} µs, PTTL pipeline p99 {{.PipelineP99}} µs.</p>
<table class="audit-ttl">
<thead><tr><th>TTL</th><th>keys</th><th></th></tr></thead>
<tbody>
{{- range .Buckets}}
<tr><td>{{.Label}}</td><td class="num">{{.N}}</td><td class="barcell"><span class="bar{{if .Bad}} bad{{end}}{{if .Stale}} stale{{end}}" style="width:{{.Width}}%"></span></td></tr>
{{- end}}
</tbody>
</table>
{{- if .Nodes}}
<table class="audit-nodes">
<thead><tr><th>master</th><th>keys</th><th>immortal</th>{{if .StaleFindings}}<th>stale</th>{{end}}<th></th></tr></thead>
<tbody>
{{- range .Nodes}}
<tr><td><code>{{.Label}}</code></td><td class="num">{{.Keys}}</td><td class="num">{{.N}}</td>{{if $audit.StaleFindings}}<td class="num">{{.StaleN}}</td>{{end}}<td class="barcell"><span class="bar bad" style="width:{{.Width}}%"></span></td></tr>
{{- end}}
</tbody>
</table>
{{- end}}
{{- end}}
</section>`))

// auditView is one audit file as auditPage renders it.
type auditView struct {
	audit.Report
	// Live is the immortal keys whose window has not ended (all of them
	// without --window-stamp): those that lock users out.
	Live                 int64
	Name                 string
	MaxTTL               string
	Limit                int64
	ScanP99, PipelineP99 float64
	Buckets, Nodes       []barView
}

// barView is one bar: a label, a count and its width in percent of the
// largest of its table.
type barView struct {
	Label string
	Keys  int64
	N     int64
	// StaleN is a node's stale immortal keys, with --window-stamp.
	StaleN int64
	Width  float64
	// Bad marks keys that lock users out, Stale leaked ones that do not.
	Bad, Stale bool
}

// auditSection renders the audits, or nothing when there are none.
func auditSection(files []AuditFile) (template.HTML, error) {
	if len(files) == 0 {
		return "", nil
	}
	views := make([]auditView, len(files))
	for i, f := range files {
		r := f.Report
		v := auditView{Report: r, Name: filepath.Base(f.Path), Limit: r.Settings.Limit,
			ScanP99: r.Cost.Scan.P99US, PipelineP99: r.Cost.Pipeline.P99US}
		if r.Settings.MaxTTLS > 0 {
			v.MaxTTL = fmt.Sprintf("%g s", r.Settings.MaxTTLS)
		}
		v.Live = r.Immortal
		if f := r.StaleFindings; f != nil {
			// Apart, as the text shows them: a stale key locks no one out.
			v.Live -= f.Stale
			v.Buckets = append(v.Buckets,
				barView{Label: "no TTL, stale (window ended)", N: f.Stale, Stale: true},
				barView{Label: "no TTL, live (window not ended)", N: v.Live, Bad: true})
		} else {
			v.Buckets = append(v.Buckets, barView{Label: "no TTL (immortal)", N: r.Immortal, Bad: true})
		}
		for bi, n := range r.TTL.Counts() {
			v.Buckets = append(v.Buckets, barView{Label: audit.BucketLabels[bi], N: n})
		}
		for _, n := range r.PerNode {
			bar := barView{Label: n.Addr, Keys: n.Keys, N: n.Immortal}
			if n.StaleFindings != nil {
				bar.StaleN = n.Stale
			}
			v.Nodes = append(v.Nodes, bar)
		}
		scaleBars(v.Buckets)
		scaleBars(v.Nodes)
		views[i] = v
	}
	var b bytes.Buffer
	if err := auditPage.Execute(&b, views); err != nil {
		return "", fmt.Errorf("audits: %w", err)
	}
	return template.HTML(b.String()), nil
}

// scaleBars sets each bar's width relative to the largest N.
func scaleBars(bars []barView) {
	var top int64
	for _, b := range bars {
		top = max(top, b.N)
	}
	for i := range bars {
		if top > 0 {
			bars[i].Width = float64(int(1000*float64(bars[i].N)/float64(top))) / 10
		}
	}
}

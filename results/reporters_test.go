package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/golden"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// fixedReport is a hand-built report: two runs, the first with immortal keys
// and errors, the second clean.
func fixedReport() *Report {
	return &Report{
		Tool:    "rlbench",
		Started: time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC),
		Server:  Server{Addr: "127.0.0.1:46379", Name: "redis", Version: "7.2.4", Managed: true},
		Config: map[string]any{
			"clients":  500,
			"duration": "10s",
			"limit":    100,
			"window_s": 60,
		},
		Runs: []Run{
			{
				Cell: Cell{Strategy: "naive", Client: "go-redis", ClientOptions: "pool_size=500", Workers: 500},
				Load: Load{
					DurationS: 10.0012, Decisions: 412035, Allowed: 40007, Rejected: 372021, Errors: 7,
					ErrorKinds:     map[string]int64{"timeout": 3, "WRONGTYPE": 1, "conn-reset": 3},
					ThroughputPerS: 41198.56,
					LatencyUS:      Latency{P50: 183, P90: 611, P99: 1207, P999: 4511, Max: 2_503_000, Mean: 240.25},
				},
				Audits:     Audits{Audit: Audit{Keys: 400, Immortal: 7, TTLOverWindow: 2, Vanished: 1}},
				Outage:     Outage{OnError: "open", Admitted: 40014},
				Admission:  Admission{OverAdmitted: ptr(int64(12)), MaxAdmittedPerWindow: 188},
				Saturation: &Saturation{ClientCPU: 0.91, ClientCPUs: 2, ServerCPU: 0.8, ConnectionsOpened: 6, PeakRSSBytes: 96 << 20, Verdict: "client-bound: Redis had CPU to spare: the figures measure rlbench, not Redis"},
				Faults:     []FaultEvent{{Fault: "restart@2s", AtS: 2.0004, Detail: "server restarted in 52ms"}, {Fault: "stall@3s:500ms", AtS: 3.0001, Error: "ERR boom"}},
				PerSecond:  []Second{{T: 1, Decisions: 41000, Allowed: 4000, Rejected: 37000}, {T: 2, Decisions: 12000, Allowed: 1200, Rejected: 10793, Errors: 7}, {T: 3, Decisions: 40500, Allowed: 4000, Rejected: 36500}},
			},
			{
				Cell: Cell{Strategy: "lua", Client: "rueidis", ClientOptions: "pipeline_multiplex=2", Workers: 500},
				Load: Load{
					DurationS: 10.0004, Decisions: 803117, Allowed: 40000, Rejected: 763117,
					ErrorKinds:     map[string]int64{},
					ThroughputPerS: 80308.49,
					LatencyUS:      Latency{P50: 95, P90: 140, P99: 310, P999: 999.4, Max: 120_400, Mean: 101.5},
				},
				Audits: Audits{Audit: Audit{Keys: 400}},
			},
		},
	}
}

// TestReportersGolden renders the fixed report with each reporter and
// compares the output with its golden file.
func TestReportersGolden(t *testing.T) {
	tests := []struct {
		name     string
		reporter Reporter
		golden   string
	}{
		{name: "text", reporter: Text(fixedReport()), golden: "report.txt"},
		{name: "json", reporter: JSON(fixedReport()), golden: "report.json"},
		{name: "text with two targets", reporter: Text(twoTargetReport()), golden: "report-targets.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.reporter(&buf); err != nil {
				t.Fatalf("%s(report)(w) = %v; want nil", tc.name, err)
			}
			golden.Check(t, tc.golden, buf.Bytes())
		})
	}
}

// twoTargetReport is the fixed report's runs on two labelled targets, the
// second one slower and without the naive run.
func twoTargetReport() *Report {
	rep := fixedReport()
	a := &Server{Addr: "127.0.0.1:46379", Name: "redis", Version: "7.2.4", Managed: true}
	b := &Server{Addr: "127.0.0.1:46380", Name: "valkey", Version: "8.0.1", Managed: true}
	var runs []Run
	for _, r := range rep.Runs {
		r.Target, r.Server = "redis-7.2", a
		runs = append(runs, r)
	}
	r := rep.Runs[1]
	r.Target, r.Server, r.ThroughputPerS = "valkey-8.0", b, 70000
	rep.Runs = append(runs, r)
	return rep
}

// TestTextUnmanagedNoImmortal checks the header of a server rlbench did not
// start, and that a report without immortal keys carries no warning.
func TestTextUnmanagedNoImmortal(t *testing.T) {
	t.Parallel()
	rep := fixedReport()
	rep.Server.Managed = false
	rep.Runs = rep.Runs[1:]
	var buf bytes.Buffer
	if err := Text(rep)(&buf); err != nil {
		t.Fatalf("Text(report)(w) = %v; want nil", err)
	}
	out := buf.String()
	if want := "server: redis 7.2.4 at 127.0.0.1:46379\n"; !strings.HasPrefix(out, want) {
		t.Errorf("Text(report) starts %q; want %q", strings.SplitAfter(out, "\n")[0], want)
	}
	for _, bad := range []string{"IMMORTAL", "errors:", "private server"} {
		if strings.Contains(out, bad) {
			t.Errorf("Text(report) contains %q; want it absent:\n%s", bad, out)
		}
	}
}

// TestTextImmortalWording checks that the closing warning follows the
// strategy's properties: users locked out forever for a fixed-window
// counter that does not heal, leaked keys for one whose keys get a TTL
// again (Cell.ImmortalKeysLeak).
func TestTextImmortalWording(t *testing.T) {
	t.Parallel()
	lockedOut := "IMMORTAL KEYS: naive/go-redis left 7 counters with no TTL: those users are locked out forever.\n"
	tests := []struct {
		name   string
		leak   []bool // ImmortalKeysLeak of each run: naive (7 immortal), lua (0 or 1)
		luaN   int64  // lua's immortal keys
		design bool   // lua's ImmortalByDesign
		want   []string
		bad    []string
	}{
		{name: "fixed window, no healing", leak: []bool{false, false}, want: []string{lockedOut}, bad: []string{"leaked"}},
		{name: "one leaked key", leak: []bool{true, true}, luaN: 1,
			want: []string{"IMMORTAL KEYS: naive/go-redis left 7 keys with no TTL; lua/rueidis left 1 key with no TTL: leaked (nobody requested them again, which gives a TTL back; nothing\n  will delete them).\n"},
			bad:  []string{"locked out forever"}},
		// Each kind on its own line: the lock-out first, unchanged.
		{name: "both", leak: []bool{false, true}, luaN: 3,
			want: []string{lockedOut + "IMMORTAL KEYS: lua/rueidis left 3 keys with no TTL: leaked ("}},
		// A strategy that sets no TTL (bucket4j's default): no "next
		// request" gives one back.
		{name: "no TTL by design", leak: []bool{false, true}, design: true, luaN: 4,
			want: []string{lockedOut + "IMMORTAL KEYS: lua/rueidis left 4 keys with no TTL: the strategy never sets a TTL, by design (nothing will delete them).\n"},
			bad:  []string{"leaked"}},
		// A run with no immortal key says nothing, whatever it is.
		{name: "leak, none left", leak: []bool{false, true}, want: []string{lockedOut}, bad: []string{"leaked", "lua/rueidis left"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := fixedReport()
			for i, leak := range tc.leak {
				rep.Runs[i].ImmortalKeysLeak = leak
			}
			rep.Runs[1].Audit.Immortal = tc.luaN
			rep.Runs[1].ImmortalByDesign = tc.design
			var buf bytes.Buffer
			if err := Text(rep)(&buf); err != nil {
				t.Fatalf("Text(report)(w) = %v; want nil", err)
			}
			out := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("Text(report) lacks %q:\n%s", w, out)
				}
			}
			for _, b := range tc.bad {
				if strings.Contains(out, b) {
					t.Errorf("Text(report) contains %q; want it absent:\n%s", b, out)
				}
			}
		})
	}
}

// failingWriter fails every write.
type failingWriter struct{}

var errWrite = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

// TestReportersWriteError checks that reporters return write errors wrapped.
func TestReportersWriteError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		reporter Reporter
	}{
		{name: "text", reporter: Text(fixedReport())},
		{name: "json", reporter: JSON(fixedReport())},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.reporter(failingWriter{}); !errors.Is(err, errWrite) {
				t.Errorf("%s(report)(failingWriter) = %v; want an error wrapping %v", tc.name, err, errWrite)
			}
		})
	}
}

// TestJSONRoundTrip checks the JSON key names other tools read and that the
// report decodes back into the same values.
func TestJSONRoundTrip(t *testing.T) {
	t.Parallel()
	rep := fixedReport()
	var buf bytes.Buffer
	if err := JSON(rep)(&buf); err != nil {
		t.Fatalf("JSON(report)(w) = %v; want nil", err)
	}

	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("json.Unmarshal(JSON(report)) = %v; want nil", err)
	}
	paths := []string{
		"tool", "started", "config",
		"server.addr", "server.name", "server.version", "server.managed",
		"runs[].strategy", "runs[].client", "runs[].client_options", "runs[].clients",
		"runs[].duration_s", "runs[].decisions", "runs[].allowed", "runs[].rejected",
		"runs[].errors", "runs[].error_kinds", "runs[].throughput_per_s",
		"runs[].latency_us.p50", "runs[].latency_us.p90", "runs[].latency_us.p99",
		"runs[].latency_us.p999", "runs[].latency_us.max", "runs[].latency_us.mean",
		"runs[].audit.keys", "runs[].audit.immortal", "runs[].audit.ttl_over_window", "runs[].audit.vanished",
	}
	for _, p := range paths {
		if err := hasPath(doc, strings.Split(p, ".")); err != nil {
			t.Errorf("JSON(report) lacks %s: %v", p, err)
		}
	}
	if err := hasPath(doc, []string{"runs[]", "histogram"}); err == nil {
		t.Errorf("JSON(report) has runs[].histogram; want it left out")
	}

	var got Report
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("json.Unmarshal(JSON(report), &Report) = %v; want nil", err)
	}
	if !got.Started.Equal(rep.Started) || got.Server != rep.Server || got.Tool != rep.Tool {
		t.Errorf("round trip header = %v %+v %q; want %v %+v %q", got.Started, got.Server, got.Tool, rep.Started, rep.Server, rep.Tool)
	}
	if len(got.Runs) != len(rep.Runs) {
		t.Fatalf("round trip has %d runs; want %d", len(got.Runs), len(rep.Runs))
	}
	for i := range rep.Runs {
		g, w := got.Runs[i], rep.Runs[i]
		if g.Strategy != w.Strategy || g.Decisions != w.Decisions || g.LatencyUS != w.LatencyUS || g.Audit != w.Audit || len(g.ErrorKinds) != len(w.ErrorKinds) {
			t.Errorf("round trip runs[%d] = %+v; want %+v", i, g, w)
		}
	}
}

// hasPath reports whether doc holds the path, where a "name[]" element
// descends into every element of the array at name.
func hasPath(doc any, path []string) error {
	if len(path) == 0 {
		return nil
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return errors.New("not an object")
	}
	key, each := strings.CutSuffix(path[0], "[]")
	v, ok := obj[key]
	if !ok {
		return errors.New("no key " + key)
	}
	if !each {
		return hasPath(v, path[1:])
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return errors.New(key + " is not a non-empty array")
	}
	for _, el := range arr {
		if err := hasPath(el, path[1:]); err != nil {
			return err
		}
	}
	return nil
}

// TestLatencyOf summarises histograms whose percentiles are known exactly
// (values below 2048 µs are exact at 3 significant digits).
func TestLatencyOf(t *testing.T) {
	t.Parallel()
	oneToThousand := newLatencyHistogram()
	for v := int64(1); v <= 1000; v++ {
		if err := oneToThousand.RecordValue(v); err != nil {
			t.Fatalf("RecordValue(%d) = %v; want nil", v, err)
		}
	}
	single := newLatencyHistogram()
	if err := single.RecordValues(183, 10); err != nil {
		t.Fatalf("RecordValues(183, 10) = %v; want nil", err)
	}
	tests := []struct {
		name string
		h    *hdrhistogram.Histogram
		want Latency
	}{
		{name: "nil", h: nil, want: Latency{}},
		{name: "empty", h: newLatencyHistogram(), want: Latency{}},
		{name: "1..1000µs once each", h: oneToThousand, want: Latency{P50: 500, P90: 900, P99: 990, P999: 999, Max: 1000, Mean: 500.5}},
		{name: "one value", h: single, want: Latency{P50: 183, P90: 183, P99: 183, P999: 183, Max: 183, Mean: 183}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := LatencyOf(tc.h); got != tc.want {
				t.Errorf("LatencyOf(%s) = %+v; want %+v", tc.name, got, tc.want)
			}
		})
	}
}

// TestNewRun builds a Run from a Recorder.
func TestNewRun(t *testing.T) {
	t.Parallel()
	var rec Recorder
	for i := range 300 {
		switch i % 3 {
		case 0:
			rec.Record(i, 100*time.Microsecond, true, nil)
		case 1:
			rec.Record(i, 200*time.Microsecond, false, nil)
		case 2:
			rec.Record(i, 300*time.Microsecond, false, errWrite)
		}
	}
	tests := []struct {
		name    string
		elapsed time.Duration
		wantThr float64
	}{
		{name: "two seconds", elapsed: 2 * time.Second, wantThr: 150},
		{name: "zero elapsed", elapsed: 0, wantThr: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := NewRun(&rec, tc.elapsed)
			if run.Decisions != 300 || run.Allowed != 100 || run.Rejected != 100 || run.Errors != 100 {
				t.Errorf("NewRun(rec, %v) counts = %d/%d/%d/%d; want 300/100/100/100", tc.elapsed, run.Decisions, run.Allowed, run.Rejected, run.Errors)
			}
			if run.ThroughputPerS != tc.wantThr {
				t.Errorf("NewRun(rec, %v).ThroughputPerS = %v; want %v", tc.elapsed, run.ThroughputPerS, tc.wantThr)
			}
			if run.DurationS != tc.elapsed.Seconds() {
				t.Errorf("NewRun(rec, %v).DurationS = %v; want %v", tc.elapsed, run.DurationS, tc.elapsed.Seconds())
			}
			if got := run.ErrorKinds[KindOther]; got != 100 {
				t.Errorf("NewRun(rec, %v).ErrorKinds[%q] = %d; want 100", tc.elapsed, KindOther, got)
			}
			want := Latency{P50: 200, P90: 300, P99: 300, P999: 300, Max: 300, Mean: 200}
			if run.LatencyUS != want {
				t.Errorf("NewRun(rec, %v).LatencyUS = %+v; want %+v", tc.elapsed, run.LatencyUS, want)
			}
			if run.Histogram == nil || run.Histogram.TotalCount() != 300 {
				t.Errorf("NewRun(rec, %v).Histogram holds %v; want 300 values", tc.elapsed, run.Histogram)
			}
		})
	}
}

// TestHumanUS formats latencies across the unit boundaries.
func TestHumanUS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		us   float64
		want string
	}{
		{name: "zero", us: 0, want: "0µs"},
		{name: "micro", us: 183, want: "183µs"},
		{name: "rounds up into ms", us: 999.6, want: "1.0ms"},
		{name: "milli", us: 1207, want: "1.2ms"},
		{name: "tens of ms", us: 45_300, want: "45.3ms"},
		{name: "hundreds of ms", us: 183_400, want: "183ms"},
		{name: "seconds", us: 2_503_000, want: "2.50s"},
		{name: "max", us: MaxLatencyUS, want: "60.00s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := FormatUS(tc.us); got != tc.want {
				t.Errorf("FormatUS(%v) = %q; want %q", tc.us, got, tc.want)
			}
		})
	}
}

// TestProgress formats progress lines.
func TestProgress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		label     string
		elapsed   time.Duration
		totals    Totals
		perSecond float64
		want      string
	}{
		{
			name: "running", label: "lua/rueidis", elapsed: 3*time.Second + 400*time.Millisecond,
			totals:    Totals{Decisions: 41234, Allowed: 1234, Rejected: 40000},
			perSecond: 41203.4,
			want:      "lua/rueidis  3s  41203/s  allowed 1234  rejected 40000  errors 0",
		},
		{
			name: "start", label: "naive/go-redis", elapsed: 0,
			want: "naive/go-redis  0s  0/s  allowed 0  rejected 0  errors 0",
		},
		{
			name: "minutes with errors", label: "multi-nx/go-redis", elapsed: 65 * time.Second,
			totals:    Totals{Decisions: 12, Allowed: 5, Rejected: 4, Errors: 3},
			perSecond: 0.4,
			want:      "multi-nx/go-redis  1m5s  0/s  allowed 5  rejected 4  errors 3",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Progress(tc.label, tc.elapsed, tc.totals, tc.perSecond); got != tc.want {
				t.Errorf("Progress(%q, %v, %+v, %v) = %q; want %q", tc.label, tc.elapsed, tc.totals, tc.perSecond, got, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestTextPartial checks that a run that did not finish says so, and that a
// complete one does not.
func TestTextPartial(t *testing.T) {
	t.Parallel()
	rep := fixedReport()
	rep.Runs[1].Incomplete = true
	var buf bytes.Buffer
	if err := Text(rep)(&buf); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(buf.String(), "did not finish"); got != 1 || !strings.Contains(buf.String(), "lua/rueidis did not finish: its figures cover only part of its load\n") {
		t.Errorf("Text(one partial run) says \"did not finish\" %d times:\n%s\nwant once, of lua/rueidis", got, buf.String())
	}
}

// TestSaturationWholeServer: the server's CPU per decision of a server
// rlbench did not start is labelled the whole server's (other clients'
// commands are in it); a private server's is not.
func TestSaturationWholeServer(t *testing.T) {
	t.Parallel()
	for _, managed := range []bool{false, true} {
		r := Run{Cell: Cell{Server: &Server{Addr: "10.0.0.1:6379", Managed: managed}}}
		r.Saturation = &Saturation{ClientCPUPerDecisionUS: 2, ServerCPUPerDecisionUS: 1.5}
		var buf bytes.Buffer
		writeWholeServer(&buf, r, "lua/go-redis")
		if got := strings.Contains(buf.String(), "the whole server's CPU"); got == managed {
			t.Errorf("managed %t: load line %q; want the whole server's label %t", managed, buf.String(), !managed)
		}
	}
}

// TestTextNotesOnce is issue 35, item 9: a note that says the same thing
// of several cells is printed once, naming them ("all N cells" when it is
// every cell of three or more); no line after the table is longer than
// MaxNoteWidth (a long one goes on over indented lines); the load line
// starts with the verdict's first word and the CPU per decision.
func TestTextNotesOnce(t *testing.T) {
	t.Parallel()
	notMeasured := &LostIncrements{Error: "no key could be compared: every window ended or turned over before its counter was read"}
	verdict := "client-bound: Redis had CPU to spare: the figures measure rlbench, not Redis"
	rep := fixedReport()
	rep.Runs = rep.Runs[:1]
	rep.Runs[0].Faults, rep.Runs[0].PerSecond = nil, nil
	for _, c := range []struct{ strategy, client string }{{"lua", "go-redis"}, {"lua", "rueidis"}} {
		r := rep.Runs[0]
		r.Strategy, r.Client = c.strategy, c.client
		rep.Runs = append(rep.Runs, r)
	}
	for i := range rep.Runs {
		s := *rep.Runs[i].Saturation
		s.ClientCPUPerDecisionUS, s.ServerCPUPerDecisionUS = 17.17+float64(i), 10.14
		rep.Runs[i].Saturation = &s
		if i > 0 {
			rep.Runs[i].Failover.LostIncrements = notMeasured
		}
	}
	// A long per-second series, to be broken over lines.
	for i := range 60 {
		rep.Runs[2].PerSecond = append(rep.Runs[2].PerSecond, Second{T: float64(i + 1), Decisions: 41000 + int64(i)})
	}
	rep.Runs[2].Faults = []FaultEvent{{Fault: "stall@1s:100ms", AtS: 1, Detail: "paused 100ms"}}
	var buf bytes.Buffer
	if err := Text(rep)(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"\nlua/go-redis+rueidis lost increments: not measured: no key could be compared",
		"\nall 3 cells " + verdict + "\n",
		"\nnaive/go-redis load: client-bound; CPU per decision rlbench 17.17 µs, server 10.14 µs; cores 0.91 of 2, server 0.80; 6 connections, peak RSS 96 MiB\n",
		"\nlua/rueidis per second (decisions/errors): 41000/0 41001/0",
		"\n  410",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Text(three cells) lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "lost increments: not measured"); n != 1 {
		t.Errorf("Text(three cells) says lost increments not measured %d times; want once:\n%s", n, out)
	}
	if n := strings.Count(out, "Redis had CPU to spare"); n != 1 {
		t.Errorf("Text(three cells) gives the verdict %d times; want once:\n%s", n, out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, line := range lines[2+len(rep.Runs):] { // after the server and the table
		if n := len([]rune(line)); n > MaxNoteWidth {
			t.Errorf("Text(three cells) has a line of %d characters; want at most %d: %q", n, MaxNoteWidth, line)
		}
	}
}

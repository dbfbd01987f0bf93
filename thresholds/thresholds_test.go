package thresholds

import (
	"errors"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rlbench/rlbench/results"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, expr       string
		strategy, client string
		metric, op       string
		value            float64
	}{
		{name: "percentile", expr: "p99<5ms", metric: "p99", op: "<", value: 5000},
		{name: "fractional percentile", expr: "p99.9<50ms", metric: "p99.9", op: "<", value: 50000},
		{name: "throughput", expr: "throughput>10000", metric: "throughput", op: ">", value: 10000},
		{name: "count", expr: "errors==0", metric: "errors", op: "==", value: 0},
		{name: "at most", expr: "immortal<=2", metric: "immortal", op: "<=", value: 2},
		{name: "spaces", expr: " over == 0 ", metric: "over", op: "==", value: 0},
		{name: "cell", expr: "lua/rueidis:phantom==0", strategy: "lua", client: "rueidis", metric: "phantom", op: "==", value: 0},
		{name: "max in µs", expr: "max!=250us", metric: "max", op: "!=", value: 250},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			th, err := Parse(tc.expr)
			if err != nil {
				t.Fatalf("Parse(%q) = %v", tc.expr, err)
			}
			if th.Strategy != tc.strategy || th.Client != tc.client || th.Metric != tc.metric || th.Op != tc.op || th.Value != tc.value {
				t.Errorf("Parse(%q) = %+v; want %s/%s %s %s %v", tc.expr, th, tc.strategy, tc.client, tc.metric, tc.op, tc.value)
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ expr, want string }{
		{"p99", "no comparison"},
		{"p99<<5ms", "needs a duration"},
		{"p99<5", "needs a duration"}, // a latency needs its unit
		{"p0<5ms", "percentile"},
		{"p101<5ms", "percentile"},
		{"latency<5ms", "unknown metric"},
		{"errors==none", "needs a number"},
		{"lua:errors==0", "STRATEGY/CLIENT"},
		{"", "no comparison"},
	} {
		_, err := Parse(tc.expr)
		if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v; want ErrSyntax saying %q", tc.expr, err, tc.want)
		}
	}
}

// run is a cell with 100 decisions of 1ms to 100ms.
func run(strategy, client string) results.Run {
	h := hdrhistogram.New(1, 60_000_000, 3)
	for i := int64(1); i <= 100; i++ {
		_ = h.RecordValue(i * 1000)
	}
	var r results.Run
	r.Strategy, r.Client, r.Histogram = strategy, client, h
	r.DurationS, r.Allowed, r.Rejected, r.Errors = 1, 12000, 345, 3
	r.Decisions, r.ThroughputPerS = 12348, 12348
	over := int64(0)
	r.OverAdmitted = &over
	return r
}

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr  string
		pass  []bool // per cell: lua/go-redis, naive/rueidis
		value string
	}{
		{"p99<100ms", []bool{true, true}, "99.0ms"},
		{"p99<50ms", []bool{false, false}, "99.0ms"},
		{"p50<=51ms", []bool{true, true}, "50.0ms"}, // HDR: the highest value equivalent to 50ms, 50.016ms,
		{"throughput>10000", []bool{true, true}, "12345"},
		{"errors==0", []bool{false, false}, "3"},
		{"over==0", []bool{true, true}, "0"},
		{"naive/rueidis:errors<5", []bool{true}, "3"},
		{"phantom==0", []bool{false, false}, ""}, // not measured: fails
	}
	for _, tc := range tests {
		th, err := Parse(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		rep := &results.Report{Runs: []results.Run{run("lua", "go-redis"), run("naive", "rueidis")}}
		_, failed := Check(rep, []Threshold{th})
		unmatched := rep.UnmatchedThresholds
		var got []bool
		wantFailed := 0
		for _, r := range rep.Runs {
			for _, res := range r.Thresholds {
				got = append(got, res.Pass)
				if res.Value != tc.value {
					t.Errorf("Check(%q) on %s: value %q; want %q", tc.expr, r.Strategy, res.Value, tc.value)
				}
			}
		}
		for _, p := range tc.pass {
			if !p {
				wantFailed++
			}
		}
		if len(got) != len(tc.pass) || failed != wantFailed || len(unmatched) != 0 {
			t.Errorf("Check(%q) = %v, %d failed, unmatched %v; want %v", tc.expr, got, failed, unmatched, tc.pass)
			continue
		}
		for i := range got {
			if got[i] != tc.pass[i] {
				t.Errorf("Check(%q) = %v; want %v", tc.expr, got, tc.pass)
			}
		}
	}
}

func TestCheckUnmatched(t *testing.T) {
	t.Parallel()
	th, _ := Parse("lua/rueidis:errors==0")
	rep := &results.Report{Runs: []results.Run{run("lua", "go-redis")}}
	checked, failed := Check(rep, []Threshold{th})
	unmatched := rep.UnmatchedThresholds
	if checked != 1 || failed != 1 || len(unmatched) != 1 || !strings.Contains(unmatched[0].Note, "no cell lua/rueidis") {
		t.Errorf("Check = %d, %d, %v; want the threshold failed as matching no cell", checked, failed, unmatched)
	}
}

// TestCheckQualified checks the figures the thresholds take beside the
// raw ones: throughput from the decisions made (errors left out), the
// latency note of a run with errors, immortal as the live count (stale
// keys left out) with a note for a strategy with no TTL by design, and
// over's note of a sample.
func TestCheckQualified(t *testing.T) {
	t.Parallel()
	failing := run("lua", "go-redis")
	failing.Allowed, failing.Rejected, failing.Errors = 500, 0, 99500
	failing.Decisions, failing.ThroughputPerS = 100000, 100000
	stale, design, sampled := run("envoy-ratelimit", "go-redis"), run("bucket4j", "go-redis"), run("naive", "rueidis")
	n := int64(4)
	stale.Audit.Immortal, stale.Audit.Stale = 5, &n
	design.Audit.Immortal, design.ImmortalByDesign = 100, true
	sampled.AdmissionKeysTracked, sampled.Audit.Keys = 10000, 50000
	tests := []struct {
		r        results.Run
		expr     string
		pass     bool
		value    string
		notePart string
	}{
		{failing, "throughput>10000", false, "500", ""},
		{failing, "p99<200ms", true, "99.0ms", "99500 errors"},
		{stale, "immortal==1", true, "1", "4 stale keys"},
		{design, "immortal==0", false, "100", "no TTL by design"},
		{sampled, "over==0", true, "0", "sampled 10000 of 50000 keys"},
	}
	for _, tc := range tests {
		th, err := Parse(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		rep := &results.Report{Runs: []results.Run{tc.r}}
		Check(rep, []Threshold{th})
		res := rep.Runs[0].Thresholds[0]
		if res.Pass != tc.pass || res.Value != tc.value || !strings.Contains(res.Note, tc.notePart) || (tc.notePart == "" && res.Note != "") {
			t.Errorf("Check(%q) on %s = pass %v, value %q, note %q; want %v, %q, a note with %q", tc.expr, tc.r.Strategy, res.Pass, res.Value, res.Note, tc.pass, tc.value, tc.notePart)
		}
	}
}

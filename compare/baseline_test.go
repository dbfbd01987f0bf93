package compare

import (
	"bytes"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/rlbench/rlbench/internal/golden"
	"github.com/rlbench/rlbench/results"
)

// series is a 10-second per-second series whose throughput and latencies
// wobble around thr, p50 and p99 by up to ±3%, the wobble's phase set by
// seed, and a last part-second (0.2 s) of a few decisions.
func series(thr, p50, p99 float64, seed int) []results.Second {
	var out []results.Second
	for i := range 10 {
		w := 1 + 0.03*math.Sin(float64(i*7+seed))
		out = append(out, results.Second{T: float64(i + 1), Decisions: int64(thr * w), Allowed: int64(thr * w), P50US: p50 / w, P99US: p99 / w})
	}
	return append(out, results.Second{T: 10.2, Decisions: 3, Allowed: 3, P50US: p50, P99US: p99})
}

// withSeries gives the run a per-second series.
func withSeries(r results.Run, s []results.Second) results.Run {
	r.PerSecond = s
	return r
}

// baselineReports are three hand-built reports: A, the baseline; B, run
// with a race pause, whose naive/go-redis is 30% slower and whose lua has
// a p99 3% higher (worse beyond the noise, within a 5% limit); C, the
// same settings as A, whose figures wobble in another phase, and which
// lacks lua and adds gcra.
func baselineReports() []*results.Report {
	reps := fixedReports()
	cfg := func(pause int) map[string]any {
		return map[string]any{"limit": 1000000, "workload": map[string]any{"clients": 200, "race_pause_ns": pause}}
	}
	reps[0].Config, reps[1].Config, reps[2].Config = cfg(0), cfg(10_000_000), cfg(0)
	reps[0].Runs = []results.Run{
		withSeries(reps[0].Runs[0], series(63822, 3071, 8127, 0)),
		withSeries(reps[0].Runs[1], series(86158, 2201, 6143, 0)),
	}
	reps[1].Runs = []results.Run{
		withSeries(reps[1].Runs[0], series(63822*0.7, 3071/0.7, 8127/0.7, 3)),
		withSeries(reps[1].Runs[1], series(86158, 2201, 6143*1.03, 0)),
	}
	reps[2].Runs = []results.Run{
		withSeries(reps[2].Runs[0], series(63822, 3071, 8127, 5)),
		withSeries(reps[2].Runs[2], series(201337, 950, 2011, 1)),
	}
	reps[2].Runs[1].Strategy, reps[2].Runs[1].Client = "gcra", "rueidis"
	return reps
}

// TestBaselineGolden prints B and C against A: B's naive regresses in all
// three metrics; its lua is worse in p99 within the limit; C's naive is
// no change beyond the noise; C lacks lua and A lacks C's gcra.
func TestBaselineGolden(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files, err := ReadFiles(writeReports(t, dir, baselineReports()))
	if err != nil {
		t.Fatalf("ReadFiles error: %v", err)
	}
	res := Baseline(files, BaselineOptions{MaxRegression: 0.05})
	var buf bytes.Buffer
	if err := BaselineText(res)(&buf); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "baseline.txt", bytes.ReplaceAll(buf.Bytes(), []byte(dir+string(filepath.Separator)), nil))
	if !res.Regressed() {
		t.Errorf("Baseline(A, B, C).Regressed() = false; want true (B's naive is 30%% slower)")
	}
	want := map[string]string{
		"B naive throughput": VerdictRegression, "B naive p50": VerdictRegression, "B naive p99": VerdictRegression,
		"B lua throughput": VerdictNoise, "B lua p99": VerdictWorse,
		"C naive throughput": VerdictNoise, "C naive p50": VerdictNoise, "C naive p99": VerdictNoise,
	}
	for _, cj := range res.Cells {
		for _, j := range cj.Judgements {
			name := files[cj.File].Name + " " + cj.Key.Strategy + " " + metricLabel(j.Metric)
			if w, ok := want[name]; ok && j.Verdict() != w {
				t.Errorf("%s: Verdict() = %q (change %s, p %.3f); want %q", name, j.Verdict(), formatChange(j.Change), j.Test.P, w)
			}
		}
	}
}

// TestBaselineTooFewSamples: one second each side cannot be told from
// noise, whatever the change, and the note says how many are needed.
func TestBaselineTooFewSamples(t *testing.T) {
	t.Parallel()
	mk := func(thr float64) results.Run {
		r := run("lua", "go-redis", thr, 100, 200, 300, 0, nil)
		r.PerSecond = []results.Second{{T: 1, Decisions: int64(thr), P50US: 100, P99US: 200}}
		return r
	}
	files := []*File{
		{Name: "A", Report: &results.Report{Runs: []results.Run{mk(1000)}}},
		{Name: "B", Report: &results.Report{Runs: []results.Run{mk(500)}}},
	}
	res := Baseline(files, BaselineOptions{})
	if res.Regressed() {
		t.Errorf("Baseline with one second each side: Regressed() = true; want false (no test has the power)")
	}
	if j := res.Cells[0].Judgements[0]; len(j.Test.Warnings) == 0 {
		t.Errorf("Baseline with one second each side: throughput has no warning; want one saying how many samples are needed")
	}
}

func TestParseRegression(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"5%", 0.05, true},
		{"2.5%", 0.025, true},
		{"0%", 0, true},
		{"5", 0, false},     // no percent sign: a fraction or a percentage?
		{"-1%", 0, false},   // a regression limit is not negative
		{"abc%", 0, false},  // not a number
		{"2000%", 0, false}, // beyond 1000%
		{"", 0, false},
	}
	for _, tc := range tests {
		got, err := ParseRegression(tc.in)
		if tc.ok && (err != nil || math.Abs(got-tc.want) > 1e-12) {
			t.Errorf("ParseRegression(%q) = (%g, %v); want (%g, nil)", tc.in, got, err, tc.want)
		}
		if !tc.ok && !errors.Is(err, ErrInvalidMaxRegression) {
			t.Errorf("ParseRegression(%q) = (%g, %v); want ErrInvalidMaxRegression", tc.in, got, err)
		}
	}
}

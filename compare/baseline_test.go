package compare

import (
	"bytes"
	"errors"
	"math"
	"path/filepath"
	"strings"
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

// secondsOf is a per-second series of n whole seconds: thr decisions a
// second of which errs erred (the rest allowed), at latencies p50 and p99,
// wobbling by up to ±3% in the phase seed.
func secondsOf(n int, thr, errs, p50, p99 float64, seed int) []results.Second {
	var out []results.Second
	for i := range n {
		w := 1 + 0.03*math.Sin(float64(i*7+seed))
		e := int64(thr * errs * w)
		out = append(out, results.Second{T: float64(i + 1), Decisions: int64(thr * w), Allowed: int64(thr*w) - e, Errors: e, P50US: p50 / w, P99US: p99 / w})
	}
	return out
}

// twoFiles is a baseline A and a file B, each of the runs given.
func twoFiles(a, b []results.Run) []*File {
	return []*File{
		{Name: "A", Report: &results.Report{Runs: a}},
		{Name: "B", Report: &results.Report{Runs: b}},
	}
}

// judgementOf is the judgement of the metric labelled label (e.g. "p50")
// of the first cell.
func judgementOf(t *testing.T, res *BaselineResult, label string) Judgement {
	t.Helper()
	if len(res.Cells) == 0 {
		t.Fatalf("Baseline compared no cell; want one")
	}
	for _, j := range res.Cells[0].Judgements {
		if metricLabel(j.Metric) == label {
			return j
		}
	}
	t.Fatalf("Baseline has no %s judgement", label)
	return Judgement{}
}

// TestBaselineTooFewSamples: a 90% throughput drop over 3 s a side cannot
// be told from noise (no U test of 3+3 reaches p 0.05), and a file with no
// per-second series has no sample at all: both cannot be judged, which
// fails the comparison, not an all-clear.
func TestBaselineTooFewSamples(t *testing.T) {
	t.Parallel()
	mk := func(thr float64, n int) results.Run {
		r := run("lua", "go-redis", thr, 100, 200, 300, 0, nil)
		r.PerSecond = secondsOf(n, thr, 0, 100, 200, 0)
		return r
	}
	res := Baseline(twoFiles([]results.Run{mk(1000, 3)}, []results.Run{mk(100, 3)}), BaselineOptions{})
	if j := judgementOf(t, res, "throughput"); j.Verdict() != "cannot judge (n<4)" {
		t.Errorf("3+3 samples, a 90%% drop: Verdict() = %q (p %.3f); want %q", j.Verdict(), j.Test.P, "cannot judge (n<4)")
	}
	if res.Passed() {
		t.Errorf("3+3 samples, a 90%% drop: Passed() = true; want false (it cannot be judged)")
	}
	res = Baseline(twoFiles([]results.Run{mk(1000, 0)}, []results.Run{mk(100, 0)}), BaselineOptions{})
	if j := judgementOf(t, res, "throughput"); !strings.HasPrefix(j.Verdict(), "not judged") {
		t.Errorf("no per-second series: Verdict() = %q; want not judged", j.Verdict())
	}
	if res.Passed() {
		t.Errorf("no per-second series: Passed() = true; want false")
	}
}

// TestBaselineMissingCells: the same cell on another target compares
// nothing, and a file that lacks a cell of the baseline (a run stopped at
// its first failing cell) fails unless AllowMissing.
func TestBaselineMissingCells(t *testing.T) {
	t.Parallel()
	mk := func(strategy, target string) results.Run {
		r := run(strategy, "go-redis", 1000, 100, 200, 300, 0, nil)
		r.Target = target
		r.PerSecond = secondsOf(10, 1000, 0, 100, 200, 0)
		return r
	}
	res := Baseline(twoFiles([]results.Run{mk("lua", "10.0.0.1")}, []results.Run{mk("lua", "10.0.0.2")}), BaselineOptions{AllowMissing: true})
	if res.Passed() || len(res.Cells) != 0 {
		t.Errorf("one cell on two targets: Passed() = %v with %d cells; want false, 0 cells", res.Passed(), len(res.Cells))
	}
	files := twoFiles([]results.Run{mk("lua", "x"), mk("naive", "x")}, []results.Run{mk("lua", "x")})
	if res := Baseline(files, BaselineOptions{}); res.Passed() || res.Absent != 1 {
		t.Errorf("B lacks naive: Passed() = %v, Absent %d; want false, 1", res.Passed(), res.Absent)
	}
	if res := Baseline(files, BaselineOptions{AllowMissing: true}); !res.Passed() {
		t.Errorf("B lacks naive, AllowMissing: Passed() = false; want true (lua is the same)")
	}
}

// TestBaselineMerged: a merged report's per-second series has no latency
// (0), which is no sample: its whole-run p50 tripling is not an "all
// samples are equal" all-clear but a latency not judged.
func TestBaselineMerged(t *testing.T) {
	t.Parallel()
	mk := func(p50 float64, merged bool) results.Run {
		r := run("lua", "go-redis", 1000, p50, p50*2, p50*3, 0, nil)
		r.PerSecond = secondsOf(10, 1000, 0, p50, p50*2, 0)
		for i := range r.PerSecond {
			if merged {
				r.PerSecond[i].P50US, r.PerSecond[i].P99US = 0, 0
			}
		}
		return r
	}
	res := Baseline(twoFiles([]results.Run{mk(100, true)}, []results.Run{mk(300, true)}), BaselineOptions{})
	if j := judgementOf(t, res, "p50"); j.Unjudged == "" {
		t.Errorf("merged files: p50 Verdict() = %q; want not judged", j.Verdict())
	}
	if res.Passed() {
		t.Errorf("merged files, p50 tripled: Passed() = true; want false")
	}
	if j := judgementOf(t, res, "throughput"); j.Unjudged != "" {
		t.Errorf("merged files: throughput Verdict() = %q; want judged", j.Verdict())
	}
}

// TestBaselineErrors: when 75% of the decisions become fast errors, the
// throughput of decisions answered falls and the error rate rises: both
// regressions, not "better".
func TestBaselineErrors(t *testing.T) {
	t.Parallel()
	mk := func(thr, errs, p50 float64) results.Run {
		r := run("lua", "go-redis", thr, p50, p50*2, p50*3, 0, nil)
		r.PerSecond = secondsOf(10, thr, errs, p50, p50*2, 1)
		return r
	}
	res := Baseline(twoFiles([]results.Run{mk(1000, 0, 100)}, []results.Run{mk(2000, 0.75, 25)}), BaselineOptions{})
	for _, label := range []string{"throughput", "errors"} {
		if j := judgementOf(t, res, label); !j.Regression {
			t.Errorf("75%% errors: %s Verdict() = %q (%s -> %s); want %s", label, j.Verdict(), j.Metric.Format(j.Base), j.Metric.Format(j.New), VerdictRegression)
		}
	}
	if res.Passed() {
		t.Errorf("75%% errors: Passed() = true; want false")
	}
}

// TestBaselineAlphaEdge: a p-value equal to alpha is beyond the noise, as
// benchmath counts only p > alpha as noise.
func TestBaselineAlphaEdge(t *testing.T) {
	t.Parallel()
	mk := func(thr float64, seed int) results.Run {
		r := run("lua", "go-redis", thr, 100, 200, 300, 0, nil)
		r.PerSecond = secondsOf(10, thr, 0, 100, 200, seed)
		return r
	}
	files := twoFiles([]results.Run{mk(1000, 0)}, []results.Run{mk(980, 3)})
	p := judgementOf(t, Baseline(files, BaselineOptions{}), "throughput").Test.P
	if !(p > 0.001 && p < 0.5) {
		t.Fatalf("the samples give p %g; want one between 0.001 and 0.5 for this test", p)
	}
	if j := judgementOf(t, Baseline(files, BaselineOptions{Alpha: p}), "throughput"); !j.Significant {
		t.Errorf("alpha = p = %g: Significant = false; want true", p)
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

// TestBaselinePerRun: with 5 runs of a cell in each file, each run is a
// sample (its median second), as benchstat judges -count runs; a run's
// seconds are not independent of each other. With 2 runs a side, the
// seconds are pooled.
func TestBaselinePerRun(t *testing.T) {
	t.Parallel()
	mk := func(n int, thr float64) []results.Run {
		var out []results.Run
		for i := range n {
			r := run("lua", "go-redis", thr, 100, 200, 300, 0, nil)
			r.PerSecond = secondsOf(10, thr*(1+0.01*float64(i)), 0, 100, 200, i)
			out = append(out, r)
		}
		return out
	}
	j := judgementOf(t, Baseline(twoFiles(mk(5, 1000), mk(5, 700)), BaselineOptions{}), "throughput")
	if !j.PerRun || j.Test.N1 != 5 || j.Test.N2 != 5 || !j.Regression {
		t.Errorf("5 runs a side, 30%% slower: PerRun %t, n %d+%d, verdict %q; want per run, 5+5, %s", j.PerRun, j.Test.N1, j.Test.N2, j.Verdict(), VerdictRegression)
	}
	j = judgementOf(t, Baseline(twoFiles(mk(2, 1000), mk(2, 700)), BaselineOptions{}), "throughput")
	if j.PerRun || j.Test.N1 != 20 {
		t.Errorf("2 runs a side: PerRun %t, n %d+%d; want pooled seconds, 20+20", j.PerRun, j.Test.N1, j.Test.N2)
	}
}

// TestBaselineLowPower is issue 35, item 8: two sets of short runs (5 s a
// side, seconds that spread widely) whose throughput drops by 45% give p
// 0.056, no change beyond the noise; but those samples could not have
// told even a much larger drop from the noise, so the comparison cannot
// pass as "no regression" at 5%: the figure cannot be judged, unless
// AcceptLowPower accepts it knowingly. The same samples at a 20% limit
// still fail; steady seconds detect a 5% drop and pass.
func TestBaselineLowPower(t *testing.T) {
	t.Parallel()
	mk := func(perSecond ...float64) results.Run {
		r := run("lua", "go-redis", median(append([]float64(nil), perSecond...)), 100, 200, 300, 0, nil)
		for i, v := range perSecond {
			r.PerSecond = append(r.PerSecond, results.Second{T: float64(i + 1), Decisions: int64(v), Allowed: int64(v), P50US: 100, P99US: 200})
		}
		return r
	}
	noisyA := mk(60000, 60500, 61000, 59000, 32000)
	noisyB := mk(33000, 33200, 31000, 33500, 30000)
	dir := t.TempDir()
	paths := writeReports(t, dir, []*results.Report{{Tool: "rlbench", Runs: []results.Run{noisyA}}, {Tool: "rlbench", Runs: []results.Run{noisyB}}})
	files, err := ReadFiles(paths)
	if err != nil {
		t.Fatal(err)
	}
	res := Baseline(files, BaselineOptions{MaxRegression: 0.05})
	j := judgementOf(t, res, "throughput")
	if j.Significant || j.Change > -0.44 || j.Change < -0.46 {
		t.Fatalf("a 45%% drop in noisy seconds: change %s, p %.3f, significant %t; want -45%%, not significant", formatChange(j.Change), j.Test.P, j.Significant)
	}
	if !j.LowPower || !(j.Detectable > 0.45) || !strings.HasPrefix(j.Verdict(), "too few samples to judge 5%") {
		t.Errorf("Verdict() = %q, detectable %s, low power %t; want too few samples to judge 5%%, detecting more than the 45%% drop", j.Verdict(), formatDetectable(j.Detectable), j.LowPower)
	}
	if res.Passed() {
		t.Errorf("Passed() = true; want false: the samples cannot judge 5%%")
	}
	var buf bytes.Buffer
	if err := BaselineText(res)(&buf); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "FAIL: 1 figure(s) cannot be judged: ") || !strings.Contains(out, "lua/go-redis throughput: too few samples to judge 5%") {
		t.Errorf("BaselineText:\n%s\nwant the throughput failing with too few samples to judge 5%%", out)
	}
	if res := Baseline(files, BaselineOptions{MaxRegression: 0.2}); res.Passed() {
		t.Errorf("MaxRegression 20%%: Passed() = true; want false")
	}
	res = Baseline(files, BaselineOptions{MaxRegression: 0.05, AcceptLowPower: true})
	if j := judgementOf(t, res, "throughput"); !res.Passed() || !j.LowPower || !strings.Contains(j.Verdict(), "--accept-low-power") {
		t.Errorf("AcceptLowPower: Passed() = %t, Verdict() = %q; want a pass that says it was accepted", res.Passed(), j.Verdict())
	}

	// Steady seconds, 10 a side, detect less than 5%.
	steady := func(thr float64) results.Run {
		r := run("lua", "go-redis", thr, 100, 200, 300, 0, nil)
		r.PerSecond = secondsOf(10, thr, 0, 100, 200, 0)
		return r
	}
	res = Baseline(twoFiles([]results.Run{steady(1000)}, []results.Run{steady(1000)}), BaselineOptions{MaxRegression: 0.05})
	if j := judgementOf(t, res, "throughput"); j.LowPower || !(j.Detectable < 0.05) || !res.Passed() {
		t.Errorf("steady 10+10: detectable %s, low power %t, Passed() %t; want under 5%%, a pass", formatDetectable(j.Detectable), j.LowPower, res.Passed())
	}
}

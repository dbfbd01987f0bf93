package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/workload"
)

// pausedReports runs naive on go-redis with 8 workers for 6 s once per
// race pause, all at once against one private server (so that a loaded
// machine slows them alike), writes each report as p1.json, p2.json, ...
// and returns their paths. A worker's decision takes about its pause, so
// the pause sets the throughput.
func pausedReports(t *testing.T, pauses ...time.Duration) []string {
	t.Helper()
	srv := redistest.Start(t)
	dir := t.TempDir()
	paths := make([]string, len(pauses))
	errs := make([]error, len(pauses))
	var wg sync.WaitGroup
	for i, pause := range pauses {
		paths[i] = filepath.Join(dir, fmt.Sprintf("p%d.json", i+1))
		wg.Go(func() {
			rep, err := rlbench.Run(t.Context(), rlbench.Config{
				Strategies: []string{"naive"},
				Clients:    []string{"go-redis"},
				Limit:      1_000_000,
				Window:     60,
				Workload: workload.Config{Workers: 8, Keys: 100, Duration: 6 * time.Second, RacePause: pause,
					Prefix: fmt.Sprintf("%s%d:", redistest.Prefix(t), i)},
				Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}},
			}, rlbench.Options{})
			if err != nil {
				errs[i] = fmt.Errorf("rlbench.Run %d: %w", i+1, err)
				return
			}
			errs[i] = writeJSON(paths[i], rep)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// TestCompareBaselineRealSlowdown is issue 26, item 3: three real runs at
// once, two with a 2 ms race pause and one with 100 ms (8 workers: 80
// decisions a second at most, below what a starved machine gives the 2 ms
// runs: at load average 28 they made about 200, where an 8 ms pause made
// 140, too close to judge): compare --baseline flags the slower one (exit 1, with the
// setting that differs shown first) and not its twin (exit 0) at a 30%
// limit (two runs on a loaded machine may differ by more than 5%), with
// --accept-low-power (their p99 seconds may be too noisy to judge 30%).
func TestCompareBaselineRealSlowdown(t *testing.T) {
	t.Parallel()
	paths := pausedReports(t, 2*time.Millisecond, 2*time.Millisecond, 100*time.Millisecond)
	// Six seconds a side on a loaded machine may not have the power to
	// judge 30% of a p99 (issue 35, item 8): the twin is accepted knowingly.
	same := mustRun(t, exitOK, "compare", "--baseline", paths[0], paths[1], "--max-regression", "30%", "--accept-low-power")
	t.Logf("two runs of the same settings:\n%s", same.stdout)
	if !strings.Contains(same.stdout, "no regression beyond the noise past 30%") {
		t.Errorf("compare --baseline of two runs of the same settings does not say no regression:\n%s", same.stdout)
	}
	slow := mustRun(t, exitFailure, "compare", "--baseline", paths[0], paths[2], "--max-regression", "5%")
	settings := strings.Index(slow.stdout, "settings that differ between the files\nsetting")
	table := strings.Index(slow.stdout, "against the baseline A")
	if settings < 0 || table < settings || !strings.Contains(slow.stdout, "race-pause  2ms  100ms") {
		t.Errorf("compare --baseline does not show the race pause that differs before the table:\n%s", slow.stdout)
	}
	sections := sectionsOf(slow.stdout)
	var row string
	for _, r := range sections["against the baseline A: medians of the per-second samples; a change counts when a Mann-Whitney U test of the samples of both files gives p <= 0.05"] {
		if strings.Contains(r, " B throughput ") {
			row = r
		}
	}
	if !strings.HasSuffix(row, "REGRESSION") {
		t.Errorf("compare --baseline, B's throughput row = %q; want a REGRESSION:\n%s", row, slow.stdout)
	}
	if slow.stderr != "" {
		t.Errorf("compare --baseline wrote to stderr: %s", slow.stderr)
	}
}

// TestCompareBaselineBadInput: a malformed --max-regression or --alpha, or
// either without --baseline, is bad input naming the flag.
func TestCompareBaselineBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := writeJSON(good, &results.Report{Tool: "rlbench", Runs: []results.Run{{Cell: results.Cell{Strategy: "lua", Client: "go-redis"}}}}); err != nil {
		t.Fatal(err)
	}
	shaped := func(name string, target float64) string {
		path := filepath.Join(dir, name)
		cfg := map[string]any{"workload": map[string]any{"stages": []map[string]any{{"duration_ns": 10e9, "target": target}}}}
		if err := writeJSON(path, &results.Report{Tool: "rlbench", Config: cfg, Runs: []results.Run{{Cell: results.Cell{Strategy: "lua", Client: "go-redis"}}}}); err != nil {
			t.Fatal(err)
		}
		return path
	}
	shapeA, shapeB := shaped("a.json", 10), shaped("b.json", 20)
	tests := []struct {
		name string
		args []string
		says string
	}{
		{"no percent sign", []string{"--baseline", good, good, "--max-regression", "5"}, `--max-regression: want a percentage from 0% to 1000%, e.g. 5%, got "5"`},
		{"negative", []string{"--baseline", good, good, "--max-regression", "-3%"}, `--max-regression: want a percentage`},
		{"alpha 1", []string{"--baseline", good, good, "--alpha", "1"}, "--alpha: want a significance level above 0 and below 1"},
		{"alpha 0", []string{"--baseline", good, good, "--alpha", "0"}, "--alpha: want a significance level above 0 and below 1"},
		{"no baseline", []string{good, good, "--max-regression", "5%"}, "--max-regression needs --baseline"},
		{"nothing to judge", []string{"--baseline", good}, "--baseline needs at least one report"},
		{"allow-missing without baseline", []string{good, good, "--allow-missing"}, "--allow-missing needs --baseline"},
		{"stages differ", []string{"--baseline", shapeA, shapeB}, "--baseline: the files' --stages differ"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := mustRun(t, exitUsage, append([]string{"compare"}, tc.args...)...)
			if !strings.Contains(res.stderr, tc.says) {
				t.Errorf("compare %q: stderr = %q; want it to say %q", tc.args, res.stderr, tc.says)
			}
		})
	}
}

// TestCompareBaselineLowPower is issue 35, item 8, at the command line:
// two sets of short runs (5 s a side, seconds that spread widely) whose
// throughput drops by 45% with p 0.056 no longer pass as "no change beyond
// the noise": the exit status is 1, with too few samples to judge 5%, and
// --accept-low-power passes them knowingly.
func TestCompareBaselineLowPower(t *testing.T) {
	t.Parallel()
	report := func(perSecond ...float64) *results.Report {
		r := results.Run{
			Cell:   results.Cell{Strategy: "lua", Client: "go-redis", Workers: 50},
			Load:   results.Load{DurationS: float64(len(perSecond)), ErrorKinds: map[string]int64{}},
			Outage: results.Outage{OnError: "open"},
		}
		for i, v := range perSecond {
			r.PerSecond = append(r.PerSecond, results.Second{T: float64(i + 1), Decisions: int64(v), Allowed: int64(v), P50US: 500, P99US: 2000})
			r.Decisions += int64(v)
		}
		r.Allowed, r.Admitted, r.ThroughputPerS = r.Decisions, r.Decisions, float64(r.Decisions)/r.DurationS
		return &results.Report{Tool: "rlbench", Runs: []results.Run{r}}
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	if err := writeJSON(a, report(60000, 60500, 61000, 59000, 32000)); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(b, report(33000, 33200, 31000, 33500, 30000)); err != nil {
		t.Fatal(err)
	}
	low := mustRun(t, exitFailure, "compare", "--baseline", a, b, "--max-regression", "5%")
	if !strings.Contains(low.stdout, "-45.0%  0.056") || !strings.Contains(low.stdout, "throughput: too few samples to judge 5%") {
		t.Errorf("compare --baseline of a 45%% drop at p 0.056:\n%s\nwant the throughput row, and too few samples to judge 5%%", low.stdout)
	}
	accepted := mustRun(t, exitOK, "compare", "--baseline", a, b, "--max-regression", "5%", "--accept-low-power")
	if !strings.Contains(accepted.stdout, "accepted with too few samples to judge (--accept-low-power)") {
		t.Errorf("compare --baseline --accept-low-power:\n%s\nwant the throughput accepted knowingly", accepted.stdout)
	}
}

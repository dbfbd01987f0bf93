package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/results"
)

// stagedRun runs rlbench with args on a server of its own (no warm-up,
// --json) and returns its one run.
func stagedRun(t *testing.T, args ...string) (results.Run, cliResult) {
	t.Helper()
	srv := redistest.Start(t)
	path := filepath.Join(t.TempDir(), "run.json")
	res := mustRun(t, exitOK, append([]string{"--addr", srv.Addr(), "--prefix", redistest.Prefix(t), "--warmup", "0",
		"--limit", "1000000", "--window", "60", "-q", "--json", path}, args...)...)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep results.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 {
		t.Fatalf("rlbench %q gave %d runs; want 1", args, len(rep.Runs))
	}
	return rep.Runs[0], res
}

// TestStagesClosedLoop is issue 26, item 4: --stages ramps a closed loop's
// active workers (2, then 2 to 10 over 2 s, then 10). naive with a 5 ms
// race pause makes each worker's decisions take about the pause, so each
// second's decisions follow the workers active in it; each second is
// labelled with its stage and target, and each stage has its figures.
func TestStagesClosedLoop(t *testing.T) {
	t.Parallel()
	run, res := stagedRun(t, "--strategy", "naive", "--race-pause", "5ms", "--stages", "0s:2,2s:2,2s:10,2s:10")
	if run.Workers != 10 {
		t.Errorf("clients = %d; want 10, the stages' highest target", run.Workers)
	}
	if math.Abs(run.DurationS-6) > 1 {
		t.Errorf("duration = %.2fs; want about 6s, the stages' sum", run.DurationS)
	}
	checkLabels(t, run.PerSecond, []float64{2, 2, 4, 8, 10, 10}, []int{2, 2, 3, 3, 4, 4})
	if n := len(run.Stages); n != 4 {
		t.Fatalf("stages = %d; want 4", n)
	}
	// Workers active, on average, in each stage: ceil(target); stage 1,
	// the jump, has no length and no throughput.
	checkStages(t, run.Stages, []float64{0, 2, 6.5, 10})
	var sum int64
	for _, s := range run.Stages {
		sum += s.Decisions
	}
	if sum != run.Decisions {
		t.Errorf("the stages' decisions add up to %d; want the run's %d", sum, run.Decisions)
	}
	if s := run.Stages[2]; s.Of != results.TargetWorkers || s.From != 2 || s.To != 10 || s.StartS != 2 || s.EndS != 4 {
		t.Errorf("stage 3 = %+v; want workers from 2 to 10, 2s to 4s", s)
	}
	if !strings.Contains(res.stdout, "naive/go-redis stage 3 (2s-4s, workers 2 to 10): ") {
		t.Errorf("the text report has no line for stage 3:\n%s", res.stdout)
	}
	if sat := run.Saturation; sat != nil && sat.ConnectionsOpened > 10 {
		t.Errorf("connections opened = %d; want at most the pool's 10 (waiting workers keep theirs)", sat.ConnectionsOpened)
	}
}

// TestStagesOpenLoop: with --rate 100, the stages ramp the rate (100/s for
// 2 s, then up to 500/s over 2 s): each stage's throughput is the rate's
// mean over it.
func TestStagesOpenLoop(t *testing.T) {
	t.Parallel()
	run, _ := stagedRun(t, "--strategy", "lua", "--workers", "20", "--rate", "100", "--stages", "2s:100,2s:500")
	checkLabels(t, run.PerSecond, []float64{100, 100, 200, 400}, []int{1, 1, 2, 2})
	if len(run.Stages) != 2 {
		t.Fatalf("stages = %d; want 2", len(run.Stages))
	}
	checkStages(t, run.Stages, []float64{100, 300})
	if s := run.Stages[1]; s.Of != results.TargetRate || s.From != 100 || s.To != 500 {
		t.Errorf("stage 2 = %+v; want decisions/s from 100 to 500", s)
	}
}

// checkLabels checks each whole second's stage and target.
func checkLabels(t *testing.T, series []results.Second, targets []float64, stages []int) {
	t.Helper()
	if len(series) < len(targets) {
		t.Fatalf("per-second series has %d entries; want %d or more", len(series), len(targets))
	}
	for i := range targets {
		s := series[i]
		if s.Stage != stages[i] || s.Target == nil || math.Abs(*s.Target-targets[i]) > 0.05*targets[i] {
			t.Errorf("second %d: stage %d, target %v; want stage %d, target %g", i+1, s.Stage, s.Target, stages[i], targets[i])
		}
	}
}

// checkStages checks that each stage's throughput is proportional to want
// (workers or a rate, on average over the stage) within 50%, the
// throughput per unit taken from all of them: whole stages, not seconds,
// so that a loaded machine's slow second does not fail it.
func checkStages(t *testing.T, stages []results.Stage, want []float64) {
	t.Helper()
	var total, units float64
	for i, w := range want {
		total += stages[i].ThroughputPerS
		units += w
	}
	per := total / units
	for i, w := range want {
		if got := stages[i].ThroughputPerS; math.Abs(got-w*per) > 0.5*w*per {
			t.Errorf("stage %d: %.0f decisions/s; want %.0f ± 50%% (%.3g per worker or per unit of rate)", i+1, got, w*per, per)
		}
	}
}

// TestStagesBadInput: a malformed --stages, or one with --duration or a
// closed loop's --workers, is bad input naming the flag, before anything
// touches Redis.
func TestStagesBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		says string
	}{
		{"no target", []string{"--stages", "10s"}, `--stages: want DURATION:TARGET,... e.g. 10s:100,30s:1000,10s:0`},
		{"negative", []string{"--stages", "10s:-5"}, `--stages: want DURATION:TARGET`},
		{"no length", []string{"--stages", "0s:5"}, `--stages: want DURATION:TARGET`},
		{"with --duration", []string{"--stages", "1s:5,1s:0", "--duration", "5s"}, "--duration conflicts with --stages: the run lasts the stages' sum, 2s"},
		{"with --workers", []string{"--stages", "1s:5", "--workers", "3"}, "--workers conflicts with --stages in a closed loop"},
		{"with --clients", []string{"--stages", "1s:5", "--clients", "3"}, "--clients conflicts with --stages in a closed loop"},
		{"rate too high", []string{"--stages", "1s:1e9", "--rate", "10"}, "--stages: want DURATION:TARGET"},
		{"workers too many", []string{"--stages", "10s:1e8"}, "targets from 0 to 1000000 workers in a closed loop, to 1e8 decisions/s in an open one (--rate); got 10s:100000000, a closed loop of 100000000 workers"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := mustRun(t, exitUsage, append([]string{"--addr", closedAddr(t)}, tc.args...)...)
			if !strings.Contains(res.stderr, tc.says) {
				t.Errorf("rlbench %q: stderr = %q; want it to say %q", tc.args, res.stderr, tc.says)
			}
		})
	}
}

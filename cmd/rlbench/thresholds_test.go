package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/results"
)

// TestThresholds is issue 26, item 2: a threshold that holds passes (exit
// 0), one that fails exits 1 and prints its figure, which is the JSON's;
// each is in the cell's JSON with its measured value. (One whose cell is
// not in the run is bad input: TestRunBadInput.)
func TestThresholds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		code     int
		line     *regexp.Regexp // in stdout
		pass     []bool         // the JSON's thresholds, in order
		measured func(r results.Run) float64
		// unmatched is the JSON's thresholds_unmatched count.
		unmatched int
	}{
		{
			name: "holds",
			args: []string{"--threshold", "errors==0", "--threshold", "lua/go-redis:p99.9<30s"},
			code: 0, line: regexp.MustCompile(`(?m)^  lua/go-redis:p99\.9<30s +lua/go-redis +\S+ +ok$`),
			pass: []bool{true, true},
		},
		{
			name: "fails",
			args: []string{"--threshold", "errors==0", "--threshold", "throughput>1e12"},
			code: 1, line: regexp.MustCompile(`(?m)^  throughput>1e12 +lua/go-redis +(\d+) +FAILED$`),
			pass:     []bool{true, false},
			measured: func(r results.Run) float64 { return float64(r.Allowed+r.Rejected) / r.DurationS },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			jsonPath := filepath.Join(t.TempDir(), "run.json")
			args := append([]string{"--addr", srv.Addr(), "--prefix", redistest.Prefix(t), "--requests", "2000", "--duration", "0", "--json", jsonPath}, tc.args...)
			res := mustRun(t, tc.code, args...)
			m := tc.line.FindStringSubmatch(res.stdout)
			if m == nil {
				t.Fatalf("stdout:\n%s\nwant a line matching %s", res.stdout, tc.line)
			}
			rep, err := results.ReadReportFile(jsonPath)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(rep.UnmatchedThresholds); n != tc.unmatched {
				t.Errorf("JSON thresholds_unmatched = %+v; want %d", rep.UnmatchedThresholds, tc.unmatched)
			}
			got := rep.Runs[0].Thresholds
			if len(got) != len(tc.pass) {
				t.Fatalf("JSON thresholds = %+v; want %d", got, len(tc.pass))
			}
			for i, want := range tc.pass {
				if got[i].Pass != want || got[i].Measured == nil {
					t.Errorf("JSON threshold %q: pass %v, measured %v; want pass %v and a figure", got[i].Threshold, got[i].Pass, got[i].Measured, want)
				}
			}
			if tc.measured != nil {
				want := tc.measured(rep.Runs[0])
				if printed, _ := strconv.ParseFloat(m[1], 64); printed != float64(int64(want+0.5)) || *got[1].Measured != want {
					t.Errorf("printed %s, JSON measured %v; want the JSON's figure %v", m[1], *got[1].Measured, want)
				}
			}
		})
	}
}

// TestThresholdUnsentOpenLoop is issue 35, item 3: a server stall that
// outlasts an open loop's run leaves requests due and never sent; each
// counts in the corrected latency at its lower bound (the end of the run
// minus its due time), so they show in p90 and fail a threshold on it, and
// the JSON counts them and gives the worst schedule lag.
func TestThresholdUnsentOpenLoop(t *testing.T) {
	t.Parallel()
	srv := redistest.StartWith(t, redisserver.Options{Args: []string{"--enable-debug-command", "local"}})
	rdb := redistest.Client(t, srv)
	const rate, duration, stall = 2000, 6 * time.Second, 4 * time.Second
	stalled := make(chan error, 1)
	go func() {
		// Half the measured load (no warm-up: every EVALSHA is the
		// load's), then a stall that runs past its end: the requests in
		// flight are a few percent of the decisions, the unsent ones more
		// than a tenth of the schedule.
		ctx := t.Context()
		for {
			info, err := rdb.Info(ctx, "commandstats").Result()
			if err != nil {
				stalled <- err
				return
			}
			if m := regexp.MustCompile(`cmdstat_evalsha:calls=(\d+)`).FindStringSubmatch(info); m != nil {
				if n, _ := strconv.Atoi(m[1]); n >= rate*int(duration.Seconds())/2 {
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		stalled <- rdb.Do(ctx, "debug", "sleep", stall.Seconds()).Err()
	}()
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	res := mustRun(t, 1, "--addr", srv.Addr(), "--prefix", redistest.Prefix(t), "--strategy", "lua", "--client", "go-redis",
		"--rate", strconv.Itoa(rate), "--clients", "200", "--duration", duration.String(), "--warmup", "0",
		"--threshold", "p90<10ms", "--json", jsonPath)
	if err := <-stalled; err != nil {
		t.Fatalf("DEBUG SLEEP: %v", err)
	}
	if !regexp.MustCompile(`(?m)^  p90<10ms +lua/go-redis +\S+ +FAILED$`).MatchString(res.stdout) {
		t.Errorf("stdout:\n%s\nwant p90<10ms FAILED", res.stdout)
	}
	rep, err := results.ReadReportFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Runs[0]
	if r.OpenLoop == nil {
		t.Fatalf("JSON open loop = nil; want one")
	}
	// Unless the stall began more than 2s late, a tenth of the schedule
	// fell due behind it and was never sent.
	scheduled := int64(rate * duration.Seconds())
	if r.Unsent < scheduled/10 {
		t.Errorf("JSON unsent = %d; want at least %d of the %d scheduled", r.Unsent, scheduled/10, scheduled)
	}
	if got := r.Decisions + r.Unsent; got > scheduled+1 {
		t.Errorf("decisions %d + unsent %d = %d; want at most the %d scheduled", r.Decisions, r.Unsent, got, scheduled)
	}
	t.Logf("unsent %d, decisions %d, p90 %v µs, schedule lag %v ms (last %v ms)", r.Unsent, r.Decisions, r.LatencyUS.P90, r.ScheduleLagMS, r.ScheduleLagLastMS)
	if r.LatencyUS.P90 < 10e3 {
		t.Errorf("JSON latency p90 = %v µs; want the unsent requests in it (>= 10ms)", r.LatencyUS.P90)
	}
	if r.ScheduleLagMS < 100 || r.ScheduleLagMS < r.ScheduleLagLastMS {
		t.Errorf("JSON schedule_lag_ms = %v, schedule_lag_last_ms = %v; want the worst lag (>= 100ms, at least the last)", r.ScheduleLagMS, r.ScheduleLagLastMS)
	}
}

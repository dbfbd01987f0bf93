package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/rlbench/rlbench/internal/redistest"
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

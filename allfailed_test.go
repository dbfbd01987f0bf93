package rlbench

import (
	"errors"
	"testing"

	"github.com/rlbench/rlbench/results"
)

// TestAllFailed checks the rule that fails a run whose cell measured only
// errors: every decision failed, not counting the crashes --crash-rate
// simulates.
func TestAllFailed(t *testing.T) {
	tests := []struct {
		name      string
		decisions int64
		errs      map[string]int64
		want      bool
	}{
		{"every decision NOPERM", 50, map[string]int64{"NOPERM": 50}, true},
		{"every decision READONLY or crashed", 50, map[string]int64{"READONLY": 30, results.KindCrashed: 20}, true},
		{"one decision answered", 50, map[string]int64{"NOPERM": 49}, false},
		{"every decision a simulated crash", 50, map[string]int64{results.KindCrashed: 50}, false},
		{"no decision", 0, nil, false},
	}
	for _, tc := range tests {
		var run results.Run
		run.Decisions = tc.decisions
		run.ErrorKinds = tc.errs
		for _, n := range tc.errs {
			run.Errors += n
		}
		run.Allowed = run.Decisions - run.Errors
		err := allFailed("lua/go-redis", run)
		if got := errors.Is(err, ErrAllFailed); got != tc.want {
			t.Errorf("allFailed(%s) = %v; want ErrAllFailed %t", tc.name, err, tc.want)
		}
	}
}

package strategies_test

import (
	"testing"

	"github.com/rlbench/rlbench/strategies"
)

// TestSequenceStampHidden checks Info.StampHidden: set when an audit
// cannot read the window from the last number of every key the sequence
// writes.
func TestSequenceStampHidden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec   string
		hidden bool
	}{
		{"INCR {key}:{stamp} | EXPIRE {key}:{stamp} {window}", false},
		{"INCR {key}:{index}:count | EXPIRE {key}:{index}:count {window}", false},
		{"INCR {key}:{stamp_ms}/x.y | PEXPIRE {key}:{stamp_ms}/x.y {window_ms}", false},
		{"INCR {key}:{stamp}:{window} | EXPIRE {key}:{stamp}:{window} {window}", true}, // a number after the stamp
		{"INCR {key}:{stamp}:v2 | EXPIRE {key}:{stamp}:v2 {window}", true},             // a digit after it
		{"INCR {key}:{stamp} | INCR {key}:{index}", true},                              // two stamps
		{"INCR {key}:{stamp} | SET {key} 1", true},                                     // a key without one
		{"INCR {key} | EXPIRE {key} {window}", false},                                  // no stamp at all
	}
	for _, tc := range tests {
		seq, err := strategies.ParseSequence(tc.spec)
		if err != nil {
			t.Fatalf("ParseSequence(%q) = %v", tc.spec, err)
		}
		if got := seq.Info("x").StampHidden; got != tc.hidden {
			t.Errorf("ParseSequence(%q).Info().StampHidden = %t; want %t", tc.spec, got, tc.hidden)
		}
	}
}

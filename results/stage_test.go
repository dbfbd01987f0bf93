package results

import (
	"testing"
	"time"
)

// TestStageOfZeroLength: a stage of no planned length (0s:T, a jump) is
// measured over the few microseconds between its timer's firings, so it
// has no throughput, where its decisions over that time would read as a
// huge rate; a stage with a length has its own.
func TestStageOfZeroLength(t *testing.T) {
	t.Parallel()
	rec := NewRecorder(1)
	for range 5 {
		rec.Record(0, time.Millisecond, true, nil)
	}
	now, h := rec.Snapshot()
	var iv Interval
	jump := StageOf(Stage{Stage: 1, StartS: 10, EndS: 10}, now, Totals{}, h, &iv, 4e-6)
	if jump.Decisions != 5 || jump.ThroughputPerS != 0 {
		t.Errorf("StageOf(a 0s stage, 5 decisions in 4 µs) = %d decisions, %g/s; want 5, 0/s", jump.Decisions, jump.ThroughputPerS)
	}
	ramp := StageOf(Stage{Stage: 2, StartS: 10, EndS: 12}, now, Totals{}, h, &iv, 2)
	if ramp.ThroughputPerS != 2.5 {
		t.Errorf("StageOf(a 2s stage, 5 decisions in 2 s) = %g/s; want 2.5/s", ramp.ThroughputPerS)
	}
}

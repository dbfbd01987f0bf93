package results

import (
	"runtime"
	"testing"
	"time"
)

// TestInterval checks that each interval's percentiles come from its own
// decisions only: a slow second after a fast one shows as slow.
func TestInterval(t *testing.T) {
	t.Parallel()
	var rec Recorder
	var iv Interval
	for range 100 {
		rec.Record(0, 100*time.Microsecond, true, nil)
	}
	if p50, p99 := iv.Next(rec.Histogram()); p50 != 100 || p99 != 100 {
		t.Errorf("first interval p50, p99 = %v, %v; want 100, 100", p50, p99)
	}
	for range 100 {
		rec.Record(1, 5*time.Millisecond, true, nil)
	}
	if p50, p99 := iv.Next(rec.Histogram()); p50 < 4990 || p50 > 5010 || p99 < 4990 || p99 > 5010 {
		t.Errorf("second interval p50, p99 = %v, %v; want about 5000, 5000 (the first interval's 100µs left out)", p50, p99)
	}
	if p50, p99 := iv.Next(rec.Histogram()); p50 != 0 || p99 != 0 {
		t.Errorf("empty interval p50, p99 = %v, %v; want 0, 0", p50, p99)
	}
}

// TestSnapshotAgrees checks that Snapshot's totals and histogram count the
// same decisions while workers record.
func TestSnapshotAgrees(t *testing.T) {
	t.Parallel()
	var rec Recorder
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for w := 0; ; w++ {
			select {
			case <-stop:
				return
			default:
				rec.Record(w, time.Duration(w%1000)*time.Microsecond, w%2 == 0, nil)
			}
		}
	}()
	// Snapshots taken while the writer records, not before it starts.
	for rec.Totals().Decisions < 1000 {
		runtime.Gosched()
	}
	var last int64
	for range 50 {
		tot, h := rec.Snapshot()
		if tot.Decisions != h.TotalCount() {
			t.Fatalf("Snapshot: totals count %d decisions, histogram %d; want equal", tot.Decisions, h.TotalCount())
		}
		last = tot.Decisions
	}
	if last < 1000 {
		t.Errorf("last Snapshot counted %d decisions; want the 1000 and more recorded before it", last)
	}
	close(stop)
	<-done
}

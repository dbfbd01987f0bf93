package audit

import (
	"testing"
	"time"
)

// TestPacerNoBurstAfterStall checks that the pace is a ceiling: after a
// stall (here, 300 ms in which nothing was sent), the batches that follow
// are still spaced at the rate, not sent at once to catch up.
func TestPacerNoBurstAfterStall(t *testing.T) {
	t.Parallel()
	p := pacer{rate: 1000} // 50 keys: 50 ms
	ctx := t.Context()
	if err := p.wait(ctx, 50); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // a stalled server
	began := time.Now()
	for range 4 {
		if err := p.wait(ctx, 50); err != nil {
			t.Fatal(err)
		}
	}
	// The first batch after the stall goes at once, the next three 50 ms
	// apart: 150 ms. An average since the start would send all four at
	// once (0 ms).
	if took := time.Since(began); took < 140*time.Millisecond {
		t.Errorf("4 batches of 50 keys at 1000/s after a stall took %s; want >= 150 ms (no burst)", took)
	}
	// finish waits until the last batch's keys are due, 50 ms after it
	// was: measured from before the four batches, so that a wait that
	// returned late on a loaded machine does not shorten it.
	if err := p.finish(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 190*time.Millisecond {
		t.Errorf("4 batches of 50 keys at 1000/s after a stall, then finish, took %s; want >= 200 ms (finish waits for the last batch)", took)
	}
}

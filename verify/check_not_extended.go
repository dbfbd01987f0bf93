package verify

import (
	"context"
	"time"

	"github.com/rlbench/rlbench/strategies"
)

// CheckNotExtended: fixed windows only: PTTL, read after each request, only
// ever goes down with time; traffic never extends the window.
const CheckNotExtended = "not-extended"

// notExtendedSpacing is the pause between the requests of the not-extended
// check.
const notExtendedSpacing = 75 * time.Millisecond

func init() {
	register(checkDef{
		Check:         Check{Name: CheckNotExtended, Doc: "traffic inside a window never pushes its end later (fixed windows only)"},
		notApplicable: onlyFixedWindow("not a fixed-window strategy"),
		run:           checkNotExtended,
		expected: func(p strategies.Info, _ Server) []Outcome {
			if !p.FixedWindow {
				return []Outcome{NotApplicable}
			}
			return []Outcome{Pass}
		},
	})
}

func checkNotExtended(ctx context.Context, t *trial) Cell {
	key := t.key("k")
	first := time.Now()
	if _, err := t.decide(ctx, key); err != nil {
		return failf("first request: %v", err)
	}
	asked := time.Now() // no later than the server's reading of p0
	p0, err := t.pttl(ctx, key)
	t0 := time.Now() // no earlier than the server's reading of p0
	if err != nil {
		return failf("%v", err)
	}
	if p0 <= 0 {
		cell := failf("PTTL %s after the first request; want > 0", pttlText(p0))
		// Gone (not immortal) a request's share of the window after the
		// decision: it may have expired by design.
		cell.late = p0 != -1 && t0.Sub(first) >= t.lateAfter()
		return cell
	}
	end, err := t.windowEnd(ctx, key, p0)
	if err != nil {
		return failf("%v", err)
	}
	n := int(t.cfg.Limit) + 2
	for i := 2; i <= n; i++ {
		if err := sleep(ctx, notExtendedSpacing); err != nil {
			return failf("%v", err)
		}
		if _, err := t.decide(ctx, key); err != nil {
			return failf("request %d: %v", i, err)
		}
		sent := time.Now() // no later than the server's reading of p
		p, err := t.pttl(ctx, key)
		read := time.Now() // no earlier than it
		if err != nil {
			return failf("%v", err)
		}
		if cell, ok := notExtended(i, p0, end, p, sent.Sub(t0), sent.Sub(asked), read.Sub(asked)); !ok {
			return cell
		}
	}
	return Cell{Outcome: Pass}
}

// notExtended judges the PTTL p read after request i, elapsed after the
// first reading p0 (no more than the time between them): a window that
// traffic does not extend is at most p0-elapsed then. The window may end
// before the counter's TTL does, end after the first reading (windowEnd:
// a timer key beside the counter, as Laravel's, set a moment before it);
// that reading was sent asked ago. A key gone when the reading (read since
// asked) may have come after the window's end, or a PTTL risen when
// request i (sent since asked) may have, is a window ended by design and
// perhaps a new one: too late to judge (Cell.late), run again on fresh
// keys. It returns a FAIL cell, or ok.
func notExtended(i int, p0, end, p int64, elapsed, sent, read time.Duration) (Cell, bool) {
	ms := elapsed.Milliseconds()
	ended := func(since time.Duration) bool { return since.Milliseconds() >= end-pttlTolerance }
	switch bound := p0 - ms + pttlTolerance; {
	case p == -1:
		return failf("the key lost its TTL after request %d", i), false
	case p == -2:
		cell := failf("the key expired after request %d, %dms after a PTTL of %dms", i, ms, p0)
		cell.late = ended(read)
		return cell, false
	case p > bound:
		cell := failf("PTTL rose to %dms after request %d, %dms after a first reading of %dms; a window that traffic does not extend would be at most %dms", p, i, ms, p0, bound)
		cell.late = ended(sent)
		return cell, false
	}
	return Cell{}, true
}

// windowEnd is when the window of the counter at key ends, in milliseconds
// after the reading of its PTTL p0 (made a moment before this): the least
// of p0 and the PTTLs of the keys the strategy keeps beside it, under key
// (Laravel's key:timer, whose end resets the counter). Each is read after
// p0 was, so the window ends no earlier than that after p0's reading.
func (t *trial) windowEnd(ctx context.Context, key string, p0 int64) (int64, error) {
	keys, err := t.keysUnder(ctx, key)
	if err != nil {
		return 0, err
	}
	end := p0
	for _, k := range keys {
		if k == key {
			continue
		}
		p, err := t.keyPTTL(ctx, k)
		if err != nil {
			return 0, err
		}
		if p > 0 && p < end {
			end = p
		}
	}
	return end, nil
}

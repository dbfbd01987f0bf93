package verify

import (
	"context"
	"time"
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
		expected: func(p Properties, _ Server) []Outcome {
			if !p.FixedWindow {
				return []Outcome{NotApplicable}
			}
			return []Outcome{Pass}
		},
	})
}

func checkNotExtended(ctx context.Context, t *trial) Cell {
	key := t.key("k")
	if _, err := t.decide(ctx, key); err != nil {
		return failf("first request: %v", err)
	}
	p0, err := t.pttl(ctx, key)
	t0 := time.Now() // no earlier than the server's reading of p0
	if err != nil {
		return failf("%v", err)
	}
	if p0 <= 0 {
		return failf("PTTL %s after the first request; want > 0", pttlText(p0))
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
		if err != nil {
			return failf("%v", err)
		}
		elapsed := sent.Sub(t0).Milliseconds()
		switch bound := p0 - elapsed + pttlTolerance; {
		case p == -1:
			return failf("the key lost its TTL after request %d", i)
		case p == -2:
			return failf("the key expired after request %d, %dms after a PTTL of %dms", i, elapsed, p0)
		case p > bound:
			return failf("PTTL rose to %dms after request %d, %dms after a first reading of %dms; a window that traffic does not extend would be at most %dms", p, i, elapsed, p0, bound)
		}
	}
	return Cell{Outcome: Pass}
}

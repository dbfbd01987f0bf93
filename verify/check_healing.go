package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/rlbench/rlbench/strategies"
)

// CheckHealing: fixed windows only: a counter seeded with SET k Limit and
// no TTL has a TTL after one decision (leaks when it stays immortal).
const CheckHealing = "healing"

func init() {
	register(checkDef{
		Check:         Check{Name: CheckHealing, Doc: "a counter seeded with SET k 5 and no TTL gets one back on the next request"},
		notApplicable: onlyFixedWindow("not a fixed-window counter: no counter to heal"),
		run:           checkHealing,
		expected: func(p strategies.Info, _ Server) []Outcome {
			switch {
			case !p.FixedWindow:
				return []Outcome{NotApplicable}
			case p.Heals:
				return []Outcome{Pass}
			}
			return []Outcome{Leaks}
		},
	})
}

func checkHealing(ctx context.Context, t *trial) Cell {
	key := t.key("k")
	if err := t.seedCounter(ctx, key, t.cfg.Limit); err != nil {
		return failf("seed %s %d: %v", key, t.cfg.Limit, err)
	}
	decided := time.Now()
	if _, err := t.decide(ctx, key); err != nil {
		return failf("decision on a counter with no TTL: %v", err)
	}
	v, err := t.value(ctx, key)
	if err != nil {
		return failf("%v", err)
	}
	p, err := t.pttl(ctx, key)
	if err != nil {
		return failf("%v", err)
	}
	return t.healed(v, p, time.Since(decided))
}

// healed judges the counter seeded with no TTL, at v with PTTL p since
// after the decision: a counter gone a request's share of the window
// after it (lateAfter) may have expired by design, too late to judge
// (Cell.late); sooner, it is a failure.
func (t *trial) healed(v string, p int64, since time.Duration) Cell {
	switch {
	case p == -1:
		return Cell{Outcome: Leaks, Note: fmt.Sprintf("counter stays immortal (n never 1 again): seeded at %d with no TTL, after one decision %s with no TTL", t.cfg.Limit, v)}
	case p == -2:
		cell := failf("the counter vanished after one decision, %dms after it", since.Milliseconds())
		cell.late = since >= t.lateAfter()
		return cell
	case p > t.window*1000:
		return failf("PTTL %dms after one decision; want at most the %ds window", p, t.window)
	}
	return Cell{Outcome: Pass}
}

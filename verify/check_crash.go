package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/rlbench/rlbench/strategies"
)

// CheckCrash: the client dies (strategies.ErrCrashed) at the first gap
// between two commands that a fresh key's requests reach; leaks when that
// leaves a key with no TTL.
const CheckCrash = "crash"

func init() {
	register(checkDef{
		Check:    Check{Name: CheckCrash, Doc: "the client dies between its two commands (strategies.Gap) on a fresh key"},
		run:      checkCrash,
		expected: passUnlessNotAtomic,
	})
}

// gapState records what a Gap saw; the strategy calls the Gap in the
// goroutine that called Decide.
type gapState struct {
	step    string // the first gap reached, e.g. "after INCR"; "" if none
	request int    // the request that reached it
}

func checkCrash(ctx context.Context, t *trial) Cell {
	key := t.key("k")
	var gap gapState
	crashing := strategies.WithGap(ctx, func(_ context.Context, _, step string) error {
		if gap.step != "" {
			return nil
		}
		gap.step = step
		return strategies.ErrCrashed
	})
	n := int(t.cfg.Limit) + 1
	for i := 1; i <= n && gap.step == ""; i++ {
		_, err := t.decide(crashing, key)
		if gap.step != "" {
			gap.request = i
			if !errors.Is(err, strategies.ErrCrashed) {
				return failf("the client died %s on request %d, but the decision returned %v; want the crash", gap.step, i, err)
			}
			break
		}
		if err != nil {
			return failf("request %d: %v", i, err)
		}
	}
	immortal, err := t.immortal(ctx, t.keyPrefix(), t.window)
	if err != nil {
		return failf("%v", err)
	}
	v, err := t.describe(ctx, key)
	if err != nil {
		return failf("%v", err)
	}
	if immortal > 0 {
		if gap.step == "" {
			return Cell{Outcome: Leaks, Note: fmt.Sprintf("no crash, yet %d %ss have no TTL", immortal, t.counterNoun())}
		}
		return Cell{Outcome: Leaks, Note: fmt.Sprintf("client died %s on request %d: %s left at %s with no TTL", gap.step, gap.request, t.counterNoun(), v)}
	}
	switch {
	case gap.step == "" && t.properties.Atomic:
		return Cell{Outcome: Pass}
	case gap.step == "":
		return Cell{Outcome: Pass, Note: fmt.Sprintf("no gap between commands reached in %d requests", n)}
	}
	p, err := t.pttl(ctx, key)
	if err != nil {
		return failf("%v", err)
	}
	return Cell{Outcome: Pass, Note: fmt.Sprintf("client died %s on request %d: %s left at %s with PTTL %s, no immortal %s", gap.step, gap.request, t.counterNoun(), v, pttlText(p), t.counterNoun())}
}

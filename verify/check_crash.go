package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rlbench/rlbench/strategies"
)

// CheckCrash: the client dies (strategies.ErrCrashed) at each gap between
// the round trips of a decision in turn, each on a fresh key: at gap 1 on
// one key, at gap 2 on the next, and so on, up to the gaps of a fresh key's
// first decision as a strategies.Tap sees it. It leaks when any of them
// leaves a key with no TTL.
const CheckCrash = "crash"

func init() {
	register(checkDef{
		Check:    Check{Name: CheckCrash, Doc: "the client dies at each gap between its round trips in turn (strategies.Tap), each on a fresh key"},
		run:      checkCrash,
		expected: passUnlessNotAtomic,
	})
}

// crashTrial is the client dying at one gap of a decision on a fresh key.
type crashTrial struct {
	gap      int    // which gap: 1 is between the first and the second round trip
	key      string // the trial's fresh key
	step     string // where the client died, e.g. "after INCR"; "" if no decision reached the gap
	request  int    // the request whose decision reached it
	immortal int64  // keys under key with no TTL afterwards
}

func checkCrash(ctx context.Context, t *trial) Cell {
	roundTrips, err := t.firstDecisionRoundTrips(ctx)
	if err != nil {
		return failf("%v", err)
	}
	trials := make([]crashTrial, max(1, roundTrips-1))
	for i := range trials {
		c := &trials[i]
		c.gap, c.key = i+1, t.key(fmt.Sprintf("gap%d", i+1))
		if cell, ok := t.crashAtGap(ctx, c); !ok {
			return cell
		}
		if c.immortal, err = t.immortal(ctx, c.key, t.window); err != nil {
			return failf("%v", err)
		}
	}
	allImmortal, err := t.immortal(ctx, t.keyPrefix(), t.window)
	if err != nil {
		return failf("%v", err)
	}
	notes, leaked, reached := make([]string, 0, len(trials)), int64(0), false
	for _, c := range trials {
		if c.step == "" {
			notes = append(notes, fmt.Sprintf("gap %d not reached in %d requests", c.gap, t.cfg.Limit+1))
			continue
		}
		reached = true
		v, err := t.describe(ctx, c.key)
		if err != nil {
			return failf("%v", err)
		}
		p, err := t.pttl(ctx, c.key)
		if err != nil {
			return failf("%v", err)
		}
		leaked += c.immortal
		notes = append(notes, fmt.Sprintf("gap %d, %s on request %d: %s left at %s with PTTL %s", c.gap, c.step, c.request, t.counterNoun(), v, pttlText(p)))
	}
	note := fmt.Sprintf("a fresh key's first decision took %d round trips; the client died at %d of %d gaps, each on a fresh key: %s",
		roundTrips, countReached(trials), len(trials), strings.Join(notes, "; "))
	switch {
	case leaked > 0:
		return Cell{Outcome: Leaks, Note: note}
	case allImmortal > 0 && !reached:
		return Cell{Outcome: Leaks, Note: fmt.Sprintf("no crash, yet %d %ss have no TTL", allImmortal, t.counterNoun())}
	case allImmortal > 0:
		return Cell{Outcome: Leaks, Note: fmt.Sprintf("%d %ss have no TTL, none of them a crashed decision's; %s", allImmortal, t.counterNoun(), note)}
	case !reached && t.info.Atomic:
		return Cell{Outcome: Pass}
	case !reached:
		return Cell{Outcome: Pass, Note: fmt.Sprintf("no gap between round trips reached in %d requests", t.cfg.Limit+1)}
	}
	return Cell{Outcome: Pass, Note: note + ", no immortal " + t.counterNoun()}
}

// firstDecisionRoundTrips counts the round trips of one decision on a
// fresh key, as a strategies.Tap sees them, after a decision on another
// fresh key has warmed up the strategy (a library that loads its scripts
// does it once).
func (t *trial) firstDecisionRoundTrips(ctx context.Context) (int, error) {
	if _, err := t.decide(ctx, t.key("warm")); err != nil {
		return 0, fmt.Errorf("warm-up request: %w", err)
	}
	n := 0
	counting := strategies.WithTap(ctx, &strategies.Tap{Sent: func(string) { n++ }})
	if _, err := t.decide(counting, t.key("probe")); err != nil {
		return 0, fmt.Errorf("first request on a fresh key: %w", err)
	}
	return n, nil
}

// crashAtGap sends requests for c.key until a decision reaches its
// c.gap-th gap, where the client dies, for at most limit+1 requests. It
// records the spot in c, and returns a FAIL cell, or ok.
func (t *trial) crashAtGap(ctx context.Context, c *crashTrial) (Cell, bool) {
	gaps := 0 // gaps reached in the current decision
	crashing := strategies.WithGap(ctx, func(_ context.Context, _, step string) error {
		if gaps++; c.step != "" || gaps < c.gap {
			return nil
		}
		c.step = step
		return strategies.ErrCrashed
	})
	n := int(t.cfg.Limit) + 1
	for i := 1; i <= n; i++ {
		gaps = 0
		_, err := t.decide(crashing, c.key)
		if c.step != "" {
			c.request = i
			if !errors.Is(err, strategies.ErrCrashed) {
				return failf("the client died %s (gap %d) on request %d, but the decision returned %v; want the crash", c.step, c.gap, i, err), false
			}
			return Cell{}, true
		}
		if err != nil {
			return failf("gap %d: request %d: %v", c.gap, i, err), false
		}
	}
	return Cell{}, true
}

// countReached counts the trials whose gap a decision reached.
func countReached(trials []crashTrial) int {
	n := 0
	for _, c := range trials {
		if c.step != "" {
			n++
		}
	}
	return n
}

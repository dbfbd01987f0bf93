package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/rlbench/rlbench/strategies"
)

// CheckRace: a pause between a read and a write, at the first gap the
// second request reaches, lasts until the key has expired; leaks when the
// write then recreates the key with no TTL.
const CheckRace = "race"

func init() {
	register(checkDef{
		Check:         Check{Name: CheckRace, Doc: "a pause between the read and the write, held until the key expires"},
		run:           checkRace,
		notApplicable: notStamped,
		expected: func(p strategies.Info, s Server) []Outcome {
			if p.Stamp != "" || p.KeysBeside {
				return []Outcome{NotApplicable}
			}
			return passUnlessNotAtomic(p, s)
		},
	})
}

// gapState records what a Gap saw; the strategy's client calls the Gap in
// the goroutine that called Decide.
type gapState struct {
	step    string // the first gap reached, e.g. "after GET"; "" if none
	request int    // the request that reached it
}

func checkRace(ctx context.Context, t *trial) Cell {
	key := t.key("k")
	if _, err := t.decide(ctx, key); err != nil {
		return failf("first request: %v", err)
	}
	var gap gapState
	var paused time.Duration
	var last int64 // the key's PTTL when the pause ended
	var gapErr error
	pausing := strategies.WithGap(ctx, func(decideCtx context.Context, _, step string) error {
		if gap.step != "" {
			return nil
		}
		gap.step = step
		start := time.Now()
		// Pause until the key has expired (or until it is clear that it
		// has no TTL to expire with).
		last, gapErr = t.waitGone(decideCtx, key, time.Duration(t.window)*time.Second+expiryGrace)
		paused = time.Since(start)
		return nil
	})
	n := int(t.cfg.Limit)
	for i := 2; i <= n && gap.step == ""; i++ {
		_, err := t.decide(pausing, key)
		if gap.step != "" {
			gap.request = i
		}
		if err != nil {
			return failf("request %d: %v", i, err)
		}
	}
	if gapErr != nil {
		return failf("pause %s: %v", gap.step, gapErr)
	}
	if gap.step != "" && last >= 0 {
		return failf("paused %s for %s, but the key did not expire (PTTL %s)", gap.step, paused.Round(time.Millisecond), pttlText(last))
	}
	immortal, err := t.immortal(ctx, t.keyPrefix(), t.window)
	if err != nil {
		return failf("%v", err)
	}
	if immortal > 0 {
		v, err := t.describe(ctx, key)
		if err != nil {
			return failf("%v", err)
		}
		if gap.step == "" {
			return Cell{Outcome: Leaks, Note: fmt.Sprintf("no pause, yet %d %ss have no TTL", immortal, t.counterNoun())}
		}
		if last == -1 { // nothing to expire: the key had no TTL before the pause
			return Cell{Outcome: Leaks, Note: fmt.Sprintf("paused %s on request %d: the %s had no TTL to expire with, and is now at %s; %d %ss have no TTL",
				gap.step, gap.request, t.counterNoun(), v, immortal, t.counterNoun())}
		}
		return Cell{Outcome: Leaks, Note: fmt.Sprintf("%s expired while paused %s on request %d (%s); the write recreated it at %s with no TTL",
			t.counterNoun(), gap.step, gap.request, paused.Round(time.Millisecond), v)}
	}
	switch {
	case gap.step == "" && t.info.Atomic:
		return Cell{Outcome: Pass}
	case gap.step == "":
		return Cell{Outcome: Pass, Note: fmt.Sprintf("no gap between a read and a write reached in requests 2 to %d", n)}
	}
	return Cell{Outcome: Pass, Note: fmt.Sprintf("%s expired while paused %s on request %d: no immortal %s", t.counterNoun(), gap.step, gap.request, t.counterNoun())}
}

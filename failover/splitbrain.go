package failover

import (
	"context"
	"fmt"
	"time"

	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/results"
)

// watchSplitBrain wraps ft.SplitBrain so that the watch measures what the
// split brain lost: it notes when it began, keeps what the set-up saw of
// the two masters, and once the old master has rejoined as a replica
// compares the counters with the counts told (compare), on the new master.
func (w *Watch) watchSplitBrain(ft *faults.Subject) {
	ft.SplitBrain = func(ctx context.Context, hold time.Duration) (string, error) {
		old, err := w.managed.MasterAddr(ctx)
		if err != nil {
			return "", fmt.Errorf("split brain: %w", err)
		}
		// After an earlier fault, the set-up may not be whole yet: the
		// wait is no part of this one.
		if err := w.managed.AwaitReady(ctx); err != nil {
			return "", fmt.Errorf("split brain: %w", err)
		}
		w.begin()
		b, err := w.managed.SplitBrain(ctx, hold)
		w.noteSplitBrain(b)
		if err != nil {
			return "", err
		}
		w.reads.Add(1)
		go w.compare(ctx, old)
		return b.String(), nil
	}
}

// noteSplitBrain keeps b for the report; the clients switched when the new
// master took its first write.
func (w *Watch) noteSplitBrain(b redisserver.SplitBrain) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.split == nil && !b.CutAt.IsZero() {
		w.split = &b
		if w.switched == 0 && b.NewFirstIncrement > 0 {
			w.switched = b.NewFirstIncrement
		}
	}
}

// splitBrainResult is the first split brain's figures, on the clock of the
// load that started at start; nil without one. The caller holds w.mu.
func (w *Watch) splitBrainResult(start time.Time) *results.SplitBrain {
	b := w.split
	if b == nil {
		return nil
	}
	seen := func(d time.Duration) float64 {
		if d == 0 {
			return -1
		}
		return d.Seconds()
	}
	return &results.SplitBrain{
		OldMaster: b.Old, NewMaster: b.New, CutAtS: b.CutAt.Sub(start).Seconds(),
		PromotedS: b.Promoted.Seconds(), HealedS: b.Healed.Seconds(), RejoinedS: b.Rejoined.Seconds(),
		OldIncrements: b.OldIncrements, NewIncrements: b.NewIncrements,
		OldLastIncrementS: seen(b.OldLastIncrement), NewFirstIncrementS: seen(b.NewFirstIncrement),
		BothMastersS: b.BothMasters().Seconds(),
	}
}

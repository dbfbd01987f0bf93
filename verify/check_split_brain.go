package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

// CheckSplitBrain: on a private Sentinel set-up with relays
// (redisserver.SentinelOptions.Relay): the master is cut off from its
// sentinels and replicas while the client, which dials it directly, keeps
// deciding, until a replica is promoted and the old master rejoins it. The
// cut comes at the first gap of a fresh key's first decision, once the
// round trip before it has reached the replicas (after it, for a decision
// of one round trip). It fails when the new master lacks increments the
// client was told of (every decision, but a rejection of a strategy whose
// rejections do not increment: naive, laravel), and leaks when the fresh key has no TTL there: an
// INCR replicated whose EXPIRE was not.
const CheckSplitBrain = "split-brain"

// splitBrainHold is how long the check keeps the master cut off.
const splitBrainHold = 3 * time.Second

// splitBrainWindow is the window, in seconds, of the check's strategy: its
// keys must outlive the split and the old master's rejoin (some 5
// seconds from the cut with the set-up's quick periods, topology.Spec
// QuickRejoin; 25 without, more on a loaded machine).
const splitBrainWindow = 120

func init() {
	register(checkDef{
		Check: Check{Name: CheckSplitBrain, ServerWide: true,
			Doc: "the master is cut off from its sentinels and replicas at a fresh key's first gap, the client deciding on; the increments and TTLs the promoted replica lacks"},
		window: splitBrainWindow,
		notApplicable: func(r *row) string {
			switch {
			case r.sentinel() == nil:
				return "needs a private Sentinel set-up with a replica and relays (--managed-sentinel R, R >= 1)"
			case !r.info.FixedWindow || r.info.Stamp != "" || r.hashFields():
				return "reads a fixed-window counter at the decision's key"
			}
			return ""
		},
		run: checkSplitBrain,
		expected: func(p strategies.Info, s Server) []Outcome {
			switch {
			case !s.Sentinel || !p.FixedWindow || p.Stamp != "" || p.Layout == strategies.LayoutHashField:
				return []Outcome{NotApplicable}
			case p.Atomic:
				return []Outcome{Fail} // replication is asynchronous: acknowledged increments are lost
			}
			return []Outcome{Fail, Leaks}
		},
	})
}

// splitSeen is what the split-brain check saw, for its note.
type splitSeen struct {
	brain redisserver.SplitBrain
	step  string // the gap the cut came at; "" after the decision
	acked int64  // increments of the counted key the client was told of
	// unincremented are the rejections of a strategy whose rejections do
	// not increment, not in acked.
	unincremented int64
	errored       int64            // decisions that errored during the split
	kinds         map[string]int64 // their kinds
	counter       int64            // the counted key's counter on the new master
	gapPTTL       int64            // the fresh key's PTTL on the new master
	gapValue      string           // the fresh key's counter there
}

func checkSplitBrain(ctx context.Context, t *trial) Cell {
	counted, fresh := t.key("counted"), t.key("fresh")
	seen := splitSeen{kinds: map[string]int64{}}
	first := time.Now()
	for range 3 {
		if _, err := t.decide(ctx, counted); err != nil {
			return failf("before the split: %v", err)
		}
		seen.acked++
	}
	wait, err := t.cutAtFirstGap(ctx, fresh, &seen)
	if err != nil {
		return failf("%v", err)
	}
	if err := t.decideThroughSplit(ctx, counted, wait, &seen); err != nil {
		return failf("%v", err)
	}
	if err := t.readNewMaster(ctx, counted, fresh, &seen); err != nil {
		return failf("%v", err)
	}
	return seen.cell(time.Since(first), t.window)
}

// cell judges what the split-brain check saw, since after the counted
// key's first decision, of a window in seconds: a counter read a window
// after its first decision may have expired by design and started again,
// so a count below the increments told is then too late to judge
// (Cell.late).
func (seen splitSeen) cell(since time.Duration, window int64) Cell {
	note := seen.note()
	switch {
	case seen.gapPTTL == -1:
		return Cell{Outcome: Leaks, Note: note}
	case seen.counter < seen.acked:
		return Cell{Outcome: Fail, Note: note, late: since.Milliseconds() >= window*1000-pttlTolerance}
	}
	return Cell{Outcome: Pass, Note: note}
}

// cutAtFirstGap decides once on the fresh key, cutting the master off at
// the decision's first gap once what it sent has reached the replicas, or
// after the decision when it has no gap. It returns StartSplitBrain's wait.
func (t *trial) cutAtFirstGap(ctx context.Context, fresh string, seen *splitSeen) (wait func() (redisserver.SplitBrain, error), err error) {
	// The trial's ctx, not the decision's, which ends with the decision.
	cut := func() error {
		if err := t.sentinel().AwaitReplicated(ctx, t.key("probe")); err != nil {
			return err
		}
		wait, err = t.sentinel().StartSplitBrain(ctx, splitBrainHold)
		return err
	}
	gapped := strategies.WithGap(ctx, func(_ context.Context, _, step string) error {
		if wait != nil || err != nil {
			return nil
		}
		seen.step = step
		return cut()
	})
	if _, derr := t.decide(gapped, fresh); derr != nil && err == nil {
		err = fmt.Errorf("the fresh key's first decision: %w", derr)
	}
	if wait == nil && err == nil {
		err = cut()
	}
	if err != nil && wait != nil {
		_, werr := wait() // heal, and let the set-up settle
		err = fmt.Errorf("%w (and the split brain: %v)", err, werr)
	}
	return wait, err
}

// decideThroughSplit decides on key until wait returns (the old master has
// rejoined), counting the increments the client is told of: every
// decision, or only those allowed for a strategy whose rejections do not
// increment (rejectionsIncrement).
func (t *trial) decideThroughSplit(ctx context.Context, key string, wait func() (redisserver.SplitBrain, error), seen *splitSeen) error {
	done := make(chan error, 1)
	go func() {
		b, err := wait()
		seen.brain = b
		done <- err
	}()
	for {
		select {
		case err := <-done:
			return err
		default:
		}
		switch d, err := t.decideWithin(ctx, key, time.Second); {
		case err != nil:
			seen.errored++
			seen.kinds[results.ErrorKind(err)]++
		case d.Allowed || t.rejectionsIncrement():
			seen.acked++
		default:
			seen.unincremented++
		}
		if err := sleep(ctx, 2*time.Millisecond); err != nil {
			return <-done
		}
	}
}

// rejectionsIncrement reports whether the strategy's rejections increment
// its counter: not naive's (it reads, then rejects; Info.CountIsRead) nor
// laravel's (Info.RejectsUnincremented), as the failover watch counts
// increments (countsIncrements).
func (t *trial) rejectionsIncrement() bool {
	return !t.info.CountIsRead && !t.info.RejectsUnincremented
}

// readNewMaster reads the counted key's counter and the fresh key's PTTL
// on the new master.
func (t *trial) readNewMaster(ctx context.Context, counted, fresh string, seen *splitSeen) error {
	rdb := connection.Admin{PoolSize: 1}.PlainClient(seen.brain.New)
	defer rdb.Close()
	n, err := rdb.Get(ctx, counted).Int64()
	if err == redis.Nil {
		n, err = 0, nil // every increment lost, or the counter expired
	}
	if err != nil {
		return fmt.Errorf("get %s on the new master %s: %w", counted, seen.brain.New, err)
	}
	seen.counter = n
	if seen.gapPTTL, err = rdb.Do(ctx, "PTTL", fresh).Int64(); err != nil {
		return fmt.Errorf("pttl %s on the new master %s: %w", fresh, seen.brain.New, err)
	}
	seen.gapValue = rdb.Get(ctx, fresh).Val()
	return nil
}

// note says what the split-brain check saw.
func (seen splitSeen) note() string {
	at := "after the fresh key's first decision (one round trip)"
	if seen.step != "" {
		at = "at the fresh key's first gap, " + seen.step
	}
	s := fmt.Sprintf("cut %s; %s; the client was told of %d increments of one key, the new master counts %d (%d lost); the fresh key on the new master: %q, PTTL %s",
		at, seen.brain, seen.acked, seen.counter, max(seen.acked-seen.counter, 0), seen.gapValue, pttlText(seen.gapPTTL))
	if seen.unincremented > 0 {
		s += fmt.Sprintf("; %d rejections during the split, which do not increment, not counted", seen.unincremented)
	}
	if seen.errored > 0 {
		s += fmt.Sprintf("; %d decisions errored during the split (%s)", seen.errored, results.FormatErrorKinds(seen.kinds, ", "))
	}
	return s
}

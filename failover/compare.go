package failover

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/workload"
)

// compare compares, once a failover is done, the increments the clients
// were told of with the counters on the new master (see
// results.LostIncrements); then, once the sentinels have made the old
// master (at old) a replica, which takes them some 10 seconds, it compares
// again: the writes that clients which had not switched yet sent to the
// old master until then are lost too. The wait also leaves the set-up
// whole, with a replica to promote, for the next failover. Comparisons run
// one at a time.
func (w *Watch) compare(ctx context.Context, old string) {
	defer w.reads.Done()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*failoverReadTimeout)
	defer cancel()
	w.compareOnce(ctx)
	if err := w.managed.AwaitReplica(ctx, old); err != nil {
		w.fail(fmt.Errorf("lost increments: %w", err))
		return
	}
	w.compareOnce(ctx)
	if err := w.managed.AwaitReady(ctx); err != nil {
		w.fail(fmt.Errorf("after the failover: %w", err))
	}
}

// fail notes why a comparison failed.
func (w *Watch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, err)
}

// compareOnce pauses writes on the masters, waits for the replies in
// flight, reads the followed keys' counters on the new master and settles
// each key's count against its counter; nothing for a strategy whose
// increments the watch does not count.
func (w *Watch) compareOnce(ctx context.Context) {
	if !w.counts {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.readAndSettle(ctx); err != nil {
		w.errs = append(w.errs, err)
	}
}

// readAndSettle is compareOnce; the caller holds w.mu.
func (w *Watch) readAndSettle(ctx context.Context) (err error) {
	master, err := w.managed.MasterAddr(ctx)
	if err != nil {
		return fmt.Errorf("lost increments: %w", err)
	}
	unpause, err := w.managed.PauseWrites(ctx, failoverPauseHold)
	if err != nil {
		return fmt.Errorf("lost increments: %w", err)
	}
	defer func() { err = errors.Join(err, unpause(ctx)) }()
	w.drain(ctx)
	readAt := time.Now()
	acked := w.snapshot()
	rdb := connection.Admin{PoolSize: 1}.PlainClient(master)
	defer rdb.Close()
	counters, err := readCounters(ctx, rdb, w.prefix, len(w.keys))
	if err != nil {
		return fmt.Errorf("lost increments: read the counters on %s: %w", master, err)
	}
	if w.readAt.IsZero() {
		w.readAt = readAt
	}
	// A later comparison may find fewer keys to compare (windows that
	// ended since): the figure is the most any comparison compared.
	w.master, w.compared = master, max(w.compared, w.settle(acked, counters, readAt))
	return nil
}

// ackedKey is one key's count of increments told, and when its window
// opened.
type ackedKey struct {
	acked    int64
	openedAt time.Time
}

// drain waits until no reply has arrived for failoverDrainQuiet checks in
// a row, at most failoverDrainMax: the replies of the increments that ran
// before the pause.
func (w *Watch) drain(ctx context.Context) {
	deadline := time.Now().Add(failoverDrainMax)
	last, quiet := int64(-1), 0
	for quiet < failoverDrainQuiet && time.Now().Before(deadline) && ctx.Err() == nil {
		var sum int64
		for i := range w.keys {
			wk := &w.keys[i]
			wk.mu.Lock()
			sum += wk.acked
			wk.mu.Unlock()
		}
		if sum == last {
			quiet++
		} else {
			last, quiet = sum, 0
		}
		time.Sleep(failoverDrainPoll)
	}
}

// snapshot returns each followed key's increments told in its current
// window.
func (w *Watch) snapshot() []ackedKey {
	out := make([]ackedKey, len(w.keys))
	for i := range w.keys {
		wk := &w.keys[i]
		wk.mu.Lock()
		out[i] = ackedKey{wk.acked, wk.openedAt}
		wk.mu.Unlock()
	}
	return out
}

// readCounters reads the counters of keys 0 to n-1 under prefix with
// pipelined GETs, failoverReadChunk at a time (a cluster client sends each
// to its key's node); -1 for a key that does not exist (or holds no
// integer).
func readCounters(ctx context.Context, rdb redis.Cmdable, prefix string, n int) ([]int64, error) {
	out := make([]int64, 0, n)
	for from := 0; from < n; from += failoverReadChunk {
		cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := from; i < n && i < from+failoverReadChunk; i++ {
				p.Get(ctx, workload.KeyName(prefix, i))
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		for _, cmd := range cmds {
			c, err := strconv.ParseInt(cmd.(*redis.StringCmd).Val(), 10, 64)
			if err != nil {
				c = -1
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// settleAtEnd compares, once the load is over and every reply is in, each
// followed key's counter with the increments the clients were told of in
// its current window, read through the target's admin connection (which
// follows a Sentinel master); nothing for a strategy whose increments the
// watch does not count.
func (w *Watch) settleAtEnd(ctx context.Context) {
	if !w.counts {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failoverReadTimeout)
	defer cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	readAt := time.Now()
	acked := w.snapshot()
	for i := range acked {
		// Keys whose counters say nothing exact (watchedKey.abandoned,
		// turned) are not compared: settle skips a key told of nothing.
		wk := &w.keys[i]
		wk.mu.Lock()
		switch {
		case acked[i].acked == 0:
		case wk.abandoned:
			acked[i].acked = 0
			w.cutShort++
		case wk.turned:
			acked[i].acked = 0
			w.turned++
		}
		wk.mu.Unlock()
	}
	counters, err := readCounters(ctx, w.admin, w.prefix, len(w.keys))
	if err != nil {
		w.errs = append(w.errs, fmt.Errorf("lost increments: read the counters at the end of the load: %w", err))
		return
	}
	if w.master == "" {
		w.master, w.readAt = w.server, readAt
	}
	w.compared = max(w.compared, w.settle(acked, counters, readAt))
}

// settle compares each key's increments told (acked) with its counter on
// the new master, read at readAt, adds what was lost or unacknowledged to
// the key, and sets its count to the counter's, so that a later failover
// counts only its own losses. A key the clients were told nothing of is
// skipped; so is a missing key whose window may have ended (a missing key
// whose window is still open lost every increment). It returns the number
// of keys compared.
func (w *Watch) settle(acked []ackedKey, counters []int64, readAt time.Time) int64 {
	var compared int64
	for i, a := range acked {
		if a.acked == 0 {
			continue
		}
		counter := counters[i]
		if counter < 0 {
			if a.openedAt.IsZero() || !readAt.Before(a.openedAt.Add(w.window-time.Second)) {
				continue
			}
			counter = 0
		}
		compared++
		diff := a.acked - counter // > 0: lost, < 0: unacknowledged
		wk := &w.keys[i]
		wk.mu.Lock()
		wk.acked -= diff
		if diff > 0 {
			wk.lost += diff
			wk.lostTotal += diff
		} else {
			wk.unacked -= diff
		}
		wk.mu.Unlock()
	}
	return compared
}

// lostIncrements sums the keys' lost increments; the windows still open
// count their over-admission as they stand. The caller holds w.mu.
func (w *Watch) lostIncrements(start time.Time) *results.LostIncrements {
	if !w.counts {
		return &results.LostIncrements{Error: "the strategy keeps no increment-first counter"}
	}
	l := &results.LostIncrements{Master: w.master, KeysCompared: w.compared, KeysCutShort: w.cutShort, KeysTurned: w.turned}
	if !w.readAt.IsZero() {
		l.ReadAtS = w.readAt.Sub(start).Seconds()
	}
	for i := range w.keys {
		wk := &w.keys[i]
		wk.mu.Lock()
		over := wk.over
		if wk.lost > 0 {
			over += max(wk.allowed-w.limit, 0)
		}
		lost, unacked := wk.lostTotal, wk.unacked
		wk.mu.Unlock()
		if lost > 0 {
			l.Keys++
			l.Increments += lost
			l.MaxPerKey = max(l.MaxPerKey, lost)
		}
		if over > 0 {
			l.OverAdmittedKeys++
			l.OverAdmitted += over
		}
		l.Unacknowledged += unacked
	}
	l.Phantom = l.Unacknowledged
	// A key whose counter started again while its window was open (seen
	// by observe) was compared too, with the count of one.
	l.KeysCompared = max(l.KeysCompared, l.Keys)
	if err := errors.Join(w.errs...); err != nil {
		l.Error = err.Error()
	} else if l.KeysCompared == 0 {
		l.Error = noKeyCompared(l)
	}
	return l
}

// noKeyCompared says why lost increments were not measured when every
// comparison found no key to compare, by the keys it left out (l's
// KeysCutShort and KeysTurned); docs/output.md gives the reasons in full:
// no counter was read, or every key the clients had been told of had a
// decision cut short (by --crash-rate or the end of the load: its
// increment may or may not have run), or had its window end before its
// counter was read (a fault too close to the end of a load shorter than
// the window, or clients that switched late: the count is exact while a
// key's first window lasts, a --duration under the --window).
func noKeyCompared(l *results.LostIncrements) string {
	switch {
	case l.KeysCutShort > 0 && l.KeysCutShort >= l.KeysTurned:
		return "no key could be compared: every key had a decision cut short (--crash-rate or the end of the load), whose increment may or may not have run"
	case l.KeysTurned > 0:
		return "no key could be compared: each window ended before its counter was read (a --duration under the --window compares them all)"
	}
	return "no key could be compared: no counter the clients were told of was read"
}

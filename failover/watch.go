// Package failover keeps the counts of an increment-first counter exact:
// at the end of a cell's load it compares the server's counters with the
// increments the clients were told of (lost and phantom increments), and
// measures what a sentinel-failover fault does to the cell (its recovery,
// the increments the promoted replica never saw). New is its entry point.
package failover

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/admission"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/probe"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

const (
	// failoverPauseHold bounds how long the masters' writes stay paused
	// while the lost increments are read: the server lifts the pause by
	// itself if rlbench does not.
	failoverPauseHold = 5 * time.Second
	// failoverDrainPoll is how often the watch checks, writes paused,
	// whether replies still arrive; failoverDrainQuiet is how many checks
	// in a row must see none before the counters are read, and
	// failoverDrainMax bounds the wait.
	failoverDrainPoll  = 20 * time.Millisecond
	failoverDrainQuiet = 3
	failoverDrainMax   = time.Second
	// failoverReadTimeout bounds one comparison of the counters.
	failoverReadTimeout = 30 * time.Second
	// failoverReadChunk is how many counters one MGET reads.
	failoverReadChunk = 1000
)

// Watch keeps the counts of an increment-first counter strategy
// exact: at the end of every such cell's load it compares the server's
// counters with the increments the clients were told of (lost and phantom
// increments). It also measures what the sentinel-failover fault does to
// one cell: when its decisions fail and succeed again (recovery), and the
// increments that the promoted replica never saw. It observes each
// decision of the measured load (Observe), which only a cell of such a
// strategy, or with that fault, pays for, and it follows the keys that
// package admission follows, with the same bound.
type Watch struct {
	// managed is the Sentinel set-up a sentinel-failover fault fails
	// over; nil without one.
	managed *redisserver.Sentinel
	// admin is the target's admin connection, which reads the counters at
	// the end of the load; server names the target for the report.
	admin  redis.UniversalClient
	server string
	prefix string
	limit  int64
	window time.Duration
	// counts is true when lost increments are measured: every successful
	// decision of the strategy is one increment, and its Count its rank.
	counts bool
	keys   []watchedKey
	clock  recoveryClock
	// fallbacks reads the client's NOSCRIPT fallbacks.
	fallbacks func() int64

	// reads is the comparisons under way, one per failover.
	reads sync.WaitGroup
	mu    sync.Mutex // guards the fields below and serialises the comparisons
	// started is true once a failover has begun; fallbacksAt is the
	// client's fallback count then.
	started     bool
	fallbacksAt int64
	// switched is how long after the first failover began the cell's
	// clients had a connection on the new master; 0 until seen.
	switched time.Duration
	// split is what the split-brain fault did; nil without one.
	split *redisserver.SplitBrain
	// readAt is when the first comparison read the counters; master is
	// the last one's new master, compared the most keys one compared;
	// errs say why comparisons failed.
	readAt   time.Time
	master   string
	compared int64
	// cutShort and turned are the keys the comparison at the end of the
	// load left out, by why (watchedKey.abandoned, turned).
	cutShort, turned int64
	errs             []error
	// failover is what Stop found, for Report.
	failover results.Failover
}

// watchedKey is what the watch follows of one key in its current window.
type watchedKey struct {
	mu sync.Mutex
	// acked is the number of increments the clients were told of in the
	// key's current window; allowed the number admitted.
	acked, allowed int64
	// openedAt is when the decision of the window's first increment
	// (Count 1) was sent, no later than the server made the counter: the
	// window ends no earlier than a window after it. Zero when it was not
	// seen. firstAt is when the first decision the watch was told of on
	// the key was sent. A reply read late (a loaded machine) moves neither.
	openedAt, firstAt time.Time
	// lost is the increments a failover lost in the current window; over
	// the requests admitted beyond the limit in windows that lost some,
	// those closed so far.
	lost, over int64
	// lostTotal and unacked are the increments lost, and found on the new
	// master though no client was told of them, over every failover.
	lostTotal, unacked int64
	// abandoned is set when a decision on the key was cut short by the
	// end of the load, an interrupt or --crash-rate: the server may run its
	// increment, and open a new window with it, though no client is told.
	// turned is set once the key's first window has ended: replies that
	// overtake a window's first (or come after the next one's) cannot be
	// told apart by window. The comparison at the end of the load leaves
	// out such keys: their counters say nothing exact.
	abandoned, turned bool
}

// Options are what a Watch of one cell's measured load reads and follows.
type Options struct {
	// Strategy is the cell's strategy; the watch counts its increments
	// when countsIncrements says so.
	Strategy strategies.Info
	// Increments is set when a user strategy's first decisions showed
	// that each decision, a rejection included, is one increment of a
	// string counter at its key, its count the request's rank: the watch
	// counts its increments, claimed or not. Unused for a built-in one,
	// whose Info says it.
	Increments bool
	// Admin is the target's admin connection, which reads the counters at
	// the end of the load; Server names the target for the report.
	Admin  redis.UniversalClient
	Server string
	// Prefix is the cell's key prefix; Keys its number of keys.
	Prefix string
	Keys   int
	// Limit and Window are the cell's, Window in whole seconds.
	Limit, Window int64
	// Fallbacks reads the client's NOSCRIPT fallbacks.
	Fallbacks func() int64
	// Managed is the private Sentinel set-up of the target; nil for any
	// other. Faults are the cell's.
	Managed *redisserver.Sentinel
	Faults  []faults.Fault
}

// New returns the watch of a cell's measured load: for a strategy whose
// increments it counts (countsIncrements), or a sentinel-failover fault on
// a managed Sentinel set-up, whose ft.Failover it wraps so that each
// failover's lost increments are read once it is done (and a split-brain
// fault's ft.SplitBrain, once the old master has rejoined); nil for any
// other cell, which then has no such probe. The cell's load shows it each
// decision (Observe); its Report fills the run's Failover group.
func New(ft *faults.Subject, o Options) *Watch {
	info, managed := o.Strategy, o.Managed
	failovers := managed != nil && ft.Failover != nil &&
		slices.ContainsFunc(o.Faults, func(f faults.Fault) bool { return f.Kind == faults.SentinelFailover })
	splits := managed != nil && ft.SplitBrain != nil &&
		slices.ContainsFunc(o.Faults, func(f faults.Fault) bool { return f.Kind == faults.SplitBrain })
	counts := countsIncrements(info, o.Increments)
	if !counts && !failovers && !splits {
		return nil
	}
	w := &Watch{
		admin: o.Admin, server: o.Server, prefix: o.Prefix, limit: o.Limit,
		window:    time.Duration(o.Window) * time.Second,
		counts:    counts,
		keys:      make([]watchedKey, min(o.Keys, admission.MaxTrackedKeys)),
		fallbacks: o.Fallbacks,
	}
	if splits {
		w.managed = managed
		w.watchSplitBrain(ft) // splitbrain.go
	}
	if !failovers {
		return w
	}
	w.managed = managed
	failover, name := ft.Failover, ft.ClientName
	ft.Failover = func(ctx context.Context) (string, error) {
		old, err := w.managed.MasterAddr(ctx)
		if err != nil {
			return "", fmt.Errorf("sentinel failover: %w", err)
		}
		// After an earlier failover, the set-up may not be whole yet: the
		// wait is no part of this one.
		if err := w.managed.AwaitReady(ctx); err != nil {
			return "", fmt.Errorf("sentinel failover: %w", err)
		}
		began := w.begin()
		what, err := failover(ctx)
		if err != nil {
			return "", err
		}
		what += w.awaitClients(ctx, name, began)
		w.reads.Add(1)
		go w.compare(ctx, old)
		return what, nil
	}
	return w
}

// countsIncrements reports whether the watch counts the increments of a
// strategy: an increment-first fixed-window counter (each successful
// decision is one increment, its Count its rank) whose counter is a
// string at its key, and whose rejections increment it too; for a user
// strategy, whatever it claims, when its first decisions showed it
// (userIncrements: Options.Increments).
func countsIncrements(info strategies.Info, userIncrements bool) bool {
	if info.Source != "" {
		return userIncrements
	}
	return info.FixedWindow && !info.CountIsRead && !info.RejectsUnincremented && info.Layout == ""
}

// begin notes that a failover begins, and returns when.
func (w *Watch) begin() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if !w.started {
		w.started, w.fallbacksAt = true, w.fallbacks()
	}
	return now
}

// awaitClients waits, at most failoverReadTimeout, until a connection
// named name (the cell's client's) is open on the new master, notes how
// long after began that was, and says so for the fault's report.
func (w *Watch) awaitClients(ctx context.Context, name string, began time.Time) string {
	ctx, cancel := context.WithTimeout(ctx, failoverReadTimeout)
	defer cancel()
	master, err := w.managed.MasterAddr(ctx)
	if err != nil {
		return " (the cell's clients were not seen on the new master: " + err.Error() + ")"
	}
	rdb := connection.Admin{PoolSize: 1}.PlainClient(master)
	defer rdb.Close()
	for {
		list, err := rdb.ClientList(ctx).Result()
		if err == nil && strings.Contains(list, " name="+name+" ") {
			break
		}
		select {
		case <-ctx.Done():
			return " (the cell's clients were not seen on the new master within " + failoverReadTimeout.String() + ")"
		case <-time.After(failoverDrainPoll):
		}
	}
	switched := time.Since(began)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.switched == 0 {
		w.switched = switched
	}
	return fmt.Sprintf(" (the cell's clients reached it %s after the failover began)", switched.Round(time.Millisecond))
}

// Start does nothing: the watch follows the load from its first decision.
func (w *Watch) Start(context.Context) {}

// Observe shows the watch the outcome of a decision.
func (w *Watch) Observe(d probe.Decision) {
	switch {
	case d.Cut:
		// An interrupt, or --crash-rate's cut: not the failover's doing,
		// and the decision's increment may yet run.
		w.abandon(d.Name)
	case errors.Is(d.Err, strategies.ErrCrashed):
		// A crash that --crash-rate simulates: not the failover's doing.
	case d.Err != nil:
		if w.managed != nil { // only a failover's recovery is timed
			w.clock.failed()
		}
	default:
		if w.managed != nil {
			w.clock.succeeded()
		}
		replied := time.Now()
		w.observe(d.Name, strategies.Decision{Allowed: d.Allowed, Count: d.Count}, replied.Add(d.Sent-d.At), replied)
	}
}

// Stop waits for every failover's comparison, then compares the counters
// at the end of the load that started at started (result), once its
// decisions are done and before the audit deletes the keys.
func (w *Watch) Stop(ctx context.Context, started time.Time) {
	w.failover = w.result(ctx, started)
}

// Report fills run.Failover.
func (w *Watch) Report(run *results.Run) { run.Failover = w.failover }

var (
	_ probe.Probe    = (*Watch)(nil)
	_ probe.Observer = (*Watch)(nil)
)

// abandon marks key's counter as not to be compared at the end of the load
// (watchedKey.abandoned).
func (w *Watch) abandon(key string) {
	if !w.counts {
		return
	}
	if k, ok := keyspace.KeyIndex(w.prefix, key); ok && k < len(w.keys) {
		w.keys[k].mu.Lock()
		w.keys[k].abandoned = true
		w.keys[k].mu.Unlock()
	}
}

// observe counts a successful decision d on key, sent at sent and its
// reply read at replied: the server ran it between the two.
func (w *Watch) observe(key string, d strategies.Decision, sent, replied time.Time) {
	if !w.counts {
		return
	}
	k, ok := keyspace.KeyIndex(w.prefix, key)
	if !ok || k >= len(w.keys) {
		return
	}
	wk := &w.keys[k]
	wk.mu.Lock()
	if since := cmp.Or(wk.openedAt, wk.firstAt); d.Count != 1 && !since.IsZero() && !replied.Before(since.Add(w.window)) {
		// A window may have ended since (the server may have run d after
		// it), and the next one's first increment was not told (its
		// decision crashed or failed after the server ran it): the window
		// the counter is in cannot be told apart.
		wk.turned = true
	}
	if wk.firstAt.IsZero() {
		wk.firstAt = sent
	}
	switch {
	case d.Count == 1 && wk.openedAt.IsZero() && wk.acked > 0:
		// The first window's first increment, whose reply came after
		// those of later ones.
		wk.openedAt = sent
	case d.Count == 1:
		wk.turned = wk.turned || wk.acked > 0 // a window before this one
		if wk.acked > 0 && !wk.openedAt.IsZero() && replied.Before(wk.openedAt.Add(w.window-time.Second)) {
			// The counter started again while its window was surely open
			// (the server ran d before the window's earliest end, less a
			// second): the new master never had it, so every increment
			// told in the window is lost, and what it admits counts with
			// the window.
			wk.lost += wk.acked
			wk.lostTotal += wk.acked
			wk.acked = 0
		} else {
			wk.closeWindow(w.limit)
		}
		wk.openedAt = sent
	}
	wk.acked++
	if d.Allowed {
		wk.allowed++
	}
	wk.mu.Unlock()
}

// closeWindow ends the key's current window: a window that lost
// increments adds what it admitted beyond the limit. The caller holds
// wk.mu.
func (wk *watchedKey) closeWindow(limit int64) {
	if wk.lost > 0 {
		wk.over += max(wk.allowed-limit, 0)
	}
	wk.acked, wk.allowed, wk.lost, wk.openedAt = 0, 0, 0, time.Time{}
}

// result returns, once every failover's comparison is done, the lost and
// phantom increments of the load that started at start, compared at its
// end (settleAtEnd), and the figures of its failovers; empty when it
// counts no increments and no failover began.
func (w *Watch) result(ctx context.Context, start time.Time) results.Failover {
	w.reads.Wait()
	w.settleAtEnd(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started {
		if w.counts {
			return results.Failover{LostIncrements: w.lostIncrements(start)}
		}
		return results.Failover{}
	}
	rec := w.clock.result(start)
	rec.ScriptFallbacks = w.fallbacks() - w.fallbacksAt
	rec.ClientsSwitchedS = -1
	if w.switched > 0 {
		rec.ClientsSwitchedS = w.switched.Seconds()
	}
	return results.Failover{FailoverRecovery: &rec, LostIncrements: w.lostIncrements(start), SplitBrain: w.splitBrainResult(start)}
}

// recoveryClock notes when decisions fail and when they succeed again.
// A success costs one atomic load unless a failure is still unanswered.
type recoveryClock struct {
	// pending is true from a failure to the next success.
	pending atomic.Bool
	mu      sync.Mutex
	// failures counts the failed decisions; the times are those of the
	// first and the last failure, the first success after the first one
	// and the first success after the last one (zero until it comes).
	failures                                   int64
	firstFailure, lastFailure                  time.Time
	firstSuccess, firstSuccessAfterLastFailure time.Time
}

// failed notes a failed decision.
func (c *recoveryClock) failed() {
	c.mu.Lock()
	now := time.Now()
	if c.failures == 0 {
		c.firstFailure = now
	}
	c.failures++
	c.lastFailure, c.firstSuccessAfterLastFailure = now, time.Time{}
	c.pending.Store(true)
	c.mu.Unlock()
}

// succeeded notes a successful decision.
func (c *recoveryClock) succeeded() {
	if !c.pending.Load() {
		return
	}
	c.mu.Lock()
	if c.pending.Load() {
		now := time.Now()
		if c.firstSuccess.IsZero() {
			c.firstSuccess = now
		}
		c.firstSuccessAfterLastFailure = now
		c.pending.Store(false)
	}
	c.mu.Unlock()
}

// result returns the clock's figures, on the clock of a load that started
// at start.
func (c *recoveryClock) result(start time.Time) results.FailoverRecovery {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := results.FailoverRecovery{FailedDecisions: c.failures}
	if c.failures == 0 {
		return r
	}
	r.FirstFailureS, r.LastFailureS = c.firstFailure.Sub(start).Seconds(), c.lastFailure.Sub(start).Seconds()
	r.RecoveryS, r.FailingS = -1, -1
	if !c.firstSuccess.IsZero() {
		r.RecoveryS = c.firstSuccess.Sub(c.firstFailure).Seconds()
	}
	if !c.firstSuccessAfterLastFailure.IsZero() {
		r.FailingS = c.firstSuccessAfterLastFailure.Sub(c.firstFailure).Seconds()
	}
	return r
}

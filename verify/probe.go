package verify

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/strategies"
)

// Timing of the checks.
const (
	// longWindow is the window, in seconds, of the checks that must stay
	// inside one window however slow the machine is ("repeated",
	// "concurrent").
	longWindow = 30
	// pttlTolerance absorbs PTTL's millisecond rounding.
	pttlTolerance = 25
	// pollInterval is the pause between two reads of a key being waited on.
	pollInterval = 10 * time.Millisecond
	// expiryGrace is how long past the window the checks wait for a key to
	// expire, or for a window-less strategy to admit again.
	expiryGrace = 2 * time.Second
)

// decide makes one decision, bounded in time so that a lost server cannot
// hang a check.
func (t *trial) decide(ctx context.Context, key string) (strategies.Decision, error) {
	return t.decideWithin(ctx, key, time.Duration(t.cfg.Window)*time.Second+expiryGrace+5*time.Second)
}

func (t *trial) decideWithin(ctx context.Context, key string, d time.Duration) (strategies.Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return t.strategy.Decide(ctx, t.client, key)
}

// sequence makes limit+extra decisions on key and checks that exactly the
// first limit are allowed. It returns a FAIL cell, or ok.
func (t *trial) sequence(ctx context.Context, key string, extra int, when string) (Cell, bool) {
	if err := t.roomInWindow(ctx, key); err != nil {
		return failf("%v", err), false
	}
	n := int(t.cfg.Limit) + extra
	start := time.Now()
	for i := 1; i <= n; i++ {
		t.decided = time.Now()
		d, err := t.decide(ctx, key)
		if err != nil {
			return failf("%srequest %d of %d: %v", when, i, n, err), false
		}
		if want := int64(i) <= t.cfg.Limit; d.Allowed != want {
			cell := failf("%srequest %d %s (count %d), %dms after the first; want exactly %d allowed, then rejected",
				when, i, allowedWord(d.Allowed), d.Count, time.Since(start).Milliseconds(), t.cfg.Limit)
			// A request allowed past the limit once a request's share of
			// the window has gone by may have been given back by the
			// strategy: too late to judge.
			cell.late = d.Allowed && time.Since(start) >= t.lateAfter()
			return cell, false
		}
	}
	return Cell{}, true
}

// lateAfter is how long after a decision its keys and the requests it
// counted may be gone by design: one request's share of the window
// (window/limit), the time a GCRA or token bucket takes to give one back
// and the shortest TTL any strategy sets after a decision. A key missing,
// or a request allowed past the limit, that long after is a reading too
// late to judge (Cell.late), not a failure; sooner, it is one.
func (t *trial) lateAfter() time.Duration {
	return time.Duration(t.window) * time.Second / time.Duration(t.cfg.Limit)
}

// roomInWindow waits, for a strategy whose keys are stamped with the
// clock's window, until at least two thirds of the window that decisions
// on key count in lie ahead, so that the requests of a check that must
// stay in one window do not cross into the next (which starts a new key).
// The window ends where the strategy's WindowEnd says, or else at the
// next multiple of the window since the epoch.
func (t *trial) roomInWindow(ctx context.Context, key string) error {
	if t.info.Stamp == "" {
		return nil
	}
	w := time.Duration(t.window) * time.Second
	now := time.Now()
	left := w - time.Duration(now.UnixNano())%w
	if t.info.WindowEnd != nil {
		left = t.info.WindowEnd(key, t.window, now).Sub(now)
	}
	if left >= 2*w/3 {
		return nil
	}
	return sleep(ctx, left+50*time.Millisecond)
}

// allowedFresh sends one request for key, named what in failures, and
// checks that it is allowed and, for a fixed window, that it started a
// fresh counter (freshCounter, with when).
func (t *trial) allowedFresh(ctx context.Context, key, what, when string) (Cell, bool) {
	// A stamped key may live only for what is left of its window
	// (mennanov's PEXPIRE): one made in a window's last milliseconds is
	// gone before the check reads it.
	if err := t.roomInWindow(ctx, key); err != nil {
		return failf("%s: %v", what, err), false
	}
	decided := time.Now()
	t.decided = decided
	d, err := t.decide(ctx, key)
	if err != nil {
		return failf("%s: %v", what, err), false
	}
	if !d.Allowed {
		return failf("%s rejected (count %d); want allowed", what, d.Count), false
	}
	if t.info.FixedWindow {
		return t.freshCounter(ctx, key, decided, when)
	}
	return Cell{}, true
}

// ttlsSet audits the trial's keys: there must be some, none immortal,
// none with a TTL beyond the trial's window. None at all, lateAfter the
// trial's last decision or later, may have expired by design: too late
// to judge.
func (t *trial) ttlsSet(ctx context.Context) Cell { return t.ttlsSetUnder(ctx, t.keyPrefix()) }

// ttlsSetUnder is ttlsSet of the keys under prefix.
func (t *trial) ttlsSetUnder(ctx context.Context, prefix string) Cell {
	cell := t.row.ttlsSet(ctx, prefix, t.window)
	cell.late = cell.noKey && !t.decided.IsZero() && time.Since(t.decided) >= t.lateAfter()
	cell.noKey = false
	return cell
}

// hashFields reports whether the row's counters are hash fields
// (strategies.LayoutHashField): the counter of key is then the field
// counterField of the hash at key, with a TTL of its own.
func (r *row) hashFields() bool { return r.info.Layout == strategies.LayoutHashField }

// counterField is the field a hash-field strategy counts in: the checks
// build their strategies with one field per key.
var counterField = strategies.FieldName(0)

// pttl reads the PTTL, in milliseconds, of the counter at key: the key's,
// or its field's for a hash-field strategy. -1 for no TTL, -2 for no
// counter.
func (r *row) pttl(ctx context.Context, key string) (int64, error) {
	if !r.hashFields() {
		return r.keyPTTL(ctx, key)
	}
	v, err := r.observer.HPTTL(ctx, key, counterField).Result()
	switch {
	case err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE"):
		return r.keyPTTL(ctx, key) // not a hash: the key is what there is
	case err != nil:
		return 0, fmt.Errorf("hpttl %s fields 1 %s: %w", key, counterField, err)
	case len(v) != 1:
		return 0, fmt.Errorf("hpttl %s fields 1 %s: %d replies; want 1", key, counterField, len(v))
	}
	return v[0], nil
}

// keyPTTL reads key's own PTTL in milliseconds: -1 for no TTL, -2 for no key.
func (r *row) keyPTTL(ctx context.Context, key string) (int64, error) {
	n, err := r.observer.Do(ctx, "PTTL", key).Int64()
	if err != nil {
		return 0, fmt.Errorf("pttl %s: %w", key, err)
	}
	return n, nil
}

// value reads the counter at key as a string (the field's value for a
// hash-field strategy); "(none)" when it does not exist.
func (r *row) value(ctx context.Context, key string) (string, error) {
	cmd := r.observer.Get(ctx, key)
	if r.hashFields() {
		cmd = r.observer.HGet(ctx, key, counterField)
	}
	v, err := cmd.Result()
	if err == redis.Nil {
		return "(none)", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", strings.ToLower(cmd.Name()), key, err)
	}
	return v, nil
}

// seedCounter sets the counter at key to n with no TTL: SET, or HSET of
// the field for a hash-field strategy.
func (r *row) seedCounter(ctx context.Context, key string, n int64) error {
	if r.hashFields() {
		return r.observer.HSet(ctx, key, counterField, n).Err()
	}
	return r.observer.Set(ctx, key, n, 0).Err()
}

// counterNoun names the counters in notes: "key" or "field".
func (r *row) counterNoun() string {
	if r.hashFields() {
		return "field"
	}
	return "key"
}

// immortal counts the counters under prefix with no TTL: keys, or fields
// for a hash-field strategy (whose hashes have no key TTL by design).
func (r *row) immortal(ctx context.Context, prefix string, window int64) (int64, error) {
	res, err := r.audit(ctx, prefix, window)
	if r.hashFields() {
		return res.ImmortalFields, err
	}
	return res.Immortal, err
}

// audit audits the keys under prefix, and their fields for a hash-field
// strategy.
func (r *row) audit(ctx context.Context, prefix string, window int64) (audit.Result, error) {
	if !r.hashFields() && len(r.nodes) == 1 {
		return audit.Run(ctx, r.nodes[0], prefix, window)
	}
	nodes := make([]audit.Node, len(r.nodes))
	for i, n := range r.nodes {
		nodes[i] = n
	}
	rep, err := audit.Scan(ctx, nodes, audit.Options{Prefix: prefix, MaxTTL: time.Duration(window) * time.Second, Dedup: true, Fields: r.hashFields()})
	return rep.Result(), err
}

// describe says what is at key, for a note: a string's value, or its type
// ("a zset"), or "(none)".
func (r *row) describe(ctx context.Context, key string) (string, error) {
	typ, err := r.observer.Type(ctx, key).Result()
	if err != nil {
		return "", fmt.Errorf("type %s: %w", key, err)
	}
	switch {
	case typ == "string" && !r.hashFields(), typ == "hash" && r.hashFields():
		return r.value(ctx, key)
	case typ == "none":
		return "(none)", nil
	}
	return "a " + typ, nil
}

// pttlText formats a PTTL reply for a note: "1999ms", "-1 (no TTL)" or
// "-2 (no key)".
func pttlText(p int64) string {
	switch p {
	case -1:
		return "-1 (no TTL)"
	case -2:
		return "-2 (no key)"
	}
	return strconv.FormatInt(p, 10) + "ms"
}

// freshCounter checks that the fixed-window counter at key is at 1 with a
// TTL within a second of the window when the decision made at decided set
// it: the time since then is added back to the PTTL read now. The count
// and the PTTL are read in one transaction, at one moment. A counter gone
// by the time of the reading is a failure when a TTL within a second of
// the window could not have run out yet; later (a slow machine, a
// decision that took long to come back), it is too late to judge
// (Cell.late).
func (r *row) freshCounter(ctx context.Context, key string, decided time.Time, when string) (Cell, bool) {
	v, p, err := r.counterAndPTTL(ctx, key)
	if err != nil {
		return failf("%v", err), false
	}
	since := time.Since(decided).Milliseconds()
	w := r.cfg.Window * 1000
	if v == "(none)" || p == -2 || p == 0 {
		cell := failf("counter is %s, PTTL %s %s, %dms after the decision; want 1, with a TTL within 1s of the %ds window", v, pttlText(p), when, since, r.cfg.Window)
		cell.late = since >= w-1000-pttlTolerance
		return cell, false
	}
	if v != "1" {
		return failf("counter is %s %s; want 1", v, when), false
	}
	if p < 0 || p+since <= w-1000 || p > w {
		return failf("PTTL %s %s, %dms after the decision; want within 1s of the %ds window", pttlText(p), when, since, r.cfg.Window), false
	}
	return Cell{}, true
}

// counterAndPTTL reads the counter at key (value) and its PTTL (pttl) in
// one MULTI ... EXEC, in which the server's clock stands still.
func (r *row) counterAndPTTL(ctx context.Context, key string) (string, int64, error) {
	var value *redis.StringCmd
	var keyPTTL *redis.Cmd
	var fieldPTTL *redis.IntSliceCmd
	_, err := r.observer.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if r.hashFields() {
			value, fieldPTTL = p.HGet(ctx, key, counterField), p.HPTTL(ctx, key, counterField)
		} else {
			value, keyPTTL = p.Get(ctx, key), p.Do(ctx, "PTTL", key)
		}
		return nil
	})
	v, verr := value.Result()
	switch {
	case verr == redis.Nil:
		v = "(none)"
	case verr != nil:
		return "", 0, fmt.Errorf("%s %s: %w", strings.ToLower(value.Name()), key, verr)
	case err != nil && err != redis.Nil:
		return "", 0, fmt.Errorf("multi: %s %s: %w", key, strings.ToLower(value.Name()), err)
	}
	if keyPTTL != nil {
		n, err := keyPTTL.Int64()
		if err != nil {
			return "", 0, fmt.Errorf("pttl %s: %w", key, err)
		}
		return v, n, nil
	}
	switch f, err := fieldPTTL.Result(); { // a key not a hash failed HGET
	case err != nil:
		return "", 0, fmt.Errorf("hpttl %s fields 1 %s: %w", key, counterField, err)
	case len(f) != 1:
		return "", 0, fmt.Errorf("hpttl %s fields 1 %s: %d replies; want 1", key, counterField, len(f))
	default:
		return v, f[0], nil
	}
}

// ttlsSet audits the keys under prefix: there must be some, none immortal,
// none with a TTL beyond window seconds (TTLWindows of them, and
// TTLSlack); for a hash-field strategy, the same of their fields. Keys
// with no TTL leak, and for a NoTTL strategy that is by design.
func (r *row) ttlsSet(ctx context.Context, prefix string, window int64) Cell {
	window = strategies.Info{TTLWindows: r.info.TTLWindows, TTLSlack: r.info.TTLSlack}.MaxTTL(window)
	res, err := r.audit(ctx, prefix, window)
	if err != nil {
		return failf("%v", err)
	}
	switch {
	case res.Keys-res.Vanished == 0:
		cell := failf("no key under %s after the decisions", prefix)
		cell.noKey = true
		return cell
	case r.hashFields() && res.ImmortalFields > 0:
		return failf("%d of %d fields have no TTL", res.ImmortalFields, res.Fields)
	case r.hashFields() && res.FieldTTLOverWindow > 0:
		return failf("%d of %d fields have a TTL beyond the %ds window", res.FieldTTLOverWindow, res.Fields, window)
	case res.Immortal > 0 && r.info.NoTTL:
		return Cell{Outcome: Leaks, Note: fmt.Sprintf("%d of %d keys have no TTL: the strategy sets none, by design", res.Immortal, res.Keys)}
	case res.Immortal > 0:
		return failf("%d of %d keys have no TTL", res.Immortal, res.Keys)
	case res.TTLOverWindow > 0:
		return failf("%d of %d keys have a TTL beyond the %ds window", res.TTLOverWindow, res.Keys, window)
	}
	return Cell{Outcome: Pass}
}

// waitGone polls key's PTTL until the key is gone, or has no TTL to wait
// for, or timeout passes, and returns the last PTTL read (-2 when gone, -1
// when it has no TTL). A key still there is judged from a reading sent
// after timeout, not one whose reply came back after it (a loaded
// machine): that one the server may have read before the key's end.
func (r *row) waitGone(ctx context.Context, key string, timeout time.Duration) (int64, error) {
	deadline := time.Now().Add(timeout)
	for {
		sent := time.Now()
		p, err := r.pttl(ctx, key)
		if err != nil || p < 0 || sent.After(deadline) {
			return p, err
		}
		if err := sleep(ctx, pollInterval); err != nil {
			return p, err
		}
	}
}

// keysUnder lists the keys under prefix, on every master.
func (r *row) keysUnder(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	for _, n := range r.nodes {
		var cursor uint64
		for {
			batch, next, err := n.Scan(ctx, cursor, audit.MatchPattern(prefix), 1000).Result()
			if err != nil {
				return nil, fmt.Errorf("scan %s: %w", prefix, err)
			}
			for _, k := range batch {
				if strings.HasPrefix(k, prefix) && !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	slices.Sort(keys)
	return keys, nil
}

func failf(format string, args ...any) Cell {
	return Cell{Outcome: Fail, Note: firstLine(fmt.Sprintf(format, args...))}
}

// firstLine keeps a note to one line.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func allowedWord(allowed bool) string {
	if allowed {
		return "allowed"
	}
	return "rejected"
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package verify

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/netproxy"
	"github.com/rlbench/rlbench/strategies"
)

// lateRow is a row of lua (a fixed window) whose observer and nodes are
// rdb, with keys under prefix.
func lateRow(t *testing.T, rdb *redis.Client, prefix string) *row {
	t.Helper()
	info, err := strategies.Lookup("lua")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Prefix: prefix}.withDefaults()
	r := newRow(cfg, info, "go-redis", Server{}, nil, rdb)
	r.nodes = []*redis.Client{rdb}
	return r
}

// TestFreshCounterLate checks that a fixed-window counter gone when it is
// read is a failure when a TTL within a second of the window could not
// have run out yet, and too late to judge (late) when it could have.
func TestFreshCounterLate(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t, redistest.Start(t))
	prefix := redistest.Prefix(t)
	r := lateRow(t, rdb, prefix)
	if err := rdb.Set(t.Context(), prefix+"fresh", 1, 2*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, key     string
		ago           time.Duration // when the decision was sent
		ok, late      bool
		noteStartWith string
	}{
		{name: "fresh counter", key: prefix + "fresh", ok: true},
		{name: "gone at once", key: prefix + "none", noteStartWith: "counter is (none), PTTL -2 (no key)"},
		{name: "gone before a TTL of the window less 1s ran out", key: prefix + "none", ago: 900 * time.Millisecond},
		{name: "gone after it could have run out", key: prefix + "none", ago: 1000 * time.Millisecond, late: true},
		{name: "gone a window later", key: prefix + "none", ago: 2 * time.Second, late: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cell, ok := r.freshCounter(t.Context(), tc.key, time.Now().Add(-tc.ago), "after the first request")
			if ok != tc.ok || cell.late != tc.late || (!ok && cell.Outcome != Fail) || !strings.HasPrefix(cell.Note, tc.noteStartWith) {
				t.Errorf("freshCounter(%s, %s ago) = (%+v, %t); want ok %t, late %t, a note starting %q", tc.key, tc.ago, cell, ok, tc.ok, tc.late, tc.noteStartWith)
			}
		})
	}
}

// TestTTLsSetLate checks that no key under a trial's prefix is a failure
// soon after its last decision, and too late to judge a request's share
// of the window (window/limit) after it.
func TestTTLsSetLate(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t, redistest.Start(t))
	r := lateRow(t, rdb, redistest.Prefix(t))
	tr := &trial{row: r, check: "first", window: 2}
	for _, tc := range []struct {
		name string
		ago  time.Duration // since the trial's last decision; 0: none made
		late bool
	}{
		{name: "no decision", late: false},
		{name: "just decided", ago: time.Millisecond},
		{name: "a request's share of the window later", ago: 400 * time.Millisecond, late: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr.decided = time.Time{}
			if tc.ago > 0 {
				tr.decided = time.Now().Add(-tc.ago)
			}
			cell := tr.ttlsSet(t.Context())
			if cell.Outcome != Fail || cell.late != tc.late || cell.noKey {
				t.Errorf("ttlsSet() %s after the decision = %+v; want FAIL, late %t", tc.ago, cell, tc.late)
			}
		})
	}
}

// TestRunCheckLate checks that a check too late to judge runs again on
// fresh keys, and fails, saying so, after lateTries of them.
func TestRunCheckLate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		lateRuns int // the tries that are too late to judge
		want     Outcome
		prefixes string
		note     string // how the note starts
	}{
		{name: "judged at once", lateRuns: 0, want: Pass, prefixes: "first:"},
		{name: "judged at the third try", lateRuns: 2, want: Pass, prefixes: "first: first~2: first~3:", note: "on try 3: the 2 before read too late to judge"},
		{name: "never judged", lateRuns: 5, want: Fail, prefixes: "first: first~2: first~3:", note: fmt.Sprintf("late 3 (each of %d tries read too late to judge", lateTries)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := lateRow(t, nil, "p:")
			var prefixes []string
			c := checkDef{Check: Check{Name: "first"}, run: func(_ context.Context, t *trial) Cell {
				prefixes = append(prefixes, strings.TrimPrefix(t.keyPrefix(), r.prefix))
				if len(prefixes) <= tc.lateRuns {
					cell := failf("late %d", len(prefixes))
					cell.late = true
					return cell
				}
				return Cell{Outcome: Pass}
			}}
			cell := r.runCheck(t.Context(), c, nil)
			got := strings.Join(prefixes, " ")
			if cell.Outcome != tc.want || got != tc.prefixes || cell.late || !strings.HasPrefix(cell.Note, tc.note) || (tc.note == "") != (cell.Note == "") {
				t.Errorf("runCheck() = %+v on keys under %q; want %s on keys under %q, a note starting %q", cell, got, tc.want, tc.prefixes, tc.note)
			}
		})
	}
}

// TestNotExtendedLate checks that a key gone, or a PTTL risen, after a
// request is a failure when the window the first reading measured could
// not have ended yet, and too late to judge when it could have.
func TestNotExtendedLate(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		name       string
		p          int64         // the PTTL read after request 2, of a first reading of 2000ms
		end        int64         // when the window ends after the first reading (windowEnd); 0: 2000ms
		elapsed    time.Duration // since the first reading
		sent, read time.Duration // since the first reading was sent
		ok, late   bool
	}{
		{name: "going down", p: 1900, elapsed: 75 * ms, sent: 80 * ms, read: 81 * ms, ok: true},
		{name: "risen inside the window", p: 2000, elapsed: 75 * ms, sent: 80 * ms, read: 81 * ms},
		{name: "risen after the window may have ended", p: 1956, elapsed: 2062 * ms, sent: 2063 * ms, read: 2064 * ms, late: true},
		{name: "risen after a timer beside the counter may have ended", p: 1970, end: 1100, elapsed: 1140 * ms, sent: 1150 * ms, read: 1151 * ms, late: true},
		{name: "risen before a timer beside the counter ended", p: 1970, end: 1500, elapsed: 1140 * ms, sent: 1150 * ms, read: 1151 * ms},
		{name: "gone inside the window", p: -2, elapsed: 75 * ms, sent: 80 * ms, read: 81 * ms},
		{name: "gone when read after the window", p: -2, elapsed: 1900 * ms, sent: 1900 * ms, read: 2100 * ms, late: true},
		{name: "no TTL, late or not", p: -1, elapsed: 3000 * ms, sent: 3000 * ms, read: 3000 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			end := cmp.Or(tc.end, 2000)
			cell, ok := notExtended(2, 2000, end, tc.p, tc.elapsed, tc.sent, tc.read)
			if ok != tc.ok || cell.late != tc.late || (!ok && cell.Outcome != Fail) {
				t.Errorf("notExtended(2, 2000, %d, %d, %s, %s, %s) = (%+v, %t); want ok %t, late %t", end, tc.p, tc.elapsed, tc.sent, tc.read, cell, ok, tc.ok, tc.late)
			}
		})
	}
}

// TestHealedLate checks that a healed counter gone after its decision is
// a failure soon after it, and too late to judge a request's share of the
// window after it.
func TestHealedLate(t *testing.T) {
	t.Parallel()
	tr := &trial{row: lateRow(t, nil, "p:"), check: CheckHealing, window: 2}
	for _, tc := range []struct {
		name  string
		p     int64
		since time.Duration
		want  Outcome
		late  bool
	}{
		{name: "healed", p: 1990, since: 10 * time.Millisecond, want: Pass},
		{name: "immortal", p: -1, since: time.Second, want: Leaks},
		{name: "gone at once", p: -2, since: 10 * time.Millisecond, want: Fail},
		{name: "gone a request's share of the window later", p: -2, since: 400 * time.Millisecond, want: Fail, late: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if cell := tr.healed("1", tc.p, tc.since); cell.Outcome != tc.want || cell.late != tc.late {
				t.Errorf("healed(1, %d, %s) = %+v; want %s, late %t", tc.p, tc.since, cell, tc.want, tc.late)
			}
		})
	}
}

// TestAdmittedLate checks that the concurrent check's admissions past the
// limit leak when the decisions took less than a request's share of the
// window, and are too late to judge when they took longer.
func TestAdmittedLate(t *testing.T) {
	t.Parallel()
	tr := &trial{row: lateRow(t, nil, "p:"), check: CheckConcurrent, window: longWindow}
	limit := tr.cfg.Limit
	for _, tc := range []struct {
		name     string
		admitted int64
		took     time.Duration
		want     Outcome
		late     bool
	}{
		{name: "exact", admitted: limit, took: time.Second, want: Pass},
		{name: "more, quickly", admitted: limit + 1, took: time.Second, want: Leaks},
		{name: "more, a request's share of the window later", admitted: limit + 1, took: tr.lateAfter(), want: Leaks, late: true},
		{name: "fewer, late or not", admitted: limit - 1, took: time.Minute, want: Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if cell := tr.admitted(tc.admitted, 0, 150, tc.took); cell.Outcome != tc.want || cell.late != tc.late {
				t.Errorf("admitted(%d, 0, 150, %s) = %+v; want %s, late %t", tc.admitted, tc.took, cell, tc.want, tc.late)
			}
		})
	}
}

// TestSplitBrainLate checks that a count below the increments told is a
// failure read within the window of the counter's first decision, and
// too late to judge read a window after it.
func TestSplitBrainLate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		seen  splitSeen
		since time.Duration
		want  Outcome
		late  bool
	}{
		{name: "all counted", seen: splitSeen{acked: 9, counter: 9, gapPTTL: 1000}, since: time.Minute, want: Pass},
		{name: "lost within the window", seen: splitSeen{acked: 9, counter: 4, gapPTTL: 1000}, since: time.Minute, want: Fail},
		{name: "lost, read a window later", seen: splitSeen{acked: 9, counter: 4, gapPTTL: -2}, since: splitBrainWindow * time.Second, want: Fail, late: true},
		{name: "no TTL on the fresh key", seen: splitSeen{acked: 9, counter: 9, gapPTTL: -1}, since: splitBrainWindow * time.Second, want: Leaks},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if cell := tc.seen.cell(tc.since, splitBrainWindow); cell.Outcome != tc.want || cell.late != tc.late {
				t.Errorf("cell(%s, %d) = %+v; want %s, late %t", tc.since, splitBrainWindow, cell, tc.want, tc.late)
			}
		})
	}
}

// TestWaitGoneAfterTheDeadline checks that a key still there is judged
// from a reading sent after the wait, not from one whose reply came back
// after it: through a proxy that delays replies by a second, the first
// PTTL is read at once (the key's 250ms have not run out) and arrives
// past the 300ms wait; the key is gone by the next reading.
func TestWaitGoneAfterTheDeadline(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p, err := netproxy.Start(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if err := p.Latency(1000, 0); err != nil {
		t.Fatal(err)
	}
	slow := redis.NewClient(&redis.Options{Addr: p.Addr(), DisableIdentity: true, Protocol: 2, ReadTimeout: 30 * time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { _ = slow.Close() })
	if err := slow.Ping(t.Context()).Err(); err != nil { // its connection open
		t.Fatal(err)
	}
	prefix := redistest.Prefix(t)
	r := lateRow(t, slow, prefix)
	if err := redistest.Client(t, srv).Set(t.Context(), prefix+"k", 1, 250*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := r.waitGone(t.Context(), prefix+"k", 300*time.Millisecond); err != nil || got != -2 {
		t.Errorf("waitGone(a key of 250ms, 300ms) through 1s of latency = %d, %v; want -2 (gone)", got, err)
	}
}

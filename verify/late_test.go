package verify

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/internal/redistest"
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

package failover

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/probe"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/workload"
)

func TestRecoveryClock(t *testing.T) {
	t.Parallel()
	var c recoveryClock
	start := time.Now()
	c.succeeded() // before any failure: nothing to note
	if r := c.result(start); r != (results.FailoverRecovery{}) {
		t.Fatalf("result with no failure = %+v; want zero", r)
	}
	c.failed()
	time.Sleep(2 * time.Millisecond)
	c.failed()
	c.succeeded()
	first := c.result(start)
	if first.FailedDecisions != 2 || first.RecoveryS <= 0 || first.FailingS != first.RecoveryS || first.LastFailureS <= first.FirstFailureS {
		t.Errorf("after fail, fail, succeed: %+v; want 2 failures, recovery > 0 and failing = recovery", first)
	}
	time.Sleep(2 * time.Millisecond)
	c.failed()
	if r := c.result(start); r.FailingS != -1 || r.RecoveryS != first.RecoveryS {
		t.Errorf("after one more failure: %+v; want failing -1 (no success yet), recovery %v unchanged", r, first.RecoveryS)
	}
	c.succeeded()
	if r := c.result(start); r.FailingS <= first.FailingS || r.FailedDecisions != 3 {
		t.Errorf("after a success: %+v; want failing > %v and 3 failures", r, first.FailingS)
	}
}

// TestFailoverWatchWindows follows one key through a window that a
// failover cut short (the new master never had the counter, so its count
// starts again at 1) and checks the increments lost and the requests
// admitted beyond the limit.
func TestFailoverWatchWindows(t *testing.T) {
	t.Parallel()
	w := &Watch{prefix: "p:", limit: 3, window: time.Minute, counts: true, keys: make([]watchedKey, 2)}
	key := workload.KeyName("p:", 1)
	decide := func(count int64) {
		now := time.Now()
		w.observe(key, strategies.Decision{Count: count, Allowed: count <= w.limit}, now, now)
	}
	for _, n := range []int64{1, 2} { // the old master counts 2
		decide(n)
	}
	for _, n := range []int64{1, 2, 3, 4} { // the new master from 0: 2 lost
		decide(n)
	}
	l := w.lostIncrements(time.Now())
	if l.Keys != 1 || l.Increments != 2 || l.MaxPerKey != 2 || l.OverAdmitted != 2 || l.OverAdmittedKeys != 1 {
		t.Errorf("lostIncrements = %+v; want 2 increments lost on 1 key, 2 requests over the limit of 3 (2 + 3 admitted)", *l)
	}
	now := time.Now()
	w.observe(workload.KeyName("p:", 5), strategies.Decision{Count: 1, Allowed: true}, now, now) // not followed
	w.observe("other:{0}", strategies.Decision{Count: 1, Allowed: true}, now, now)
	if got := w.lostIncrements(time.Now()); *got != *l {
		t.Errorf("after keys the watch does not follow: %+v; want %+v", *got, *l)
	}
}

// TestFailoverWatchCompare checks the comparison against the server: with
// no failover it finds nothing lost, during the load and after it; a
// counter lowered behind the clients' back counts as lost, one raised as
// unacknowledged, each once.
func TestFailoverWatchCompare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := redisserver.StartSentinel(ctx, redisserver.SentinelOptions{Replicas: 1, Binary: os.Getenv(redistest.BinaryEnv)})
	if err != nil {
		t.Fatalf("StartSentinel error: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	conn, err := clients.New("go-redis", clients.Options{
		Sentinel: connection.Sentinel{Master: s.MasterName(), Addrs: s.SentinelAddrs()}, Workers: 8,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	impl, err := strategies.New("lua", strategies.Config{Limit: 1_000_000, Window: 60})
	if err != nil {
		t.Fatal(err)
	}
	const keys = 30
	prefix := redistest.Prefix(t)
	w := &Watch{managed: s, prefix: prefix, limit: 1_000_000, window: time.Minute, counts: true,
		keys: make([]watchedKey, keys), fallbacks: conn.Fallbacks}
	done := make(chan error, 1)
	go func() {
		var rec results.Recorder
		_, err := workload.Run(ctx, workload.Config{Workers: 8, Keys: keys, Duration: 3 * time.Second, Prefix: prefix}, impl, conn, &rec, w)
		done <- err
	}()
	time.Sleep(1500 * time.Millisecond)
	w.compareOnce(ctx) // during the load
	if err := <-done; err != nil {
		t.Fatalf("workload.Run error: %v", err)
	}
	// Nothing is lost without a failover. A reply that overtakes the one
	// of its window's first increment can leave a key's count one short.
	during := w.lostIncrements(time.Now())
	if during.Error != "" || during.KeysCompared != keys || during.Increments != 0 || during.Unacknowledged > keys {
		t.Errorf("during the load: %+v; want %d keys compared, none lost, at most one unacknowledged per key", *during, keys)
	}

	master, err := s.MasterAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rdb := connection.Admin{}.PlainClient(master)
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.DecrBy(ctx, workload.KeyName(prefix, 0), 5).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.IncrBy(ctx, workload.KeyName(prefix, 1), 3).Err(); err != nil {
		t.Fatal(err)
	}
	for _, when := range []string{"after the counters changed", "compared again"} {
		w.compareOnce(ctx) // quiescent: exact, and each change counts once
		l := w.lostIncrements(time.Now())
		if l.Error != "" || l.KeysCompared != keys || l.Increments != 5 || l.Keys != 1 || l.Unacknowledged != during.Unacknowledged+3 {
			t.Errorf("%s: %+v; want %d keys compared, 5 lost on 1 key, %d unacknowledged", when, *l, keys, during.Unacknowledged+3)
		}
	}
}

// TestLostIncrementsNotMeasured checks that a watch whose comparisons found
// no key to compare says the figure was not measured, rather than "0 lost
// on 0 of 0 keys", which reads as a measured zero.
func TestLostIncrementsNotMeasured(t *testing.T) {
	t.Parallel()
	w := &Watch{counts: true, limit: 10, window: time.Second, keys: make([]watchedKey, 5)}
	l := w.lostIncrements(time.Now())
	if want := "no key could be compared: no counter the clients were told of was read"; l.Error != want {
		t.Errorf("lostIncrements() with no key compared = %+v; want Error %q", *l, want)
	}
	// Keys left out by why: the reason is the most common one's.
	for _, tc := range []struct {
		cutShort, turned int64
		want             string
	}{
		{3, 1, "every key had a decision cut short (--crash-rate or the end of the load)"},
		{1, 3, "each window ended before its counter was read"},
	} {
		w := &Watch{counts: true, limit: 10, window: time.Second, keys: make([]watchedKey, 5), cutShort: tc.cutShort, turned: tc.turned}
		if l := w.lostIncrements(time.Now()); !strings.Contains(l.Error, tc.want) || l.KeysCutShort != tc.cutShort || l.KeysTurned != tc.turned {
			t.Errorf("lostIncrements() with %d keys cut short, %d turned = %+v; want Error with %q", tc.cutShort, tc.turned, *l, tc.want)
		}
	}
	if text := (results.Failover{LostIncrements: l}).Text("lua/go-redis"); !strings.Contains(text, "lost increments: not measured: no key could be compared") {
		t.Errorf("Text() = %q; want it to say the figure was not measured", text)
	}
}

// TestWatchLateReply follows a key whose window's first reply was read 2 s
// after its decision was sent (a partition held it, or a loaded machine):
// the next window's first increment, run a window after the decision was
// sent, ends the window; no increment is lost. Timed from the reply, it
// looked like a counter that started again inside its window.
func TestWatchLateReply(t *testing.T) {
	t.Parallel()
	w := &Watch{prefix: "p:", limit: 100, window: 10 * time.Second, counts: true, keys: make([]watchedKey, 1)}
	key := workload.KeyName("p:", 0)
	t0 := time.Now()
	w.observe(key, strategies.Decision{Count: 1, Allowed: true}, t0, t0.Add(2*time.Second))
	for i := int64(2); i <= 5; i++ {
		at := t0.Add(time.Duration(i) * time.Second)
		w.observe(key, strategies.Decision{Count: i, Allowed: true}, at, at)
	}
	next := t0.Add(10*time.Second + 100*time.Millisecond) // the server's new window
	w.observe(key, strategies.Decision{Count: 1, Allowed: true}, next, next)
	if l := w.lostIncrements(next); l.Increments != 0 || l.Keys != 0 {
		t.Errorf("lostIncrements = %+v; want none: the window ended a window after its first decision was sent", *l)
	}
}

// TestWatchObserve checks what the watch makes of each decision it is
// shown: one cut short marks its key as not to compare, a crash between
// commands counts nothing, and one whose reply came before --crash-rate's
// cut counts as told (the server ran it), as a plain success does.
func TestWatchObserve(t *testing.T) {
	t.Parallel()
	w := &Watch{prefix: "p:", limit: 10, window: time.Minute, counts: true, keys: make([]watchedKey, 4)}
	name := func(k int) string { return workload.KeyName("p:", k) }
	w.Observe(probe.Decision{Key: 0, Name: name(0), Allowed: true, Count: 1, Cut: true})
	w.Observe(probe.Decision{Key: 1, Name: name(1), Err: strategies.ErrCrashed})
	w.Observe(probe.Decision{Key: 2, Name: name(2), Allowed: true, Count: 1, Crashed: true})
	w.Observe(probe.Decision{Key: 3, Name: name(3), Allowed: true, Count: 1})
	for k, want := range []struct {
		abandoned      bool
		acked, allowed int64
	}{{abandoned: true}, {}, {acked: 1, allowed: 1}, {acked: 1, allowed: 1}} {
		got := &w.keys[k]
		if got.abandoned != want.abandoned || got.acked != want.acked || got.allowed != want.allowed {
			t.Errorf("key %d: abandoned %t, acked %d, allowed %d; want %t, %d, %d", k, got.abandoned, got.acked, got.allowed, want.abandoned, want.acked, want.allowed)
		}
	}
}

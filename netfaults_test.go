package rlbench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/workload"
)

// netRun runs one cell of strategy on client against srv with the network
// fault f, the client's retries and read timeout, its keys kept, and returns the cell and
// the sum of its counters, read on a plain connection. The load is a
// number of requests, not a time: no decision is cut short at its end, so
// every increment on the server is one a decision made.
func netRun(t *testing.T, srvAddr string, plain *redis.Client, strategy, client, fault string, retries int, readTimeout time.Duration) (results.Run, int64) {
	t.Helper()
	f, err := faults.Parse(fault)
	if err != nil {
		t.Fatal(err)
	}
	prefix := redistest.Prefix(t)
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		// A window of an hour: the load ends inside its first window, on a
		// loaded machine too, so that no counter expires before it is summed.
		Targets: []rlbench.TargetSpec{{Addr: srvAddr}}, Strategies: []string{strategy}, Clients: []string{client}, Limit: 1_000_000_000, Window: 3600,
		Retries: retries, ReadTimeout: readTimeout, KeepKeys: true, Faults: []faults.Fault{f},
		Workload: workload.Config{Workers: 4, Keys: 5, Requests: 20_000, Prefix: prefix},
	}, rlbench.Options{})
	if err != nil || len(rep.Runs) != 1 {
		t.Fatalf("Run = %v, %v; want one run", rep, err)
	}
	ctx := context.Background()
	var sum int64
	keys, err := plain.Keys(ctx, keyspace.Cell(prefix, strategy, client)+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		n, err := plain.Get(ctx, k).Int64()
		if err != nil {
			t.Fatalf("GET %s: %v", k, err)
		}
		sum += n
	}
	if err := plain.Del(ctx, keys...).Err(); err != nil && len(keys) > 0 {
		t.Fatal(err)
	}
	return rep.Runs[0], sum
}

// faultEvent returns the run's one fault event.
func faultEvent(t *testing.T, r results.Run) results.FaultEvent {
	t.Helper()
	if len(r.Faults) != 1 || r.Faults[0].Error != "" {
		t.Fatalf("fault events %+v; want one, without error", r.Faults)
	}
	return r.Faults[0]
}

// TestReplyLossWithRetriesCountsTwice: under reply-loss, the server runs
// each request whose reply is lost. With --retries 3, go-redis sends it
// again: the counters, read on a plain connection, sum to more than the
// decisions made, and the cell reports phantom increments. Without
// retries, the decision fails and the counters sum to no more than the
// decisions. rueidis never sends an EVALSHA again, retries or not.
func TestReplyLossWithRetriesCountsTwice(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	plain := redistest.Client(t, srv)
	for _, tc := range []struct {
		client  string
		retries int
		more    bool // the counters sum to more than the decisions
	}{
		{"go-redis", 3, true},
		{"go-redis", 0, false},
		{"rueidis", 3, false},
	} {
		t.Run(tc.client+"/retries="+string(rune('0'+tc.retries)), func(t *testing.T) {
			t.Parallel()
			r, sum := netRun(t, srv.Addr(), plain, "lua", tc.client, "reply-loss@0s:1m:0.02", tc.retries, 500*time.Millisecond)
			ev := faultEvent(t, r)
			if ev.LostReplies == 0 {
				t.Fatalf("fault %+v; want lost replies", ev)
			}
			l := r.LostIncrements
			if l == nil || l.Increments != 0 {
				t.Fatalf("lost increments %+v; want measured, none lost", l)
			}
			if more := sum > r.Decisions; more != tc.more {
				t.Errorf("counters sum to %d for %d decisions (%d errors, %d replies lost, %d phantom); want more: %t",
					sum, r.Decisions, r.Errors, ev.LostReplies, l.Phantom, tc.more)
			}
			if tc.more && (l.Phantom == 0 || sum-r.Decisions > ev.LostReplies) {
				t.Errorf("phantom %d, counters %d above the decisions, %d replies lost; want phantom > 0, no more above than lost",
					l.Phantom, sum-r.Decisions, ev.LostReplies)
			}
			if !tc.more && r.Errors == 0 {
				t.Errorf("no decision failed with %d replies lost and no retry", ev.LostReplies)
			}
			var text strings.Builder
			if err := results.Text(&results.Report{Runs: []results.Run{r}})(&text); err != nil {
				t.Fatal(err)
			}
			meaning := "counted though they failed for their users"
			if tc.more {
				meaning = "counted twice by the client's retries"
			}
			if want := fmt.Sprintf("lua/%s phantom increments: %d requests %s", tc.client, l.Phantom, meaning); l.Phantom > 1 && !strings.Contains(text.String(), want) {
				t.Errorf("the summary says\n%s\nwant a line starting %q", text.String(), want)
			}
		})
	}
}

// TestFaultSpanWithoutFirstIncrement: a reply-loss fault that starts after
// every key of incr-expire was created (3 keys, a 60 s window) meets no
// first increment, which its fault line says, so that its 0 immortal keys
// are not read as safe; the same fault from the start meets them all.
func TestFaultSpanWithoutFirstIncrement(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, tc := range []struct {
		fault string
		none  bool // no counter created during it
	}{
		{"reply-loss@1500ms:500ms:0.05", true},
		{"reply-loss@0s:500ms:0.05", false},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			f, err := faults.Parse(tc.fault)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := rlbench.Run(context.Background(), rlbench.Config{
				Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}, Strategies: []string{"incr-expire"}, Clients: []string{"go-redis"},
				Limit: 1_000_000, Window: 60, Faults: []faults.Fault{f},
				Workload: workload.Config{Workers: 2, Keys: 3, Duration: 2500 * time.Millisecond, Prefix: redistest.Prefix(t)},
			}, rlbench.Options{})
			if err != nil || len(rep.Runs) != 1 {
				t.Fatalf("Run = %v, %v; want one run", rep, err)
			}
			ev := faultEvent(t, rep.Runs[0])
			if ev.FirstIncrements == nil || (*ev.FirstIncrements == 0) != tc.none {
				t.Fatalf("fault %+v: first increments %v; want counted, none: %t", ev, ev.FirstIncrements, tc.none)
			}
			var text strings.Builder
			if err := results.Text(rep)(&text); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(unwrap(text.String()), "no counter was created during it"); got != tc.none {
				t.Errorf("the summary says\n%s\nwant the fault's note that no counter was created: %t", text.String(), tc.none)
			}
		})
	}
}

// TestPartitionTimesOut: a partition makes the load's requests time out;
// it resets no connection.
func TestPartitionTimesOut(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	r, _ := netRun(t, srv.Addr(), redistest.Client(t, srv), "lua", "go-redis", "partition@50ms:1500ms", 0, 500*time.Millisecond)
	faultEvent(t, r)
	if r.ErrorKinds[results.KindTimeout] == 0 {
		t.Errorf("error kinds %v; want timeouts", r.ErrorKinds)
	}
	for _, k := range []string{results.KindConnReset, results.KindConnClosed} {
		if r.ErrorKinds[k] != 0 {
			t.Errorf("error kinds %v; want no %s: a partition resets nothing", r.ErrorKinds, k)
		}
	}
}

// TestLatencyLosesNothing: latency slows the replies, and loses none: the
// counters sum to the decisions, on both clients, with 0 phantom and 0
// lost increments. The read timeout (10 s) is far beyond the latency, on
// a loaded machine too: a reply later than it would be retried, and the
// retry counted twice (a phantom increment, which is what reply-loss
// shows).
func TestLatencyLosesNothing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	plain := redistest.Client(t, srv)
	for _, client := range []string{"go-redis", "rueidis"} {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			r, sum := netRun(t, srv.Addr(), plain, "incr-expire", client, "latency@0s:1m:2~1", 3, 10*time.Second)
			faultEvent(t, r)
			if l := r.LostIncrements; l == nil || l.Increments != 0 || l.Phantom != 0 || sum != r.Decisions || r.Errors != 0 {
				t.Errorf("counters %d for %d decisions (%d errors), lost increments %+v; want equal, 0 errors, 0 lost, 0 phantom", sum, r.Decisions, r.Errors, l)
			}
		})
	}
}

// TestResetFault: every connection of the load is reset at once, counted;
// without retries the decisions in flight fail, and the counters sum to no
// more than the decisions.
func TestResetFault(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	r, sum := netRun(t, srv.Addr(), redistest.Client(t, srv), "lua", "go-redis", "reset@100ms", 0, 500*time.Millisecond)
	if ev := faultEvent(t, r); ev.ResetConnections == 0 {
		t.Errorf("fault %+v; want connections reset", ev)
	}
	if sum > r.Decisions {
		t.Errorf("counters %d for %d decisions; want no more without retries", sum, r.Decisions)
	}
}

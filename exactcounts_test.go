package rlbench_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/serverinfo"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/workload"
)

// incrementFirst returns the built-in strategies whose every successful
// decision is one increment of a string counter at its key (the cells
// whose lost and phantom increments are measured) that a server of
// version v runs, and one strategy that keeps no such counter.
func incrementFirst(t *testing.T, v string) (counting []string, other string) {
	t.Helper()
	for _, name := range strategies.BuiltinNames() {
		info, _ := strategies.Lookup(name)
		switch {
		case !serverinfo.VersionAtLeast(v, info.MinRedis):
		case info.FixedWindow && !info.CountIsRead && !info.RejectsUnincremented && info.Layout == "":
			counting = append(counting, name)
		case !info.FixedWindow:
			other = name
		}
	}
	if len(counting) < 3 || other == "" {
		t.Fatalf("increment-first strategies %q, other %q; want lua, incr-expire, multi-nx ... and one more", counting, other)
	}
	return counting, other
}

// TestExactCountsWithoutFault checks that, with no fault, every cell of an
// increment-first counter strategy, on both clients, reports its lost and
// phantom increments, and both are 0: the server's counters at the end of
// the load are the increments the clients were told of. A strategy that
// keeps no such counter reports none.
func TestExactCountsWithoutFault(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	counting, other := incrementFirst(t, srv.Info().RedisVersion)
	var runs []results.Run
	for _, client := range clients.Names {
		names := []string{other}
		for _, name := range counting {
			if info, _ := strategies.Lookup(name); info.Supports(client) {
				names = append(names, name)
			}
		}
		rep, err := rlbench.Run(context.Background(), rlbench.Config{
			Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}, Strategies: names, Clients: []string{client}, Limit: 30,
			Workload: workload.Config{Workers: 8, Keys: 40, Duration: 400 * time.Millisecond, Prefix: redistest.Prefix(t) + client + ":"},
		}, rlbench.Options{})
		if err != nil {
			t.Fatalf("Run(%s) error: %v", client, err)
		}
		runs = append(runs, rep.Runs...)
	}
	for _, r := range runs {
		label := r.Strategy + "/" + r.Client
		l := r.LostIncrements
		if r.Strategy == other {
			if l != nil {
				t.Errorf("%s: lost increments %+v; want none for a strategy without an increment-first counter", label, *l)
			}
			continue
		}
		if l == nil {
			t.Errorf("%s: no lost increments; want them measured", label)
			continue
		}
		if l.Increments != 0 || l.Phantom != 0 || l.Unacknowledged != 0 || l.Error != "" || l.KeysCompared == 0 || l.Master != srv.Addr() {
			t.Errorf("%s: lost increments %+v; want 0 lost and 0 phantom on > 0 keys compared on %s, no error", label, *l, srv.Addr())
		}
		var text strings.Builder
		if err := results.Text(&results.Report{Runs: []results.Run{r}})(&text); err != nil {
			t.Fatal(err)
		}
		if want := label + " lost increments: 0, and 0 phantom:"; !strings.Contains(text.String(), want) {
			t.Errorf("%s: the summary says\n%s\nwant a line starting %q", label, text.String(), want)
		}
	}
	if want := len(counting) + 2; len(runs) < want {
		t.Errorf("ran %d cells; want at least %d", len(runs), want)
	}
}

// TestPhantomIncrements checks that increments on the server that no
// client was told of are counted as phantom: a plain client increments a
// followed counter by 5 during the load, as a retried request whose first
// reply was lost would. Here the mechanism is shown without a fault: the
// reply-loss fault (--fault reply-loss@T:D:P) loses replies after the
// server ran the command, and TestReplyLossWithRetriesCountsTwice
// (netfaults_test.go) counts the phantom increments of its retries.
func TestPhantomIncrements(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	for _, strategy := range []string{"lua", "incr-expire"} {
		for _, client := range clients.Names {
			t.Run(strategy+"/"+client, func(t *testing.T) {
				t.Parallel()
				prefix := redistest.Prefix(t)
				extra := make(chan error, 1)
				go func() {
					extra <- incrementMidRun(rdb, workload.KeyName(keyspace.Cell(prefix, strategy, client), 0), 5)
				}()
				rep, err := rlbench.Run(context.Background(), rlbench.Config{
					Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}, Strategies: []string{strategy}, Clients: []string{client}, Limit: 1_000_000,
					Workload: workload.Config{Workers: 4, Keys: 3, Duration: 3 * time.Second, Prefix: prefix},
				}, rlbench.Options{})
				if err := <-extra; err != nil {
					t.Fatal(err)
				}
				if err != nil || len(rep.Runs) != 1 {
					t.Fatalf("Run = %v, %v; want one run", rep, err)
				}
				l := rep.Runs[0].LostIncrements
				if l == nil || l.Phantom != 5 || l.Increments != 0 || l.KeysCompared != 3 {
					t.Errorf("lost increments %+v; want 5 phantom, 0 lost, on 3 keys compared", l)
				}
				text := results.Failover{LostIncrements: l}.Text(strategy)
				if want := "; 5 phantom (unacknowledged)"; l != nil && !strings.Contains(text, want) {
					t.Errorf("Text = %q; want it to contain %q", text, want)
				}
			})
		}
	}
}

// incrementMidRun waits, at most 30 s, until the load has created key,
// then adds n to it.
func incrementMidRun(rdb *redis.Client, key string, n int64) error {
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for rdb.Exists(ctx, key).Val() == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s never appeared", key)
		}
		time.Sleep(time.Millisecond)
	}
	return rdb.IncrBy(ctx, key, n).Err()
}

// busyScript keeps the server busy for ARGV[1] microseconds, reading no
// command meanwhile: a request sent then waits in its socket and runs once
// the script ends, even if its client has given up on the reply by then.
const busyScript = `local t0 = redis.call('TIME')
while true do
  local t = redis.call('TIME')
  if (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > tonumber(ARGV[1]) then return 1 end
end`

// TestPhantomIncrementsOfTimeouts checks that the increments a client gave
// up on are counted: go-redis with --retries 3 and --read-timeout 100ms,
// while a plain client keeps the server busy for 1.5 s mid-run. Each
// request the workers sent then times out on the client and runs on the
// server once the script ends: phantom increments, and none lost.
func TestPhantomIncrementsOfTimeouts(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	blocked := make(chan error, 1)
	go func() {
		ctx := context.Background()
		key := workload.KeyName(keyspace.Cell(prefix, "lua", "go-redis"), 0)
		deadline := time.Now().Add(30 * time.Second)
		for rdb.Exists(ctx, key).Val() == 0 {
			if time.Now().After(deadline) {
				blocked <- fmt.Errorf("%s never appeared", key)
				return
			}
			time.Sleep(time.Millisecond)
		}
		blocked <- rdb.Eval(ctx, busyScript, nil, 1_500_000).Err()
	}()
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}, Strategies: []string{"lua"}, Clients: []string{"go-redis"}, Limit: 1_000_000,
		Retries: 3, ReadTimeout: 100 * time.Millisecond,
		Workload: workload.Config{Workers: 4, Keys: 3, Duration: 4 * time.Second, Prefix: prefix},
	}, rlbench.Options{})
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	if err != nil || len(rep.Runs) != 1 {
		t.Fatalf("Run = %v, %v; want one run", rep, err)
	}
	r := rep.Runs[0]
	if l := r.LostIncrements; l == nil || l.Phantom < 1 || l.Increments != 0 {
		t.Errorf("lost increments %+v (errors %v); want >= 1 phantom, 0 lost", l, r.ErrorKinds)
	}
	if r.ErrorKinds[results.KindTimeout] == 0 {
		t.Errorf("error kinds %v; want timeouts while the server was busy", r.ErrorKinds)
	}
}

// TestExactCountsAtTheEndOfAHeavyLoad: 200 workers on 10 keys with a 1 s
// window (the README's quick start). When the load ends, decisions still
// in flight are abandoned: the server may run their INCR (and open a new
// window with it) though no client is told. Such a key's counter says
// nothing of the system under test, so it is not compared: no phantom and
// no lost increment come of ending the load.
func TestExactCountsAtTheEndOfAHeavyLoad(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}, Strategies: []string{"lua", "multi-nx"}, Clients: clients.Names, Limit: 1_000_000, Window: 1,
		Workload: workload.Config{Workers: 200, Keys: 10, Duration: 2 * time.Second, Prefix: redistest.Prefix(t)},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	for _, r := range rep.Runs {
		if l := r.LostIncrements; l == nil || l.Increments != 0 || l.Phantom != 0 {
			t.Errorf("%s/%s: lost increments %+v; want 0 lost and 0 phantom without a fault", r.Strategy, r.Client, l)
		}
	}
}

// TestNoLostIncrementsFromCrashes: --crash-rate kills decisions between
// INCR and EXPIRE, on 1 s windows that turn over during the load (the
// fault docs' example). A crash adds to a counter (a phantom increment),
// it never takes from one: a cell that says increments were lost, with no
// failover and one server, says something false. A crashed window's first
// decision is never told, so the watch cannot see that window open; such a
// key is not compared.
func TestNoLostIncrementsFromCrashes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}, Strategies: []string{"incr-expire"}, Clients: []string{"go-redis", "rueidis"}, Limit: 1_000_000, Window: 1,
		Workload: workload.Config{Workers: 50, Keys: 20, Duration: 4 * time.Second, CrashRate: 0.2, Prefix: redistest.Prefix(t)},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	for _, r := range rep.Runs {
		if r.ErrorKinds["crashed"] == 0 {
			t.Errorf("%s/%s: error kinds %v; want crashed decisions", r.Strategy, r.Client, r.ErrorKinds)
		}
		if l := r.LostIncrements; l == nil || l.Increments != 0 {
			t.Errorf("%s/%s: lost increments %+v; want 0 lost (or not measured): a crash loses no increment", r.Strategy, r.Client, l)
		}
	}
}

// TestUnclaimedUserStrategyFigures runs user strategies that claim nothing
// of their window: a sequence and a script, each an increment-first
// counter at its key. Each cell gets the over-admission figure and its
// lost and phantom increments, as a built-in counter does; a sequence that
// claims sliding gets its lost and phantom increments alone (it keeps no
// fixed window to be over), and a script whose count is not the
// request's rank (it returns the requests left) neither.
func TestUnclaimedUserStrategyFigures(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	script := filepath.Join(t.TempDir(), "mine.lua")
	left := filepath.Join(t.TempDir(), "left.lua")
	const body = "local n = redis.call('INCR', KEYS[1])\nif n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end\n"
	if err := os.WriteFile(script, []byte(body+"return {n <= tonumber(ARGV[1]) and 1 or 0, n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(left, []byte(body+"return {n <= tonumber(ARGV[1]) and 1 or 0, tonumber(ARGV[1]) - n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}},
		Sequences: []string{"mine-seq=INCRBY {key} 1 | EXPIRE {key} {window}",
			"mine-sliding=INCRBY {key} 1 | EXPIRE {key} {window} -- rlbench: sliding"},
		Scripts:    []string{"mine-script=" + script, "mine-left=" + left},
		Strategies: []string{"mine-seq", "mine-sliding", "mine-script", "mine-left"}, Clients: []string{"go-redis"}, Limit: 20, Window: 60,
		Workload: workload.Config{Workers: 4, Keys: 10, Duration: 500 * time.Millisecond, Prefix: redistest.Prefix(t)},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	var text strings.Builder
	if err := results.Text(rep)(&text); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Runs {
		label := r.Strategy + "/" + r.Client
		counted := r.Strategy != "mine-left"
		if got, want := r.OverAdmitted != nil, counted && r.Strategy != "mine-sliding"; got != want {
			t.Errorf("%s: over-admission measured %t; want %t", label, got, want)
		}
		l := r.LostIncrements
		switch {
		case counted && l == nil:
			t.Errorf("%s: no lost increments; want them measured\n%s", label, text.String())
		case counted && (l.Increments != 0 || l.Phantom != 0 || l.KeysCompared == 0 || l.Error != ""):
			t.Errorf("%s: lost increments %+v; want 0 lost and 0 phantom on > 0 keys compared", label, *l)
		case counted && !strings.Contains(cellText(t, rep, r), label+" lost increments: 0, and 0 phantom:"):
			t.Errorf("%s: the summary lacks its lost-increments line:\n%s", label, text.String())
		case !counted && l != nil:
			t.Errorf("%s: lost increments %+v; want none measured", label, *l)
		}
	}
	if len(rep.Runs) != 4 {
		t.Errorf("ran %d cells; want 4", len(rep.Runs))
	}
}

// TestOverAdmittedAlert runs a script that claims nothing and allows every
// request: its over figure is measured, and the summary ends with an alert
// naming it, after the table, as immortal keys get.
func TestOverAdmittedAlert(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	script := filepath.Join(t.TempDir(), "lenient.lua")
	src := "local n = redis.call('INCR', KEYS[1])\nredis.call('EXPIRE', KEYS[1], ARGV[2], 'NX')\nreturn {1, n}\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}, Scripts: []string{"lenient=" + script},
		Strategies: []string{"lenient"}, Clients: []string{"go-redis"}, Limit: 5, Window: 60,
		Workload: workload.Config{Workers: 2, Keys: 3, Requests: 100, Prefix: redistest.Prefix(t)},
	}, rlbench.Options{})
	if err != nil || len(rep.Runs) != 1 {
		t.Fatalf("Run = %v, %v; want one run", rep, err)
	}
	r := rep.Runs[0]
	if r.OverAdmitted == nil || *r.OverAdmitted == 0 {
		t.Fatalf("over-admitted %v; want > 0 for a script that allows every request", r.OverAdmitted)
	}
	var text strings.Builder
	if err := results.Text(rep)(&text); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("OVER-ADMITTED: lenient/go-redis let %d requests past the limit", *r.OverAdmitted); !strings.Contains(text.String(), want) {
		t.Errorf("the summary says\n%s\nwant %q", text.String(), want)
	}
}

// cellText is the text summary of r alone, of rep's runs, its notes
// unwrapped (unwrap): the notes of several cells are said once, naming
// them all, so that a cell's own line is read from its summary alone.
func cellText(t *testing.T, rep *results.Report, r results.Run) string {
	t.Helper()
	one := *rep
	one.Runs = []results.Run{r}
	var text strings.Builder
	if err := results.Text(&one)(&text); err != nil {
		t.Fatal(err)
	}
	return unwrap(text.String())
}

// unwrap joins the lines of each note of a text summary that
// results.MaxNoteWidth broke (each after the first indented by two spaces).
func unwrap(text string) string {
	return strings.ReplaceAll(text, "\n  ", " ")
}

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
)

// TestServerRestartedMidCell is issue 34, item 9: an --addr server killed
// and restarted 2 s into a 6 s run lost its counters; the report showed
// allowed twice the limit, over 0, "not measured: ... (a fault too close to
// the end ...)", the wrong reason, and exit status 0. A cell whose server
// restarted (INFO run_id changed between its start and its end) now says
// so, with the run_ids, and fails the run.
func TestServerRestartedMidCell(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	prefix := redistest.Prefix(t)
	args := []string{"--addr", srv.Addr(), "--prefix", prefix, "--strategy", "incr-expire", "--clients", "4", "--keys", "20",
		"--limit", "100", "--window", "60", "--duration", "5s", "--warmup", "0"}
	restarted := make(chan error, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		restarted <- srv.Restart(t.Context())
	}()
	res := runCLI(t, t.Context(), args...)
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	out := res.stdout + res.stderr
	if res.code != exitFailure {
		t.Errorf("rlbench %q with the server restarted mid-cell = exit %d; want %d\n%s", args, res.code, exitFailure, out)
	}
	if want := "the server restarted during the cell"; !strings.Contains(out, want) || !strings.Contains(out, "run_id") {
		t.Errorf("rlbench %q output =\n%s\nwant %q, with the run_ids", args, out, want)
	}
	if strings.Contains(out, "a fault too close to the end") {
		t.Errorf("rlbench %q output =\n%s\nwant the restart as the reason, not a fault too close to the end", args, out)
	}
}

// TestCountersWipedMidCell is issue 34, item 9, without a restart: another
// client deletes the cell's counters mid-load. The counters went below the
// increments the clients were told of, with no fault asked for that loses
// any: the run says so, with the lost increments, and fails.
func TestCountersWipedMidCell(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	args := []string{"--addr", srv.Addr(), "--prefix", prefix, "--strategy", "incr-expire", "--clients", "4", "--keys", "20",
		"--limit", "100", "--window", "60", "--duration", "4s", "--warmup", "0"}
	wiped := make(chan error, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		keys := scanKeys(t, rdb, keyspace.Cell(prefix, "incr-expire", "go-redis")+"*")
		if len(keys) == 0 {
			wiped <- nil
			return
		}
		wiped <- rdb.Del(context.WithoutCancel(t.Context()), keys...).Err()
	}()
	res := runCLI(t, t.Context(), args...)
	if err := <-wiped; err != nil {
		t.Fatal(err)
	}
	out := res.stdout + res.stderr
	if res.code != exitFailure {
		t.Errorf("rlbench %q with the counters deleted mid-cell = exit %d; want %d\n%s", args, res.code, exitFailure, out)
	}
	if want := "the server's counters went below what the clients were told"; !strings.Contains(out, want) {
		t.Errorf("rlbench %q output =\n%s\nwant %q", args, out, want)
	}
	if strings.Contains(out, "not measured") {
		t.Errorf("rlbench %q output =\n%s\nwant the lost increments measured", args, out)
	}
}

// TestServerRestartedKeepsClaim: an --addr server restarted mid-cell
// (without persistence) loses the run's claim with every other key. The
// run_id that changed explains it, and no other run holds the prefix: the
// run takes its claim again, cleans up the keys its clients wrote since
// the restart, and runs its later cells, where it stopped saying that the
// keys "may be another run's now", leaving them.
func TestServerRestartedKeepsClaim(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	args := []string{"--addr", srv.Addr(), "--prefix", prefix, "--strategy", "incr-expire,naive", "--clients", "4", "--keys", "20",
		"--limit", "100", "--window", "60", "--duration", "4s", "--warmup", "0"}
	restarted := make(chan error, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		restarted <- srv.Restart(t.Context())
	}()
	res := runCLI(t, t.Context(), args...)
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	out := res.stdout + res.stderr
	if res.code != exitFailure || strings.Contains(out, "lost its claim") || !strings.Contains(out, "naive/go-redis") {
		t.Errorf("rlbench %q with the server restarted mid-cell = exit %d\n%s\nwant %d, the claim kept, the naive cell run", args, res.code, out, exitFailure)
	}
	if keys := scanKeys(t, rdb, prefix+"*"); len(keys) != 0 {
		t.Errorf("after the run, %d keys remain under the prefix, such as %q; want none", len(keys), keys[0])
	}
}

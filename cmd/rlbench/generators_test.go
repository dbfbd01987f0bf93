package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/results"
)

// TestCleanupCommand checks that rlbench cleanup deletes every key under
// the prefix, and nothing else.
func TestCleanupCommand(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	prefix := redistest.Prefix(t)
	for i := range 25 {
		if err := rdb.Set(ctx, prefix+"lua:go-redis:{"+strconv.Itoa(i)+"}", 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Set(ctx, "unrelated", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, exitOK, "cleanup", "--prefix", prefix, "--addr", srv.Addr())
	if !strings.Contains(res.stdout, "deleted 25 keys") {
		t.Errorf("rlbench cleanup stdout = %q; want \"deleted 25 keys\"", res.stdout)
	}
	if n := rdb.DBSize(ctx).Val(); n != 1 {
		t.Errorf("DBSIZE after cleanup = %d; want 1 (the unrelated key)", n)
	}
	for _, args := range [][]string{
		{"cleanup", "--addr", srv.Addr()},                     // no prefix: it would be every key
		{"cleanup", "--prefix", prefix},                       // no target
		{"cleanup", "--prefix", "", "--addr", srv.Addr()},     // an unset shell variable
		{"cleanup", "--prefix", prefix, "--addr", "x=", "-q"}, // unknown flag
	} {
		mustRun(t, exitUsage, args...)
	}
}

// TestStartAtInThePast checks that a start time that has passed is bad
// input, before anything is written.
func TestStartAtInThePast(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	args := []string{"--addr", srv.Addr(), "--start-at", "2020-01-01T00:00:00Z", "--duration", "1s"}
	res := mustRun(t, exitUsage, args...)
	if !strings.Contains(res.stderr, "--start-at") {
		t.Errorf("stderr = %q; want it to name --start-at", res.stderr)
	}
	checkUntouched(t, rdb, args)
	mustRun(t, exitUsage, "--start-at", "tomorrow")
}

// TestGeneratorsStartTogether is the many-generators recipe on one
// machine: three processes given one --start-at start their measured load
// within a few milliseconds of it, and rlbench merge adds them up exactly.
func TestGeneratorsStartTogether(t *testing.T) {
	t.Parallel()
	bin := rlbenchBinary(t)
	srv := redistest.Start(t)
	dir := t.TempDir()
	start := time.Now().Add(4 * time.Second).Truncate(time.Millisecond)
	var procs []*exec.Cmd
	var files []string
	for i := range 3 {
		file := filepath.Join(dir, "gen-"+strconv.Itoa(i)+".json")
		files = append(files, file)
		cmd := exec.Command(bin, "--addr", srv.Addr(), "--strategy", "lua", "--client", "rueidis",
			"--clients", "4", "--keys", "50", "--duration", "1s", "--warmup", "200ms", "-q",
			"--start-at", start.Format(time.RFC3339Nano), "--json", file)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("generator: %v", err)
		}
	}
	var sum int64
	for _, f := range files {
		rep, err := results.ReadReportFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Runs[0]
		if d := r.StartedAt.Sub(start); d < 0 || d > 200*time.Millisecond {
			t.Errorf("%s: measured load started %v after --start-at; want within [0, 200ms]", f, d)
		}
		sum += r.Decisions
	}
	merged := filepath.Join(dir, "all.json")
	mustRun(t, exitOK, append(append([]string{"merge"}, files...), "-o", merged)...)
	rep, err := results.ReadReportFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Runs[0].Decisions; got != sum {
		t.Errorf("merged decisions = %d; want %d, the parts' sum", got, sum)
	}
}

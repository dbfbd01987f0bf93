package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/internal/proctest"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
)

// TestMain removes the binary that rlbenchBinary built.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	builtDir  string // holds the built binary
	builtBin  string
	buildErr  error
)

// rlbenchBinary builds the command once per test binary and returns its
// path, for the tests that need a process of its own: signals, a closed
// stdout, the module versions only a built binary records.
func rlbenchBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if builtDir, buildErr = os.MkdirTemp("", "rlbench-cmd-test-"); buildErr != nil {
			return
		}
		builtBin = filepath.Join(builtDir, "rlbench")
		if out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput(); err != nil {
			buildErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// TestClosedStdout is issue 12, item 7: `rlbench ... --json o.json | head -1`
// died of SIGPIPE before it wrote the JSON. The files are written first,
// and a closed stdout stops the printing, not the command: exit status 0
// and the whole report in the file.
func TestClosedStdout(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	jsonPath := filepath.Join(t.TempDir(), "o.json")
	args := []string{"--addr", srv.Addr(), "--prefix", redistest.Prefix(t), "--client", "go-redis,rueidis", "--clients", "2",
		"--requests", "300", "--warmup", "0", "--json", jsonPath}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // as head does once it has its line; here, before the first
	cmd := exec.Command(rlbenchBinary(t), args...)
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	w.Close()
	if err != nil {
		t.Fatalf("rlbench %q | (closed) = %v; want exit status 0\nstderr:\n%s", args, err, stderr.String())
	}
	if runs := readReport(t, jsonPath).Runs; len(runs) != 2 {
		t.Errorf("--json %s has %d runs; want 2", jsonPath, len(runs))
	}
}

// TestSIGHUP is issue 12, item 9: a hang-up killed rlbench and left the
// run's keys. It is now an interrupt like SIGINT: the cell stops, its keys
// are deleted, and the exit status is 1 with the usual line.
func TestSIGHUP(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	args := []string{"--addr", srv.Addr(), "--prefix", prefix, "--strategy", "naive", "--clients", "4", "--keys", "50",
		"--window", "60", "--duration", "60s", "--warmup", "0"}
	cmd := exec.Command(rlbenchBinary(t), args...)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := signalMidLoad(t, rdb, cmd, &stderr, keyspace.Cell(prefix, "naive", "go-redis"), syscall.SIGHUP)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitFailure {
		t.Errorf("rlbench %q after SIGHUP = %v; want exit status %d\nstderr:\n%s", args, err, exitFailure, stderr.String())
	}
	if want := "rlbench: interrupted;"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr after SIGHUP =\n%s\nwant a line starting %q", stderr.String(), want)
	}
	if keys := scanKeys(t, rdb, prefix+"*"); len(keys) != 0 {
		t.Errorf("after SIGHUP, %d keys under %q remain (%q ...); want none", len(keys), prefix, keys[0])
	}
}

// TestHandleSignals checks the signals a command reacts to: the first of
// SIGINT, SIGTERM and SIGHUP cancels the run's context, the second its
// Abort context.
func TestHandleSignals(t *testing.T) {
	// Not parallel: the signals go to the whole test process, which
	// handles them only while handleSignals is in force.
	var stderr syncBuffer
	ctx, abort, stop := handleSignals(context.Background(), &stderr, nil)
	defer stop()
	self := os.Getpid()
	wait := func(c context.Context, what string) {
		t.Helper()
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("%s not done 5s after the signal", what)
		}
	}
	if err := syscall.Kill(self, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	wait(ctx, "ctx")
	time.Sleep(sameInterrupt + 50*time.Millisecond) // a second interrupt, not the same
	if abort.Err() != nil {
		t.Fatalf("after one SIGHUP, abort is done; want only ctx")
	}
	if err := syscall.Kill(self, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wait(abort, "abort")
	if got, want := stderr.String(), "rlbench: second signal (terminated): stopping at once\n"; got != want {
		t.Errorf("stderr after the second signal = %q; want %q", got, want)
	}
}

// TestSignalsTogether is issue 34, item 10: `timeout 3 rlbench ...` often
// left the run's keys, "stopped by a second interrupt": timeout signals its
// child, then the child's process group, so two SIGTERMs arrive together.
// Signals within sameInterrupt of the first are one interrupt: the cell
// stops, its keys are deleted, and stderr says the second was the same.
func TestSignalsTogether(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		gap  time.Duration
	}{
		{name: "at once", gap: 0},
		{name: "20ms apart, as on a loaded machine", gap: 20 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			rdb := redistest.Client(t, srv)
			prefix := redistest.Prefix(t)
			args := []string{"--addr", srv.Addr(), "--prefix", prefix, "--strategy", "naive", "--clients", "4", "--keys", "20000",
				"--window", "60", "--duration", "60s", "--warmup", "0"}
			cmd := exec.Command(rlbenchBinary(t), args...)
			var stdout, stderr syncBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			// Enough keys that the audit and clean-up outlast the gap.
			err := signalsMidLoad(t, rdb, cmd, &stderr, keyspace.Cell(prefix, "naive", "go-redis"), 10000, tc.gap, syscall.SIGTERM, syscall.SIGTERM)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != exitFailure {
				t.Errorf("rlbench %q after two SIGTERMs %s apart = %v; want exit status %d\nstderr:\n%s", args, tc.gap, err, exitFailure, stderr.String())
			}
			if strings.Contains(stderr.String(), "second signal") {
				t.Errorf("stderr after two SIGTERMs %s apart =\n%s\nwant them taken as one interrupt", tc.gap, stderr.String())
			}
			if keys := scanKeys(t, rdb, prefix+"*"); len(keys) != 0 {
				t.Errorf("after two SIGTERMs %s apart, %d keys under %q remain (%q ...); want none", tc.gap, len(keys), prefix, keys[0])
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two
// goroutines.
type syncBuffer = proctest.Buffer

var _ io.Writer = (*syncBuffer)(nil)

// TestProcsToSet checks which GOMAXPROCS a load run sets (0: none).
func TestProcsToSet(t *testing.T) {
	t.Parallel()
	local := rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: "127.0.0.1:6379"}}}
	remote := rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: "192.0.2.1:6379"}}}
	tests := []struct {
		name    string
		cfg     rlbench.Config
		procs   int
		given   bool   // --procs was given
		env     string // $GOMAXPROCS
		current int    // the runtime's GOMAXPROCS
		want    int
	}{
		{name: "--procs wins over the environment", cfg: local, procs: 3, given: true, env: "2", current: 4, want: 3},
		{name: "--procs as it is: nothing to set", cfg: local, procs: 4, given: true, current: 4, want: 0},
		{name: "$GOMAXPROCS is left to the runtime", cfg: local, env: "2", current: 2, want: 0},
		{name: "a local server gets a CPU", cfg: local, current: 4, want: 3},
		{name: "a private server gets a CPU", cfg: rlbench.Config{}, current: 2, want: 1},
		{name: "one CPU stays one", cfg: local, current: 1, want: 0},
		{name: "a remote server: all CPUs, as they are", cfg: remote, current: 4, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := loadOptions{cfg: tc.cfg, procs: tc.procs}
			if got := procsToSet(o, tc.given, tc.env, tc.current); got != tc.want {
				t.Errorf("procsToSet(procs %d, given %t, env %q, current %d) = %d; want %d", tc.procs, tc.given, tc.env, tc.current, got, tc.want)
			}
		})
	}
}

// TestExitStatus checks the one mapping from a command's error to its
// exit status and stderr.
func TestExitStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		err        error
		wantCode   int
		wantStderr string
	}{
		{"nil", nil, exitOK, ""},
		{"help", pflag.ErrHelp, exitOK, ""},
		{"failure", errors.New("x"), exitFailure, "rlbench x: x\n"},
		{"usage", badInput(errors.New("--window: bad")), exitUsage, "rlbench x: --window: bad\n"},
		{"usage with help", badInputHelp(errors.New(`unexpected argument "a"`)), exitUsage, "rlbench x: unexpected argument \"a\" (see rlbench x --help)\n"},
		{"reported", errReported, exitFailure, ""},
		{"joined", errors.Join(nil, errReported, errors.New("--json: disk full"), errors.New("boom")), exitFailure, "rlbench x: --json: disk full\nrlbench x: boom\n"},
		{"URL credentials", errors.New("dial redis://u:pw@h:1: refused"), exitFailure, "rlbench x: dial redis://xxxxx@h:1: refused\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			if got := exitStatus(&stderr, "rlbench x", tc.err); got != tc.wantCode || stderr.String() != tc.wantStderr {
				t.Errorf("exitStatus(%v) = %d, stderr %q; want %d, %q", tc.err, got, stderr.String(), tc.wantCode, tc.wantStderr)
			}
		})
	}
}

// TestUsageListsCommands checks that rlbench --help lists every command of
// the table, the load run first.
func TestUsageListsCommands(t *testing.T) {
	t.Parallel()
	res := mustRun(t, exitOK, "--help")
	var names []string
	for _, c := range testCLI.commands() {
		names = append(names, c.name)
		if !strings.Contains(res.stderr, "rlbench "+c.usage+"\n") {
			t.Errorf("rlbench --help lacks the line of %q:\n%s", c.name, res.stderr)
		}
	}
	if !slices.Equal(names[:1], []string{""}) {
		t.Errorf("commands() = %q; want the load run (\"\") first", names)
	}
}

// TestSIGQUIT is issue 21, item 7: a SIGQUIT (Ctrl-\) printed Go's
// goroutine dump, exited 2 and left the run's keys, with no JSON. It is now
// an interrupt like SIGTERM: the keys are deleted, the JSON is written as
// for an interrupted run, and the exit status is 1; with --debug (or
// GOTRACEBACK set) the dump is written first.
func TestSIGQUIT(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		env      string
		wantDump bool
	}{
		{name: "plain", wantDump: false},
		{name: "--debug", args: []string{"--debug"}, wantDump: true},
		{name: "GOTRACEBACK", env: "GOTRACEBACK=all", wantDump: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			rdb := redistest.Client(t, srv)
			prefix := redistest.Prefix(t)
			jsonPath := filepath.Join(t.TempDir(), "o.json")
			args := append([]string{"--addr", srv.Addr(), "--prefix", prefix, "--strategy", "naive", "--clients", "4", "--keys", "50",
				"--window", "60", "--duration", "60s", "--warmup", "0", "--json", jsonPath}, tc.args...)
			cmd := exec.Command(rlbenchBinary(t), args...)
			cmd.Env = os.Environ()
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env)
			}
			var stdout, stderr syncBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := signalMidLoad(t, rdb, cmd, &stderr, keyspace.Cell(prefix, "naive", "go-redis"), syscall.SIGQUIT)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != exitFailure {
				t.Errorf("rlbench %q after SIGQUIT = %v; want exit status %d\nstderr:\n%s", args, err, exitFailure, stderr.String())
			}
			if want := "rlbench: interrupted;"; !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr after SIGQUIT =\n%s\nwant a line starting %q", stderr.String(), want)
			}
			if dumped := strings.Contains(stderr.String(), "goroutine 1 ["); dumped != tc.wantDump {
				t.Errorf("stderr after SIGQUIT has a goroutine dump: %t; want %t\nstderr:\n%s", dumped, tc.wantDump, stderr.String())
			}
			if keys := scanKeys(t, rdb, prefix+"*"); len(keys) != 0 {
				t.Errorf("after SIGQUIT, %d keys under %q remain (%q ...); want none", len(keys), prefix, keys[0])
			}
			if rep := readReport(t, jsonPath); !rep.Interrupted || len(rep.Runs) != 1 || !bool(rep.Runs[0].Incomplete) {
				t.Errorf("--json after SIGQUIT: interrupted %t, %d runs; want an interrupted report of 1 incomplete run", rep.Interrupted, len(rep.Runs))
			}
		})
	}
}

// TestRunRefusesAClaimedPrefix is issue 21, item 5, at the command line: a
// prefix another run holds (its claim key, with that run's id) is bad
// input, exit status 2, naming the holder; the holder's claim and the
// tenant's keys stay as they were.
func TestRunRefusesAClaimedPrefix(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	claim := prefix + "rlbench-claim"
	const holder = "run 20261201T000000-0badc0de (pid 4242 on elsewhere, since 2026-12-01T00:00:00Z)"
	if err := rdb.Set(ctx, claim, holder, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "tenant:1", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	args := []string{"--addr", srv.Addr(), "--prefix", prefix, "--clients", "2", "--requests", "100"}
	res := mustRun(t, exitUsage, args...)
	if want := "run 20261201T000000-0badc0de"; !strings.Contains(res.stderr, want) || !strings.Contains(res.stderr, "--prefix") {
		t.Errorf("run(%q) stderr =\n%s\nwant it to name the holder, %q, and --prefix", args, res.stderr, want)
	}
	if v, err := rdb.Get(ctx, claim).Result(); v != holder || err != nil {
		t.Errorf("GET %s after the refused run = %q, %v; want the holder's claim as it was", claim, v, err)
	}
	if ttl := rdb.PTTL(ctx, claim).Val(); ttl <= 0 {
		t.Errorf("PTTL %s after the refused run = %s; want its TTL kept", claim, ttl)
	}
	if n := rdb.DBSize(ctx).Val(); n != 2 {
		t.Errorf("DBSIZE after the refused run = %d; want 2 (the claim and the tenant's key)", n)
	}
}

// signalMidLoad starts cmd (a load run), waits until it has written a key
// under cellPrefix, sends it sig, and returns how it exited; it fails t
// when no key comes within 30 s or cmd still runs 30 s after the signal.
func signalMidLoad(t *testing.T, rdb *redis.Client, cmd *exec.Cmd, stderr fmt.Stringer, cellPrefix string, sig syscall.Signal) error {
	t.Helper()
	return signalsMidLoad(t, rdb, cmd, stderr, cellPrefix, 1, 0, sig)
}

// signalsMidLoad is signalMidLoad waiting for minKeys keys, and sending
// each of sigs, gap apart.
func signalsMidLoad(t *testing.T, rdb *redis.Client, cmd *exec.Cmd, stderr fmt.Stringer, cellPrefix string, minKeys int, gap time.Duration, sigs ...syscall.Signal) error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if len(scanKeys(t, rdb, cellPrefix+"*")) >= minKeys {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("rlbench %q wrote fewer than %d keys in 30s\nstderr:\n%s", cmd.Args, minKeys, stderr)
		}
	}
	for i, sig := range sigs {
		if i > 0 && gap > 0 {
			time.Sleep(gap)
		}
		if err := cmd.Process.Signal(sig); err != nil && !(i > 0 && errors.Is(err, os.ErrProcessDone)) {
			t.Fatal(err)
		}
	}
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("rlbench %q still runs 30s after %v", cmd.Args, sigs)
		return nil
	}
}

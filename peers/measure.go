package peers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlbench/rlbench/saturation"
)

// measured is one child process seen from outside.
type measured struct {
	finished
	before, after saturation.Sample // of the server, with the child's CPU
	calls         evalshaStats      // during the run
}

// saturation is the self-check of the child run, for a child whose code
// could use cpus CPUs at once (0: unknown).
func (m measured) saturation(cpus int) saturation.Report {
	after := m.after
	after.ProcessCPUs = cpus
	return saturation.Compare([]saturation.Sample{m.before}, []saturation.Sample{after})
}

// measure runs a child, with env added to its environment, between two
// samples of the server. The child's CPU and peak RSS (from its rusage)
// take the place of this process's in the samples.
func (b *bench) measure(ctx context.Context, timeout time.Duration, env []string, name string, args ...string) (measured, error) {
	before, err := saturation.Take(ctx, b.rdb)
	if err != nil {
		return measured{}, err
	}
	callsBefore, err := b.evalshaStats(ctx)
	if err != nil {
		return measured{}, err
	}
	f, err := b.execEnv(ctx, timeout, env, "", name, args...)
	if err != nil {
		return measured{}, err
	}
	after, err := saturation.Take(ctx, b.rdb)
	if err != nil {
		return measured{}, err
	}
	callsAfter, err := b.evalshaStats(ctx)
	if err != nil {
		return measured{}, err
	}
	before.ProcessCPU = 0
	after.ProcessCPU, after.PeakRSSBytes = f.cpu, f.peakRSS
	return measured{
		finished: f,
		before:   before,
		after:    after,
		calls:    evalshaStats{calls: callsAfter.calls - callsBefore.calls, failed: callsAfter.failed - callsBefore.failed},
	}, nil
}

// evalshaStats reads the server's EVALSHA counters from INFO commandstats.
func (b *bench) evalshaStats(ctx context.Context) (evalshaStats, error) {
	text, err := b.rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return evalshaStats{}, fmt.Errorf("info commandstats: %w", err)
	}
	return parseEvalshaStats(text)
}

// finished is what a child process printed and cost.
type finished struct {
	stdout  []byte
	wall    time.Duration
	cpu     time.Duration // user + system
	peakRSS int64         // bytes; 0 where unknown
}

// exec runs name with args and stdin (if not ""), killing it after timeout.
// A failure quotes the end of its stderr.
func (b *bench) exec(ctx context.Context, timeout time.Duration, stdin, name string, args ...string) (finished, error) {
	return b.execEnv(ctx, timeout, nil, stdin, name, args...)
}

// execEnv is exec with env added to the child's environment.
func (b *bench) execEnv(ctx context.Context, timeout time.Duration, env []string, stdin, name string, args ...string) (finished, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	// On a timeout or an interrupt, SIGINT first (rlbench then stops its
	// workers and cleans up), SIGKILL waitDelay later.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = waitDelay
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			err = fmt.Errorf("interrupted: %w", err)
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			err = fmt.Errorf("stopped after %s: %w", timeout, err)
		}
		return finished{}, fmt.Errorf("%s %s: %w%s", filepath.Base(name), strings.Join(args, " "), err, tail(stderr.String()))
	}
	ps := cmd.ProcessState
	return finished{stdout: stdout.Bytes(), wall: wall, cpu: ps.UserTime() + ps.SystemTime(), peakRSS: saturation.ChildPeakRSS(ps)}, nil
}

// tail returns the last lines of a child's stderr, indented, or "".
func tail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return "\n    " + strings.Join(lines, "\n    ")
}

func writeJSON(path string, rep report) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

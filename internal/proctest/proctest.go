// Package proctest holds the test helpers about processes and what they do
// over time: the id of a process that has exited (DeadPID), a server's
// process id (ServerPID), polling until a condition holds (WaitFor), and a
// buffer that a running process writes while the test reads it (Buffer).
// It imports nothing of rlbench's, so that every package's tests can use
// it, redisserver's own too (redistest, which imports redisserver, cannot
// serve them).
package proctest

import (
	"bytes"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// WaitLimit is how long WaitFor polls before it fails the test.
const WaitLimit = 30 * time.Second

// DeadPID returns the id of a process that has exited: a child, run to its
// end, that nothing waits on any more.
func DeadPID(tb testing.TB) int {
	tb.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		tb.Fatalf("proctest: run true: %v", err)
	}
	return cmd.Process.Pid
}

// ServerPID returns the process id of rdb's server, from INFO server.
func ServerPID(tb testing.TB, rdb *redis.Client) int {
	tb.Helper()
	info, err := rdb.InfoMap(tb.Context(), "server").Result()
	if err != nil {
		tb.Fatalf("proctest: INFO server: %v", err)
	}
	pid, err := strconv.Atoi(info["Server"]["process_id"])
	if err != nil {
		tb.Fatalf("proctest: INFO server process_id: %v", err)
	}
	return pid
}

// WaitFor polls cond every 20 ms until it holds, and fails tb, naming
// what it waited for, when it still does not after WaitLimit: a bound
// for a loaded machine, not a measure of speed.
func WaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(WaitLimit); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("waiting for %s: gave up after %s", what, WaitLimit)
		}
	}
}

// Buffer is a bytes.Buffer safe for a writer and a reader in two
// goroutines: a child's stderr, or a run's log, that the test reads while
// it runs. Its zero value is empty and ready.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

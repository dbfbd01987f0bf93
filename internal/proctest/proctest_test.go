package proctest_test

import (
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/rlbench/rlbench/internal/proctest"
)

// TestDeadPID checks that no process answers to the id DeadPID returns.
func TestDeadPID(t *testing.T) {
	t.Parallel()
	pid := proctest.DeadPID(t)
	if pid == os.Getpid() {
		t.Fatalf("DeadPID() = %d, this process", pid)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill(DeadPID() = %d, 0) = %v; want ESRCH", pid, err)
	}
}

// TestWaitFor checks that WaitFor returns once cond holds, having asked
// until then.
func TestWaitFor(t *testing.T) {
	t.Parallel()
	calls := 0
	proctest.WaitFor(t, "the third call", func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Errorf("WaitFor returned after %d calls of cond; want 3", calls)
	}
}

// TestBuffer checks that Buffer keeps every write of two goroutines that
// write while a third reads (go test -race finds a data race, if any).
func TestBuffer(t *testing.T) {
	t.Parallel()
	var b proctest.Buffer
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("ab"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); len(got) != 400 || strings.Count(got, "ab") != 200 {
		t.Errorf("after 200 writes of %q, String() = %d bytes, %d of them; want 400, 200", "ab", len(got), strings.Count(got, "ab"))
	}
}

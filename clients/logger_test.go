//go:build linux

package clients_test

import (
	"context"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/porttest"
)

// TestGoRedisLogsNothing sends a command through the go-redis adapter to
// a closed port: the error is the caller's, and go-redis's own log line
// ("redis: connection pool: failed to dial ...") does not reach stderr.
// go-redis's default logger holds the process's stderr from its start, so
// the test points file descriptor 2 itself at a pipe; it does not run in
// parallel.
func TestGoRedisLogsNothing(t *testing.T) {
	addr := porttest.Refused(t)

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved, err := syscall.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Dup3(int(w.Fd()), 2, 0); err != nil {
		t.Fatal(err)
	}
	c, err := clients.New("go-redis", clients.Options{Addr: addr})
	if err == nil {
		_, _, err = c.Get(context.Background(), "k")
		c.Close()
	}
	if err := syscall.Dup3(saved, 2, 0); err != nil {
		t.Fatal(err)
	}
	syscall.Close(saved)
	w.Close()
	out, _ := io.ReadAll(r)
	if err == nil {
		t.Errorf("Get on a closed port: error = nil; want one")
	}
	if len(out) > 0 {
		t.Errorf("go-redis wrote to stderr:\n%s\nwant nothing", out)
	}
}

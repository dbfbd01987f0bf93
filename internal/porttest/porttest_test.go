package porttest_test

import (
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/rlbench/rlbench/internal/porttest"
)

// TestRefused checks that the held port refuses connections and cannot
// be taken by a listener while the test runs.
func TestRefused(t *testing.T) {
	t.Parallel()
	addr := porttest.Refused(t)
	if c, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Errorf("net.Dial(%s) = %v; want connection refused", addr, err)
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Errorf("net.Listen(%s) = nil; want the port held (address in use)", addr)
	}
}

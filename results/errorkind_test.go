package results

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/porttest"
	"github.com/rlbench/rlbench/strategies"
)

// TestErrorKind classifies synthetic and real errors, bare and wrapped.
func TestErrorKind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "nil", err: nil, want: ""},
		// Redis error replies are reported by their first word.
		{name: "reply bare", err: strategies.ReplyError("WRONGTYPE Operation against a key holding the wrong kind of value"), want: "WRONGTYPE"},
		{name: "reply wrapped", err: fmt.Errorf("lua: evalsha: %w", strategies.ReplyError("NOSCRIPT No matching script. Please use EVAL.")), want: "NOSCRIPT"},
		{name: "reply wrapped twice", err: fmt.Errorf("workload: decide: %w", fmt.Errorf("naive: get: %w", strategies.ReplyError("ERR value is not an integer or out of range"))), want: "ERR"},
		{name: "reply single word", err: strategies.ReplyError("LOADING"), want: "LOADING"},
		{name: "reply empty", err: strategies.ReplyError(""), want: KindOther},
		{name: "reply joined with a timeout", err: errors.Join(strategies.ReplyError("BUSY Redis is busy"), context.DeadlineExceeded), want: "BUSY"},
		// Timeouts: contexts, deadlines, net errors.
		{name: "crashed", err: fmt.Errorf("incr-expire: %w", strategies.ErrCrashed), want: KindCrashed},
		{name: "deadline exceeded", err: context.DeadlineExceeded, want: KindTimeout},
		{name: "deadline exceeded wrapped", err: fmt.Errorf("lua: evalsha: %w", context.DeadlineExceeded), want: KindTimeout},
		{name: "real context deadline", err: expiredContextErr(t), want: KindTimeout},
		{name: "real read deadline", err: readDeadlineErr(t), want: KindTimeout},
		{name: "os deadline exceeded", err: os.ErrDeadlineExceeded, want: KindTimeout},
		{name: "net timeout", err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ETIMEDOUT}, want: KindTimeout},
		{name: "canceled", err: context.Canceled, want: KindCanceled},
		{name: "canceled wrapped", err: fmt.Errorf("incr-expire: incr: %w", context.Canceled), want: KindCanceled},
		// Connection failures.
		{name: "real conn refused", err: connRefusedErr(t), want: KindConnRefused},
		{name: "conn refused wrapped", err: fmt.Errorf("dial: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), want: KindConnRefused},
		{name: "real conn reset", err: connResetErr(t), want: KindConnReset},
		{name: "broken pipe", err: &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, want: KindConnReset},
		{name: "real eof", err: peerClosedErr(t), want: KindConnClosed},
		{name: "eof wrapped", err: fmt.Errorf("read reply: %w", io.EOF), want: KindConnClosed},
		{name: "unexpected eof", err: io.ErrUnexpectedEOF, want: KindConnClosed},
		{name: "real use of closed conn", err: selfClosedErr(t), want: KindConnClosed},
		// Everything else.
		{name: "other", err: errors.New("redis: client is closed"), want: KindOther},
		{name: "other errno", err: syscall.EHOSTUNREACH, want: KindOther},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := ErrorKind(tc.err); got != tc.want {
				t.Errorf("ErrorKind(%v) = %q; want %q", tc.err, got, tc.want)
			}
		})
	}
}

// TestErrorKindAllocs checks that classifying common errors does not allocate.
func TestErrorKindAllocs(t *testing.T) {
	refused := connRefusedErr(t)
	tests := []struct {
		name string
		err  error
	}{
		{name: "reply", err: fmt.Errorf("lua: evalsha: %w", strategies.ReplyError("NOSCRIPT No matching script"))},
		{name: "deadline", err: fmt.Errorf("lua: evalsha: %w", context.DeadlineExceeded)},
		{name: "conn refused", err: refused},
		{name: "other", err: errors.New("boom")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := testing.AllocsPerRun(100, func() { _ = ErrorKind(tc.err) }); got != 0 {
				t.Errorf("ErrorKind(%v) allocates %v times; want 0", tc.err, got)
			}
		})
	}
}

// expiredContextErr returns the error of a context whose deadline passed.
func expiredContextErr(t *testing.T) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	return ctx.Err()
}

// connPair returns both ends of a loopback TCP connection; they are closed
// when the test ends.
func connPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatalf("net.ListenTCP(loopback) = %v; want nil", err)
	}
	defer ln.Close()
	c, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatalf("net.DialTCP(%s) = %v; want nil", ln.Addr(), err)
	}
	s, err := ln.AcceptTCP()
	if err != nil {
		c.Close()
		t.Fatalf("AcceptTCP() = %v; want nil", err)
	}
	t.Cleanup(func() {
		c.Close()
		s.Close()
	})
	return c, s
}

// readDeadlineErr returns the error of a read whose deadline passed.
func readDeadlineErr(t *testing.T) error {
	t.Helper()
	c, _ := connPair(t)
	if err := c.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatalf("SetReadDeadline() = %v; want nil", err)
	}
	_, err := c.Read(make([]byte, 1))
	if err == nil {
		t.Fatal("Read() past the deadline = nil; want an error")
	}
	return err
}

// connRefusedErr returns the error of dialing a loopback port nobody listens on.
func connRefusedErr(t *testing.T) error {
	t.Helper()
	addr := porttest.Refused(t)
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("net.Dial(%s) after closing its listener = nil; want an error", addr)
	}
	return err
}

// connResetErr returns the error of reading from a connection whose peer
// aborted it with a TCP RST.
func connResetErr(t *testing.T) error {
	t.Helper()
	c, s := connPair(t)
	if err := s.SetLinger(0); err != nil { // close sends RST, not FIN
		t.Fatalf("SetLinger(0) = %v; want nil", err)
	}
	s.Close()
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatalf("SetReadDeadline() = %v; want nil", err)
	}
	_, err := c.Read(make([]byte, 1))
	if err == nil {
		t.Fatal("Read() after the peer reset = nil; want an error")
	}
	return err
}

// peerClosedErr returns the error of reading from a connection whose peer
// closed it cleanly.
func peerClosedErr(t *testing.T) error {
	t.Helper()
	c, s := connPair(t)
	s.Close()
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatalf("SetReadDeadline() = %v; want nil", err)
	}
	_, err := c.Read(make([]byte, 1))
	if err == nil {
		t.Fatal("Read() after the peer closed = nil; want an error")
	}
	return err
}

// selfClosedErr returns the error of reading from a connection we closed.
func selfClosedErr(t *testing.T) error {
	t.Helper()
	c, _ := connPair(t)
	c.Close()
	_, err := c.Read(make([]byte, 1))
	if err == nil {
		t.Fatal("Read() on a closed connection = nil; want an error")
	}
	return err
}

func TestFormatErrorKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		kinds map[string]int64
		sep   string
		want  string
	}{
		{name: "none", kinds: nil, sep: " ", want: ""},
		// Most frequent first, ties by name.
		{name: "order", kinds: map[string]int64{"timeout": 3, "conn-reset": 3, "WRONGTYPE": 1, "EOF": 7}, sep: " ", want: "EOF=7 conn-reset=3 timeout=3 WRONGTYPE=1"},
		{name: "separator", kinds: map[string]int64{"a": 1, "b": 2}, sep: ", ", want: "b=2, a=1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := FormatErrorKinds(tc.kinds, tc.sep); got != tc.want {
				t.Errorf("FormatErrorKinds(%v, %q) = %q; want %q", tc.kinds, tc.sep, got, tc.want)
			}
		})
	}
}

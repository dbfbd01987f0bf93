package connection_test

import (
	"context"
	"errors"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/connection"
)

// silentListener accepts connections on a loopback port and never answers
// on them: a server that stalls at login. It holds the port for t's length.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var held []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// TestCheckSilentServer checks that a server that accepts the connection
// and never answers is named with its address and the check's timeout,
// under --addr (not --tls, which was not given), and that cancelling the
// context (an interrupt) ends the check at once rather than at its
// timeout.
func TestCheckSilentServer(t *testing.T) {
	t.Parallel()
	addr := silentListener(t)

	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
		defer cancel()
		err := connection.Check(ctx, addr, connection.Settings{})
		ce, ok := errors.AsType[*connection.CheckError](err)
		if !ok || !errors.Is(err, connection.ErrNoAnswer) {
			t.Fatalf("connection.Check(silent %s) = %v; want a *CheckError of ErrNoAnswer", addr, err)
		}
		if ce.Flag != "--addr" || !strings.Contains(err.Error(), addr) || !regexp.MustCompile(`PING within 1\.[45]s`).MatchString(err.Error()) {
			t.Errorf("connection.Check(silent %s) = %q; want it to name --addr, the address and \"PING within 1.5s\"", addr, err)
		}
		if strings.Contains(err.Error(), "--tls") {
			t.Errorf("connection.Check(silent %s) = %q; want no --tls, which was not given", addr, err)
		}
	})

	t.Run("tls", func(t *testing.T) {
		t.Parallel()
		err := connection.Check(t.Context(), addr, connection.Settings{TLS: &connection.TLSFiles{Insecure: true}})
		ce, ok := errors.AsType[*connection.CheckError](err)
		if !ok || !errors.Is(err, connection.ErrNoAnswer) || ce.Flag != "--addr" || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "TLS handshake within 3s") {
			t.Errorf("connection.Check(silent %s, --tls) = %v; want ErrNoAnswer under --addr naming the address and the handshake's 3s", addr, err)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context()) // no deadline: Check's own 10 s
		start := time.Now()
		time.AfterFunc(200*time.Millisecond, cancel)
		err := connection.Check(ctx, addr, connection.Settings{Password: "secret"})
		elapsed := time.Since(start)
		if !errors.Is(err, connection.ErrCheckInterrupted) || !errors.Is(err, context.Canceled) {
			t.Errorf("connection.Check(silent %s, cancelled) = %v; want ErrCheckInterrupted and context.Canceled", addr, err)
		}
		if elapsed > connection.CheckTimeout/2 {
			t.Errorf("connection.Check(silent %s, cancelled after 200ms) returned after %s; want well before its %s timeout", addr, elapsed, connection.CheckTimeout)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("connection.Check error = %q; want no password", err)
		}
	})
}

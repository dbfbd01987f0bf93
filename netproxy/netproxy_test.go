package netproxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/netproxy"
)

// start starts a server and a proxy to it, closed in t.Cleanup.
func start(t *testing.T) (*netproxy.Proxy, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	p, err := netproxy.Start(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, redistest.Client(t, srv)
}

// shortTimeout is the timeout of a client whose timeout a test asserts;
// one on a path that must succeed has generous ones (30 s), for a loaded
// machine.
const shortTimeout = 300 * time.Millisecond

// client is a go-redis client through p, with no retries and timeout as
// its dial, read and write timeouts, closed in t.Cleanup.
func client(t *testing.T, p *netproxy.Proxy, timeout time.Duration) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{
		Addr:                     p.Addr(),
		MaxRetries:               -1,
		ReadTimeout:              timeout,
		WriteTimeout:             timeout,
		DialTimeout:              timeout,
		DisableIdentity:          true,
		Protocol:                 2,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// dial opens a raw connection through p and checks that PING answers.
func dial(t *testing.T, p *netproxy.Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	r := bufio.NewReader(conn)
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("PING through the proxy: %q, %v", line, err)
	}
	return conn, r
}

func TestPassThrough(t *testing.T) {
	t.Parallel()
	p, _ := start(t)
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") || strings.HasSuffix(p.Addr(), ":0") {
		t.Fatalf("Addr() = %q, want 127.0.0.1:<port>", p.Addr())
	}
	rdb := client(t, p, 30*time.Second)
	key := redistest.Prefix(t) + "k"
	if err := rdb.Set(t.Context(), key, "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.Get(t.Context(), key).Result(); err != nil || got != "v" {
		t.Fatalf("GET through the proxy = %q, %v", got, err)
	}
}

// TestReplyLoss: the server runs the INCR, the client gets no reply but a
// reset; with ReplyLoss(0) replies arrive again.
func TestReplyLoss(t *testing.T) {
	t.Parallel()
	p, plain := start(t)
	key := redistest.Prefix(t) + "n"
	conn, r := dial(t, p)
	if err := p.ReplyLoss(1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("INCR " + key + "\r\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadString('\n'); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("INCR under reply loss 1: %v, want connection reset", err)
	}
	if n, err := plain.Get(t.Context(), key).Int(); err != nil || n != 1 {
		t.Fatalf("the server's counter after a lost reply = %d, %v; want 1 (the server ran it)", n, err)
	}
	if got := p.Stats().LostReplies; got != 1 {
		t.Fatalf("Stats().LostReplies = %d, want 1", got)
	}
	if err := p.ReplyLoss(0); err != nil {
		t.Fatal(err)
	}
	if n, err := client(t, p, 30*time.Second).Incr(t.Context(), key).Result(); err != nil || n != 2 {
		t.Fatalf("INCR after ReplyLoss(0) = %d, %v; want 2", n, err)
	}
	// LoseReplies(1): the next reply only.
	conn, r = dial(t, p)
	p.LoseReplies(1)
	if _, err := conn.Write([]byte("INCR " + key + "\r\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadString('\n'); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("INCR after LoseReplies(1): %v, want connection reset", err)
	}
	dial(t, p) // the one after is answered
	if n, err := plain.Get(t.Context(), key).Int(); err != nil || n != 3 {
		t.Fatalf("the server's counter = %d, %v; want 3", n, err)
	}
	for _, bad := range []float64{-0.1, 1.5} {
		if err := p.ReplyLoss(bad); err == nil {
			t.Errorf("ReplyLoss(%v) accepted", bad)
		}
	}
}

// TestCut: a cut connection times out (no reset), and works again after Heal.
func TestCut(t *testing.T) {
	t.Parallel()
	p, _ := start(t)
	conn, r := dial(t, p)
	if err := p.Cut(); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatalf("write while cut: %v, want none (nothing resets)", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(shortTimeout))
	if _, err := r.ReadString('\n'); !isTimeout(err) {
		t.Fatalf("read while cut: %v, want a timeout", err)
	}
	if err := client(t, p, shortTimeout).Ping(t.Context()).Err(); !isTimeout(err) {
		t.Fatalf("a new client's PING while cut: %v, want a timeout", err)
	}
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	// The PING sent while cut is delivered, and answered, at Heal: no byte
	// of a connection that stays open is lost.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("the PING sent while cut, after Heal: %q, %v", line, err)
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("PING after Heal: %q, %v", line, err)
	}
	if err := client(t, p, 30*time.Second).Ping(t.Context()).Err(); err != nil {
		t.Fatalf("a client's PING after Heal: %v", err)
	}
}

// TestResetAll: every open connection is reset (RST) at once.
func TestResetAll(t *testing.T) {
	t.Parallel()
	p, _ := start(t)
	a, ra := dial(t, p)
	b, rb := dial(t, p)
	if got := p.Open(); got != 2 {
		t.Fatalf("Open() = %d, want 2", got)
	}
	if err := p.ResetAll(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		conn net.Conn
		r    *bufio.Reader
	}{{a, ra}, {b, rb}} {
		_ = c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err := c.r.ReadString('\n')
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("read after ResetAll: %v, want connection reset", err)
		}
	}
	if got := p.Stats().Resets; got != 2 {
		t.Errorf("Stats().Resets = %d, want 2", got)
	}
	dial(t, p) // new connections still work
}

// TestLatency: each reply arrives at least the latency later.
func TestLatency(t *testing.T) {
	t.Parallel()
	p, _ := start(t)
	conn, r := dial(t, p)
	if err := p.Latency(250, 0); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("PING with latency: %q, %v", line, err)
	}
	if took := time.Since(begin); took < 250*time.Millisecond {
		t.Fatalf("PING with 250ms latency took %s", took)
	}
	if err := p.ClearLatency(); err != nil {
		t.Fatal(err)
	}
	if err := p.Latency(10, 20); err == nil {
		t.Error("Latency(10, 20) accepted a jitter above the latency")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestServerSeesTheEnd: what the server's socket reads when a client's
// connection ends: the client's bytes then EOF when the client closed in
// order, during a cut too (the cut's bytes delivered at Heal, then the
// FIN), and a reset when the proxy resets the connection. The upstream is
// a bare listener, not a redis-server: it reads EOF and a reset apart,
// which a server does not tell (TestPartitionEndDelivers in faults is the
// same path against one).
func TestServerSeesTheEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cut  bool // the client writes and closes during a cut
		// reset: ResetAll while the client's connection is open.
		reset bool
	}{
		{name: "closed"},
		{name: "closed during a cut", cut: true},
		{name: "reset", reset: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ln.Close() })
			type read struct {
				data string
				err  error
			}
			got := make(chan read, 1)
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					got <- read{err: err}
					return
				}
				defer conn.Close()
				_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
				data, err := io.ReadAll(conn)
				got <- read{string(data), err}
			}()
			p, err := netproxy.Start(ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close() })
			conn, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = conn.Close() })
			if tc.cut {
				if err := p.Cut(); err != nil {
					t.Fatal(err)
				}
			}
			const sent = "INCR n\r\n"
			if _, err := conn.Write([]byte(sent)); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			if tc.reset {
				for p.Open() != 1 {
					if time.Now().After(deadline) {
						t.Fatalf("Open() = %d; want 1 within 30s", p.Open())
					}
					time.Sleep(time.Millisecond)
				}
				if err := p.ResetAll(); err != nil {
					t.Fatal(err)
				}
				if r := <-got; !errors.Is(r.err, syscall.ECONNRESET) {
					t.Fatalf("the server's read after ResetAll: %q, %v; want a connection reset", r.data, r.err)
				}
				return
			}
			_ = conn.Close()
			if tc.cut {
				for p.Held() != 1 {
					if time.Now().After(deadline) {
						t.Fatalf("Held() = %d; want 1 within 30s", p.Held())
					}
					time.Sleep(time.Millisecond)
				}
				if err := p.Heal(); err != nil {
					t.Fatal(err)
				}
			}
			if r := <-got; r.data != sent || r.err != nil {
				t.Fatalf("the server's read = %q, %v; want %q then EOF (an orderly close, after the bytes)", r.data, r.err, sent)
			}
		})
	}
}

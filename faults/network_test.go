package faults_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/internal/redistest"
)

// TestNetworkFaults checks each network fault through the proxy StartProxy
// starts, against what a plain connection to the server reads.
func TestNetworkFaults(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	plain := redistest.Client(t, srv)
	fs := []faults.Fault{{Kind: faults.Reset}}
	if p, addr, _, err := faults.StartProxy(nil, srv.Addr(), nil); p != nil || addr != srv.Addr() || err != nil {
		t.Fatalf("StartProxy(no network fault) = %v, %q, %v; want no proxy and the server's address", p, addr, err)
	}
	p, addr, _, err := faults.StartProxy(fs, srv.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if addr == srv.Addr() {
		t.Fatalf("StartProxy: the clients dial the server itself, %s", addr)
	}
	// A GET slower than its read timeout is a partition's, even on a
	// loaded machine.
	rdb := redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, ReadTimeout: 2 * time.Second, PoolSize: 1,
		DisableIdentity: true, MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	key := redistest.Prefix(t) + "n"
	if err := rdb.Incr(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	target := faults.Subject{Proxy: p, Capabilities: private}

	// reply-loss with P 1: every INCR that reaches the server runs there,
	// none is answered (nor is a new connection's handshake).
	before := incrCalls(t, plain)
	stop := faults.Schedule(ctx, []faults.Fault{{Kind: faults.ReplyLoss, Arg: 30 * time.Second, P: 1}}, target)
	deadline := time.Now().Add(30 * time.Second)
	// The fault is due at once; until it acts, INCRs are answered. A raw
	// connection sends no handshake, whose reply would be lost too.
	var answered, unanswered int64
	for unanswered < 3 && time.Now().Before(deadline) {
		if rawIncr(t, addr, key) {
			answered++
		}
		unanswered = incrCalls(t, plain) - before - answered
	}
	events := stop() // the load ends: the fault ends with it
	if len(events) != 1 || events[0].LostReplies < unanswered || events[0].Error != "" ||
		!strings.Contains(events[0].Detail, "the load ended first") {
		t.Fatalf("reply-loss events = %+v; want one, with at least %d lost replies, ended by the load", events, unanswered)
	}
	if n, err := plain.Get(ctx, key).Int64(); err != nil || n != 1+answered+unanswered || unanswered < 3 {
		t.Fatalf("the server's counter = %d, %v; want %d (1, %d answered, >= 3 run but unanswered)", n, err, 1+answered+unanswered, answered)
	}
	if err := rdb.Incr(ctx, key).Err(); err != nil {
		t.Fatalf("INCR after the reply loss ended: %v", err)
	}

	// partition: a timeout, not a reset; the counter does not move.
	stop = faults.Schedule(ctx, []faults.Fault{{Kind: faults.Partition, Arg: 30 * time.Second}}, target)
	timedOut := false
	for !timedOut && time.Now().Before(deadline) {
		err := rdb.Get(ctx, key).Err()
		if err != nil && !isTimeout(err) {
			t.Fatalf("GET during a partition: %v; want a timeout", err)
		}
		timedOut = err != nil // nil: not cut yet
	}
	if !timedOut {
		t.Fatal("no GET timed out during a partition")
	}
	if events := stop(); len(events) != 1 || events[0].Error != "" || !strings.Contains(events[0].Detail, "every byte held") {
		t.Fatalf("partition events = %+v", events)
	}
	if err := rdb.Get(ctx, key).Err(); err != nil {
		t.Fatalf("GET after the partition healed: %v", err)
	}

	// reset: the open connection is reset, and counted.
	for p.Open() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the timed-out connection's close reaches the proxy
	}
	detail, err := faults.Inject(ctx, faults.Fault{Kind: faults.Reset}, target)
	if err != nil || detail != "reset 1 connections" || p.Stats().Resets != 1 {
		t.Fatalf("Inject(reset) = %q, %v (%d resets); want \"reset 1 connections\"", detail, err, p.Stats().Resets)
	}
}

// rawIncr sends INCR key on a new connection to addr and reports whether
// a reply came.
func rawIncr(t *testing.T, addr, key string) bool {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write([]byte("INCR " + key + "\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.HasPrefix(line, ":")
}

// incrCalls is how many INCR the server ran (INFO commandstats), read on
// a plain connection.
func incrCalls(t *testing.T, plain *redis.Client) int64 {
	t.Helper()
	info, err := plain.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(info, "cmdstat_incr:calls=")
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestPartitionEndDelivers checks that a partition the end of the load
// heals has passed every request it held on to the server once the
// faults have stopped (before the end-of-load comparison of exact counts
// reads the counters), requests whose clients gave up during the cut
// (their connections closed) included, and that the server runs them.
func TestPartitionEndDelivers(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	plain := redistest.Client(t, srv)
	fs := []faults.Fault{{Kind: faults.Partition, Arg: time.Minute}}
	p, addr, _, err := faults.StartProxy(fs, srv.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	key := redistest.Prefix(t) + "n"
	stop := faults.Schedule(context.Background(), fs, faults.Subject{Proxy: p, Capabilities: private})
	// Cut once a PING gets no reply (a short deadline: a timeout is what
	// is asserted).
	deadline := time.Now().Add(30 * time.Second)
	for cut := false; !cut; {
		if time.Now().After(deadline) {
			t.Fatal("the partition did not begin within 30s")
		}
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(200 * time.Millisecond))
		_, _ = conn.Write([]byte("PING\r\n"))
		_, err = bufio.NewReader(conn).ReadString('\n')
		cut = isTimeout(err)
		conn.Close()
	}
	const sent = 50
	for range sent {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write([]byte("INCR " + key + "\r\n")); err != nil {
			t.Fatal(err)
		}
		conn.Close() // the client gives up
	}
	for p.Held() < sent { // as a load's requests are, long before its end
		if time.Now().After(deadline) {
			t.Fatalf("the proxy holds %d requests; want %d within 30s", p.Held(), sent)
		}
		time.Sleep(time.Millisecond)
	}
	events := stop() // the load ends: the partition heals
	if len(events) != 1 || events[0].Error != "" {
		t.Fatalf("partition events = %+v; want one, with no error", events)
	}
	if held := p.Held(); held != 0 {
		t.Errorf("the proxy holds %d requests once the faults stopped; want every one passed on to the server", held)
	}
	// Passed on, the last bytes are written by toxiproxy's writer a moment
	// later: the count is polled, for a loaded machine.
	var n int64
	for n != sent && time.Now().Before(deadline) {
		n, _ = plain.Get(context.Background(), key).Int64()
	}
	if n != sent {
		t.Errorf("the counter after the heal = %d; want the %d INCRs held during the cut", n, sent)
	}
}

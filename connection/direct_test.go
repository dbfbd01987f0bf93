package connection_test

import (
	"net"
	"testing"
	"time"

	"github.com/rlbench/rlbench/connection"
)

// TestSentinelDirect checks that Sentinel.Direct sends a dial for the
// address the sentinels name to the node's own, and leaves every other
// address as it is: the split-brain fault's clients reach the node, not
// its relay.
func TestSentinelDirect(t *testing.T) {
	t.Parallel()
	srv := start(t, nil)
	// An address nothing listens on stands for the relay: a dial of it
	// would fail.
	relay := "127.0.0.1:1"
	s := connection.Sentinel{Direct: map[string]string{relay: srv.Addr()}}
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := s.Dial(t.Context(), d, relay, nil)
	if err != nil {
		t.Fatalf("Dial(%s) with Direct to %s = %v; want the node", relay, srv.Addr(), err)
	}
	if got := conn.RemoteAddr().String(); got != srv.Addr() {
		t.Errorf("Dial(%s) reached %s; want %s", relay, got, srv.Addr())
	}
	conn.Close()
	if _, err := s.Dial(t.Context(), d, "127.0.0.1:2", nil); err == nil {
		t.Errorf("Dial(an address Direct does not name) = nil error; want the dial of that address, which nothing serves")
	}
	dial := s.GoRedisDialer(0, nil)
	if dial == nil {
		t.Fatal("GoRedisDialer with Direct = nil; want a dialer")
	}
	if c, err := dial(t.Context(), "tcp", relay); err != nil {
		t.Errorf("GoRedisDialer()(%s) = %v; want the node", relay, err)
	} else {
		c.Close()
	}
	if (connection.Sentinel{}).GoRedisDialer(0, nil) != nil {
		t.Errorf("GoRedisDialer without Direct = a dialer; want nil, go-redis' own")
	}
}

// Package porttest gives tests loopback addresses that stay refused: a
// port held by a bound socket that never listens. It imports nothing of
// rlbench's, so that every package's tests can use it, internal ones too.
package porttest

import (
	"net"
	"testing"
)

// Refused returns a loopback address, "127.0.0.1:PORT", that refuses
// every connection for as long as tb runs: its port is held by a socket
// that is bound but never listens, and released in tb.Cleanup. A port that
// was merely closed could be taken by another process (a private server of
// a test running beside tb) before the dial that must fail.
func Refused(tb testing.TB) string {
	tb.Helper()
	addr, release, err := holdPort()
	if err != nil {
		tb.Fatalf("porttest: hold a loopback port: %v", err)
	}
	tb.Cleanup(release)
	// A bound socket that does not listen answers a SYN with a reset.
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		tb.Fatalf("porttest: dial %s = nil; want connection refused", addr)
	}
	return addr
}

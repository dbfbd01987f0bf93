// Package clienttest opens rlbench's client adapters (package clients) to
// a test's private server, for the tests of the packages above clients
// (strategies and their models), which redistest does not import.
package clienttest

import (
	"testing"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/redisserver"
)

// Connect returns a client of the named kind to srv for workers workers,
// with clients.New's other defaults, closed in tb.Cleanup; an error fails
// tb.
func Connect(tb testing.TB, srv *redisserver.Server, cname string, workers int) clients.Conn {
	tb.Helper()
	c, err := clients.New(cname, clients.Options{Addr: srv.Addr(), Workers: workers})
	if err != nil {
		tb.Fatalf("clients.New(%q) error: %v", cname, err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

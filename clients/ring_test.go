package clients_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
)

// TestRueidisRingFitsWorkers checks that rueidis' ring per connection has
// room for every worker's request in flight, and is the least that does,
// never less than rueidis' default of 2^10 nor more than 2^16: the
// client's options say so. The connections (pipeline_multiplex: 1, 2 or 4)
// depend on GOMAXPROCS, so the test reads them from the options and looks
// the expected scale up in a table of its own.
func TestRueidisRingFitsWorkers(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// workers -> the ring scale on 1, 2 and 4 connections.
	want := map[int]map[int]int{
		1:       {1: 10, 2: 10, 4: 10},
		500:     {1: 10, 2: 10, 4: 10},
		1024:    {1: 10, 2: 10, 4: 10},
		1025:    {1: 11, 2: 10, 4: 10},
		8000:    {1: 13, 2: 12, 4: 11},
		50_000:  {1: 16, 2: 15, 4: 14},
		1 << 22: {1: 16, 2: 16, 4: 16},
	}
	for workers, byConns := range want {
		for _, name := range []string{"rueidis", "valkey-go"} { // valkey-go's ring is rueidis'
			c, err := clients.New(name, clients.Options{Addr: srv.Addr(), Workers: workers})
			if err != nil {
				t.Fatalf("New(%s, %d workers): %v", name, workers, err)
			}
			opts := c.Options()
			c.Close()
			var multiplex, scale int
			for f := range strings.FieldsSeq(opts) {
				fmt.Sscanf(f, "pipeline_multiplex=%d", &multiplex)
				fmt.Sscanf(f, "ring_scale=%d", &scale)
			}
			if w := byConns[1<<multiplex]; scale != w {
				t.Errorf("%s with %d workers on %d connections: options %q; want ring_scale=%d", name, workers, 1<<multiplex, opts, w)
			}
		}
	}
}

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
// client's options say so. The connections (pipeline_multiplex) depend on
// GOMAXPROCS, so the test reads them from the options too.
func TestRueidisRingFitsWorkers(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, name := range []string{"rueidis", "valkey-go"} { // valkey-go's ring is rueidis'
		for _, workers := range []int{1, 500, 1024, 8000, 50_000, 1 << 22} {
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
			per := (workers + 1<<multiplex - 1) >> multiplex
			want := 10
			for want < 16 && 1<<want < per {
				want++
			}
			if scale != want {
				t.Errorf("%s with %d workers on %d connections: options %q; want ring_scale=%d (2^%d slots for %d in flight per connection)", name, workers, 1<<multiplex, opts, want, want, per)
			}
		}
	}
}

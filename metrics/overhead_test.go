package metrics_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench/metrics"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/workload"
)

// instant is a strategy that decides at once, without a server: under it,
// the time per decision is the loop's own (workload's BenchmarkOverhead).
type instant struct{}

func (instant) Name() string { return "instant" }

func (instant) Decide(context.Context, strategies.Client, string) (strategies.Decision, error) {
	return strategies.Decision{Allowed: true, Count: 2}, nil
}

// BenchmarkScrapeOverhead measures what live metrics cost per decision:
// workload.Run's closed loop (64 workers, a strategy that answers at once)
// with its recorder read by an Exporter that nobody scrapes
// (scrape=none), and gathered every 10ms (scrape=10ms, a hundred times
// Prometheus' usual pace). The difference of the two ns/op is the scrapes'
// cost to the decisions; allocs/op stays that of the loop.
func BenchmarkScrapeOverhead(b *testing.B) {
	for _, every := range []time.Duration{0, 10 * time.Millisecond} {
		name := "scrape=none"
		if every > 0 {
			name = "scrape=" + every.String()
		}
		b.Run(name, func(b *testing.B) {
			cfg := workload.Config{Workers: 64, Keys: 100_000, Requests: int64(b.N), Prefix: "rl:", Seed: 1}
			var rec results.Recorder
			exp := metrics.New()
			_, done := exp.Measuring("bench", "instant", "none", &rec, nil)
			defer done()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if every > 0 {
				wg.Go(func() {
					tick := time.NewTicker(every)
					defer tick.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
							if _, err := exp.Gatherer().Gather(); err != nil {
								b.Error(err)
							}
						}
					}
				})
			}
			b.ReportAllocs()
			b.ResetTimer()
			if _, err := workload.Run(b.Context(), cfg, instant{}, nil, &rec, nil); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
		})
	}
}

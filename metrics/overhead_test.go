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
// with no Exporter (metrics=off), with its recorder given to one that
// nobody scrapes (metrics=on: the in-flight count's atomic add per
// decision), and gathered every 10ms as well (scrape=10ms, a hundred times
// Prometheus' usual pace). The differences of the ns/op are the metrics'
// cost to a decision; allocs/op stays that of the loop.
//
//	go test -run '^$' -bench BenchmarkScrapeOverhead -benchtime 2000000x -count 10 ./metrics/
func BenchmarkScrapeOverhead(b *testing.B) {
	for _, tc := range []struct {
		name  string
		on    bool
		every time.Duration
	}{
		{name: "metrics=off"},
		{name: "metrics=on", on: true},
		{name: "metrics=on,scrape=10ms", on: true, every: 10 * time.Millisecond},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := workload.Config{Workers: 64, Keys: 100_000, Requests: int64(b.N), Prefix: "rl:", Seed: 1}
			var rec results.Recorder
			exp := metrics.New()
			if tc.on {
				p := exp.Probe("bench", "instant", "none", &rec, nil)
				p.Start(b.Context())
				defer p.Stop(b.Context(), time.Now())
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if tc.every > 0 {
				wg.Go(func() {
					tick := time.NewTicker(tc.every)
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

package failover

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlbench/rlbench/admission"
	"github.com/rlbench/rlbench/probe"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/workload"
)

// instantCounter decides at once, without a server, as an increment-first
// counter would: its decisions are a key's second increment.
type instantCounter struct{}

func (instantCounter) Name() string { return "lua" }

func (instantCounter) Decide(context.Context, strategies.Client, string) (strategies.Decision, error) {
	return strategies.Decision{Allowed: true, Count: 2}, nil
}

// BenchmarkWatchOverhead measures what the watch of the exact counts adds
// to each decision of an increment-first counter strategy on the hot path
// (Watch.Observe: the recovery clock and the per-key count), over a
// strategy that answers at once: watch=off calls it, watch=on shows each
// of its decisions to the watch too, by 64 goroutines on 100,000 keys of which the watch
// follows admission.MaxTrackedKeys. The difference of the two ns/op is the
// watch's cost per decision.
func BenchmarkWatchOverhead(b *testing.B) {
	const keys = 100_000
	names := workload.KeyNames("rl:", keys)
	for _, watched := range []bool{false, true} {
		name := "watch=off"
		var s strategies.Strategy = instantCounter{}
		var obs probe.Observer
		if watched {
			name = "watch=on"
			obs = &Watch{prefix: "rl:", limit: 1 << 40, window: time.Minute, counts: true,
				keys: make([]watchedKey, admission.MaxTrackedKeys)}
		}
		b.Run(name, func(b *testing.B) {
			var seed atomic.Uint64
			ctx := context.Background()
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				r := rand.New(rand.NewPCG(seed.Add(1), 1))
				for pb.Next() {
					k := r.IntN(keys)
					d, err := s.Decide(ctx, nil, names[k])
					if err != nil {
						b.Error(err)
					}
					if obs != nil {
						obs.Observe(probe.Decision{Key: k, Name: names[k], Allowed: d.Allowed, Count: d.Count, Cut: ctx.Err() != nil})
					}
				}
			})
		})
	}
}

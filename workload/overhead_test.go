package workload

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rlbench/rlbench/admission"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

// instant is a strategy that decides at once, without a server: under it,
// a loop's time per decision is the loop's own.
type instant struct{ n atomic.Int64 }

func (*instant) Name() string { return "instant" }

func (s *instant) Decide(context.Context, strategies.Client, string) (strategies.Decision, error) {
	return strategies.Decision{Allowed: true, Count: 2}, nil
}

// BenchmarkOverhead measures what rlbench's closed loop costs per decision
// beyond the decision itself, over a strategy that answers at once:
// loop=rlbench is Run with a Recorder and an admission Tracker as its
// observer (key choice and naming, two clock reads, recording, admission
// tracking); loop=bare is
// the bare loop of cmd/bareloop (key choice and naming, a count). The
// difference of the two ns/op is rlbench's own cost per decision, which
// scripts/bench-peers.sh sets against a real decision's. Each operation is
// one decision, by 64 workers.
func BenchmarkOverhead(b *testing.B) {
	const workers, keys = 64, 100_000
	lua, _ := strategies.Lookup("lua")
	b.Run("loop=rlbench", func(b *testing.B) {
		cfg := Config{Workers: workers, Keys: keys, Requests: int64(b.N), Prefix: "rl:", Seed: 1}
		var rec results.Recorder
		tracker := admission.NewProbe(lua, keys, 1<<40, 60, nil)
		b.ReportAllocs()
		b.ResetTimer()
		if _, err := Run(b.Context(), cfg, &instant{}, nil, &rec, tracker); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if got := rec.Totals().Decisions; got != int64(b.N) {
			b.Fatalf("recorded %d decisions; want %d", got, b.N)
		}
	})
	b.Run("loop=bare", func(b *testing.B) {
		table := KeyTable("rl:", keys)
		var next atomic.Int64
		var wg sync.WaitGroup
		s := &instant{}
		b.ReportAllocs()
		b.ResetTimer()
		for w := range workers {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(1, uint64(w)))
				names := NewKeyNamer("rl:", table)
				var n int64
				for next.Add(1) <= int64(b.N) {
					if _, err := s.Decide(b.Context(), nil, names.Name(r.IntN(keys))); err == nil {
						n++
					}
				}
				s.n.Add(n)
			})
		}
		wg.Wait()
		b.StopTimer()
		if got := s.n.Load(); got != int64(b.N) {
			b.Fatalf("made %d decisions; want %d", got, b.N)
		}
	})
}

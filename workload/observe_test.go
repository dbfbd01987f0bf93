package workload

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench/probe"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

// collector is an Observer that keeps every decision it is shown.
type collector struct {
	mu sync.Mutex
	ds []probe.Decision
}

func (c *collector) Observe(d probe.Decision) {
	c.mu.Lock()
	c.ds = append(c.ds, d)
	c.mu.Unlock()
}

// counting decides at once, without a server, under the name of a
// registered strategy (whose Info says whether it is atomic): each answer
// is the decision's count on its worker, every other one allowed.
type counting struct {
	name string
	mu   sync.Mutex
	n    int64
}

func (s *counting) Name() string { return s.name }

func (s *counting) Decide(context.Context, strategies.Client, string) (strategies.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return strategies.Decision{Allowed: s.n%2 == 0, Count: s.n}, nil
}

// blocking decides nothing: it waits for its context to end.
type blocking struct{}

func (blocking) Name() string { return "lua" }

func (blocking) Decide(ctx context.Context, _ strategies.Client, _ string) (strategies.Decision, error) {
	<-ctx.Done()
	return strategies.Decision{}, ctx.Err()
}

// TestRunShowsEachDecision checks that Run shows its observer every
// decision, once, as the strategy answered it, with its key's number and
// name and when it returned, and that --crash-rate's and an interrupt's
// decisions say so.
func TestRunShowsEachDecision(t *testing.T) {
	t.Parallel()
	t.Run("plain", func(t *testing.T) {
		t.Parallel()
		var obs collector
		var rec results.Recorder
		s := &counting{name: "lua"}
		cfg := Config{Workers: 4, Keys: 20_000, Requests: 1000, Prefix: "p:"}
		res, err := Run(context.Background(), cfg, s, nil, &rec, &obs)
		if err != nil {
			t.Fatalf("Run error: %v", err)
		}
		if len(obs.ds) != 1000 || rec.Totals().Decisions != 1000 {
			t.Fatalf("Run with Requests 1000: %d observed, %d recorded; want 1000 each", len(obs.ds), rec.Totals().Decisions)
		}
		var allowed int64
		counts := make(map[int64]bool)
		for _, d := range obs.ds {
			if d.Name != KeyName("p:", d.Key) || d.Err != nil || d.Cut || d.Crashed || d.At <= 0 || d.At > res.Elapsed {
				t.Fatalf("observed %+v; want key %d named %q, no error, not cut or crashed, at (0, %s]", d, d.Key, KeyName("p:", d.Key), res.Elapsed)
			}
			if d.Allowed {
				allowed++
			}
			counts[d.Count] = true
		}
		if allowed != rec.Totals().Allowed || len(counts) != 1000 {
			t.Errorf("observed %d allowed, %d distinct counts; want the recorder's %d allowed and 1000 counts", allowed, len(counts), rec.Totals().Allowed)
		}
	})
	t.Run("crashed", func(t *testing.T) {
		t.Parallel()
		var obs collector
		var rec results.Recorder
		cfg := Config{Workers: 2, Keys: 10, Requests: 200, Prefix: "p:", CrashRate: 1}
		if _, err := Run(context.Background(), cfg, &counting{name: "lua"}, nil, &rec, &obs); err != nil {
			t.Fatalf("Run error: %v", err)
		}
		for _, d := range obs.ds {
			if !d.Crashed {
				t.Fatalf("observed %+v under --crash-rate 1 (an atomic strategy); want Crashed", d)
			}
		}
		if crashed := rec.ErrorKinds()[results.KindCrashed]; len(obs.ds) != 200 || crashed != 200 {
			t.Errorf("observed %d, recorded %d crashed; want 200 each", len(obs.ds), crashed)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		t.Parallel()
		var obs collector
		var rec results.Recorder
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		cfg := Config{Workers: 3, Keys: 10, Duration: time.Minute, Prefix: "p:"}
		if _, err := Run(ctx, cfg, blocking{}, nil, &rec, &obs); err == nil {
			t.Fatalf("Run under a context that ends = nil error; want it")
		}
		if len(obs.ds) != 3 || rec.Totals().Decisions != 0 {
			t.Fatalf("observed %d, recorded %d; want each of the 3 workers' decision observed, none recorded", len(obs.ds), rec.Totals().Decisions)
		}
		for _, d := range obs.ds {
			if !d.Cut || d.Err == nil {
				t.Errorf("observed %+v; want Cut, with the context's error", d)
			}
		}
	})
}

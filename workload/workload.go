// Package workload drives a strategy with concurrent workers in a closed
// loop: each worker sends one decision, waits for it, records it and sends
// the next, until the run's duration passes or its request budget is spent.
package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/admission"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

// Defaults, also the command line's.
const (
	// DefaultClients is the number of concurrent workers.
	DefaultClients = 50
	// DefaultKeys is the number of distinct counters.
	DefaultKeys = 100
	// DefaultDuration is how long a run lasts when neither it nor a request
	// budget is given.
	DefaultDuration = 10 * time.Second
	// DefaultKeyDist is the key distribution.
	DefaultKeyDist = "uniform"
)

// KeyDists lists the accepted key distributions:
//   - uniform: every key equally likely;
//   - zipf: key i with probability proportional to 1/(1+i)^1.1 (a few
//     heavy users, a long tail);
//   - hot: half of all decisions go to the first key, the rest uniform.
var KeyDists = []string{"uniform", "zipf", "hot"}

// Sentinel errors returned by Config.Validate.
var (
	ErrInvalidClients  = errors.New("clients must be >= 1")
	ErrInvalidKeys     = errors.New("keys must be >= 1")
	ErrInvalidKeyDist  = errors.New("unknown key distribution")
	ErrInvalidDuration = errors.New("duration must be >= 0")
	ErrInvalidRequests = errors.New("requests must be >= 0")
	ErrNoEnd           = errors.New("a run needs a duration or a request budget")
	ErrEmptyPrefix     = errors.New("prefix must not be empty")
	ErrInvalidCrash    = errors.New("crash rate must be a probability from 0 to 1")
	ErrInvalidPause    = errors.New("race pause must be >= 0")
)

// Config describes a workload. Its zero value, with a Prefix, means the defaults.
type Config struct {
	// Clients is the number of concurrent workers; 0 means DefaultClients.
	Clients int `json:"clients"`
	// Duration bounds the run's wall time; 0 means no bound when Requests
	// is set, DefaultDuration otherwise.
	Duration time.Duration `json:"duration_ns"`
	// Requests bounds the number of decisions in total; 0 means no bound.
	Requests int64 `json:"requests"`
	// Keys is the number of distinct counters; 0 means DefaultKeys.
	Keys int `json:"keys"`
	// KeyDist is one of KeyDists; "" means DefaultKeyDist.
	KeyDist string `json:"key_dist"`
	// Prefix starts every key the run touches. Required.
	Prefix string `json:"prefix"`
	// Seed seeds the key choice; runs with the same seed pick the same keys
	// in each worker.
	Seed uint64 `json:"seed"`
	// CrashRate is the probability, from 0 to 1, that a worker dies in the
	// middle of a decision. For a non-atomic strategy it dies between its
	// commands (strategies.Gap), leaving the first one applied and the
	// second never sent; for an atomic one the request is sent and the
	// reply abandoned (the server applied all of it or none). The decision
	// counts as an error of kind "crashed" and the worker carries on as a
	// new client.
	CrashRate float64 `json:"crash_rate"`
	// RacePause is a pause between the read and the write steps of a
	// non-atomic strategy, to widen its race on demand; 0 means none.
	RacePause time.Duration `json:"race_pause_ns"`
}

// WithDefaults returns c with zero fields replaced by the defaults.
func (c Config) WithDefaults() Config {
	if c.Clients == 0 {
		c.Clients = DefaultClients
	}
	if c.Keys == 0 {
		c.Keys = DefaultKeys
	}
	if c.KeyDist == "" {
		c.KeyDist = DefaultKeyDist
	}
	if c.Duration == 0 && c.Requests == 0 {
		c.Duration = DefaultDuration
	}
	return c
}

// Validate checks a config with defaults applied.
func (c Config) Validate() error {
	switch {
	case c.Clients < 1:
		return fmt.Errorf("%w, got %d", ErrInvalidClients, c.Clients)
	case c.Keys < 1:
		return fmt.Errorf("%w, got %d", ErrInvalidKeys, c.Keys)
	case c.Duration < 0:
		return fmt.Errorf("%w, got %s", ErrInvalidDuration, c.Duration)
	case c.Requests < 0:
		return fmt.Errorf("%w, got %d", ErrInvalidRequests, c.Requests)
	case c.Duration == 0 && c.Requests == 0:
		return ErrNoEnd
	case c.Prefix == "":
		return ErrEmptyPrefix
	case !(c.CrashRate >= 0 && c.CrashRate <= 1):
		return fmt.Errorf("%w, got %g", ErrInvalidCrash, c.CrashRate)
	case c.RacePause < 0:
		return fmt.Errorf("%w, got %s", ErrInvalidPause, c.RacePause)
	}
	for _, d := range KeyDists {
		if c.KeyDist == d {
			return nil
		}
	}
	return fmt.Errorf("%w %q (accepted: uniform, zipf, hot)", ErrInvalidKeyDist, c.KeyDist)
}

// KeyNames returns the n counter names of a run under prefix. Each carries
// a {hash-tag} so that everything one decision touches shares a cluster slot.
func KeyNames(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = prefix + "{" + strconv.Itoa(i) + "}"
	}
	return keys
}

// picker chooses the index of the next key for one worker.
type picker func() int

func newPicker(dist string, n int, seed uint64, worker int) picker {
	r := rand.New(rand.NewPCG(seed, uint64(worker)))
	switch dist {
	case "zipf":
		z := rand.NewZipf(r, 1.1, 1, uint64(n-1))
		return func() int { return int(z.Uint64()) }
	case "hot":
		return func() int {
			if r.IntN(2) == 0 {
				return 0
			}
			return r.IntN(n)
		}
	default:
		return func() int { return r.IntN(n) }
	}
}

// faultContext returns the context one worker decides with, carrying a
// strategies.Gap when the config asks for a race pause or crashes, and a
// function that says whether an atomic strategy's worker dies on this
// request. Both use the worker's own random source: they run only on the
// worker's goroutine.
func faultContext(ctx context.Context, cfg Config, atomic bool, seed uint64, worker int) (context.Context, func() bool) {
	never := func() bool { return false }
	if cfg.CrashRate == 0 && cfg.RacePause == 0 {
		return ctx, never
	}
	r := rand.New(rand.NewPCG(seed^0x9e3779b97f4a7c15, uint64(worker)))
	crash := func() bool { return cfg.CrashRate > 0 && r.Float64() < cfg.CrashRate }
	if atomic {
		return ctx, crash
	}
	gap := func(ctx context.Context, strategy, step string) error {
		if cfg.RacePause > 0 {
			t := time.NewTimer(cfg.RacePause)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		if crash() {
			return strategies.ErrCrashed
		}
		return nil
	}
	return strategies.WithGap(ctx, gap), never
}

// Run drives s through c with cfg.Clients workers in a closed loop and
// records each decision in rec, and each successful one in adm when adm is
// not nil, until cfg.Duration passes, cfg.Requests
// decisions have been made, or ctx ends. Decisions in flight at the end of
// the duration complete and are recorded. It returns the wall time from the
// first worker's start to the last worker's return.
func Run(ctx context.Context, cfg Config, s strategies.Strategy, c strategies.Client, rec *results.Recorder, adm *admission.Tracker) (time.Duration, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	keys := KeyNames(cfg.Prefix, cfg.Keys)

	var stop atomic.Bool
	budget := atomic.Int64{}
	budget.Store(cfg.Requests)
	limited := cfg.Requests > 0

	stopCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cfg.Duration > 0 {
		t := time.AfterFunc(cfg.Duration, cancel)
		defer t.Stop()
	}
	go func() { <-stopCtx.Done(); stop.Store(true) }()

	info, _ := strategies.Lookup(s.Name())
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < cfg.Clients; w++ {
		pick := newPicker(cfg.KeyDist, len(keys), cfg.Seed, w)
		wctx, crashNow := faultContext(ctx, cfg, info.Atomic, cfg.Seed, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if limited && budget.Add(-1) < 0 {
					return
				}
				k := pick()
				t0 := time.Now()
				d, err := s.Decide(wctx, c, keys[k])
				t1 := time.Now()
				if err != nil && ctx.Err() != nil {
					return // interrupted: not a server fault
				}
				if err == nil && crashNow() {
					err = strategies.ErrCrashed // the reply arrives at a dead client
				}
				rec.Record(w, t1.Sub(t0), d.Allowed, err)
				if adm != nil && err == nil {
					adm.Observe(k, d, t1.Sub(start))
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), ctx.Err()
}

// Package workload drives a strategy with concurrent workers, until the
// run's duration passes or its request budget is spent, in one of two ways.
//
// In a closed loop (the default) each worker sends one decision, waits for
// it, records it and sends the next: the load adapts to the server, and a
// server that stalls is simply sent less, so its stall barely shows in the
// latencies (coordinated omission).
//
// In an open loop (Config.Rate > 0) requests follow a fixed schedule, one
// every 1/Rate seconds, whether or not earlier ones have returned. Latency is
// measured from each request's intended start time on the schedule, so a
// stall shows in the tail, and also, uncorrected, from the moment it was
// sent; see Config.Rate and Result.
package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/probe"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

// MinRate and MaxRate bound an open loop's rate, in decisions per second:
// one decision per 100 s at least (a slower schedule measures nothing in a
// run's time), 10^8 at most (beyond any server, and any timer).
const (
	MinRate = 0.01
	MaxRate = 1e8
)

// Defaults, also the command line's.
const (
	// DefaultWorkers is the number of concurrent workers.
	DefaultWorkers = 50
	// MaxWorkers bounds the workers of a closed loop (--workers, and a
	// closed loop's --stages targets): each worker holds a connection, and
	// one machine opens far fewer than this to a server.
	MaxWorkers = 1_000_000
	// DefaultKeys is the number of distinct counters.
	DefaultKeys = 100
	// DefaultDuration is how long a run lasts when neither it nor a request
	// budget is given.
	DefaultDuration = 10 * time.Second
	// DefaultKeyDist is the key distribution.
	DefaultKeyDist = "uniform"
	// MaxKeys is the largest Keys accepted: a billion counters, far more
	// than one server holds (each costs it some 70 bytes or more).
	// rlbench's own memory does not grow with Keys beyond KeyTableMax (see
	// there and package admission).
	MaxKeys = 1_000_000_000
	// KeyTableMax is the most key names a run builds once, up front: keys 0
	// to KeyTableMax-1 come from that table; the name of a key beyond it is
	// built for each decision that picks it (one allocation of its length),
	// so that memory stays bounded whatever Keys is.
	KeyTableMax = 10_000
)

// KeyDists lists the accepted key distributions:
//   - uniform: every key equally likely;
//   - zipf: key i with probability proportional to 1/(1+i)^1.1 (a few
//     heavy users, a long tail);
//   - hot: half of all decisions go to the first key, the rest uniform.
var KeyDists = []string{"uniform", "zipf", "hot"}

// Sentinel errors returned by Config.Validate.
var (
	ErrInvalidWorkers = errors.New("clients must be from 1 to 1000000")
	ErrInvalidKeys    = errors.New("keys must be >= 1")
	// ErrTooManyKeys wraps ErrInvalidKeys: errors.Is finds both.
	ErrTooManyKeys     = fmt.Errorf("%w and <= %d", ErrInvalidKeys, MaxKeys)
	ErrInvalidKeyDist  = errors.New("unknown key distribution")
	ErrInvalidDuration = errors.New("duration must be >= 0")
	ErrInvalidRequests = errors.New("requests must be >= 0")
	ErrNoEnd           = errors.New("a run needs a duration or a request budget")
	ErrEmptyPrefix     = errors.New("prefix must not be empty")
	ErrInvalidCrash    = errors.New("crash rate must be a probability from 0 to 1")
	ErrInvalidPause    = errors.New("race pause must be >= 0")
	ErrInvalidRate     = errors.New("rate must be 0 (closed loop) or decisions per second from 0.01 to 100000000")
)

// Config describes a workload. Its zero value, with a Prefix, means the defaults.
type Config struct {
	// Workers is the number of concurrent workers (--workers, or --clients
	// as redis-benchmark names them; "clients" in the JSON); 0 means
	// DefaultWorkers.
	// In an open loop it is the most requests in flight at once: a rate R
	// at a latency L needs at least R x L workers (10,000/s at 1 ms needs 10
	// or more), or the schedule falls behind.
	Workers int `json:"clients"`
	// Duration bounds the run's wall time; 0 means no bound when Requests
	// is set, DefaultDuration otherwise.
	Duration time.Duration `json:"duration_ns"`
	// Requests bounds the number of decisions in total; 0 means no bound.
	Requests int64 `json:"requests"`
	// Keys is the number of distinct counters, at most MaxKeys; 0 means
	// DefaultKeys.
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
	// second never sent; for an atomic one its context ends at a random
	// moment within its last latency, which drops the connection mid-request
	// (see crasher). The decision counts as an error of kind "crashed" and
	// the worker carries on as a new client.
	CrashRate float64 `json:"crash_rate"`
	// RacePause is a pause between the read and the write steps of a
	// non-atomic strategy, to widen its race on demand; 0 means none.
	RacePause time.Duration `json:"race_pause_ns"`
	// Rate is the open loop's target, in decisions per second in total,
	// spread over the workers; 0 means a closed loop. Request i is due at
	// i/Rate seconds from the start, whether or not earlier ones have
	// returned: the next free worker takes it, waits for its time if early
	// and sends it at once if late. When every worker is busy, due requests
	// wait for one and start behind schedule (see Result.Lag). A request
	// due at or after Duration is not sent; with only Requests set, all of
	// them are, however late. One due before the end that no worker sent
	// by then is in the corrected latency at its lower bound, the end minus
	// its due time (Result.Unsent).
	//
	// A worker waits for its slot on a Go timer (it sleeps; it does not
	// spin). Go's timers fire when the runtime next checks them, which on
	// Linux, in a process with little else to do, is up to about 1.1 ms late
	// (0.5 ms at the median); a busier process checks them more often. A
	// request sent late for that reason counts the lateness in its corrected
	// latency, as for any request sent behind schedule, and not in its
	// uncorrected one: at a rate the workers keep up with, the two medians
	// differ by about that much. Gaps between requests shorter than the
	// resolution are kept on average, not one by one.
	Rate float64 `json:"rate_per_s"`
	// Stages shape the load (see Stage): a closed loop ramps its active
	// workers from 0, an open one its rate from Rate. With stages, Duration
	// is their sum and a closed loop's Workers their highest target (0
	// means those); nil means a flat load.
	Stages []Stage `json:"stages,omitempty"`
}

// WithDefaults returns c with zero fields replaced by the defaults.
func (c Config) WithDefaults() Config {
	c = c.stagesDefaults()
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
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
	case c.Rate == 0 && StagesWorkers(c.Stages) > MaxWorkers:
		return fmt.Errorf("%w; got %s, a closed loop of %d workers", ErrInvalidStages, StagesText(c.Stages), StagesWorkers(c.Stages))
	case c.Workers < 1 || c.Workers > MaxWorkers:
		return fmt.Errorf("%w, got %d", ErrInvalidWorkers, c.Workers)
	case c.Keys < 1:
		return fmt.Errorf("%w, got %d", ErrInvalidKeys, c.Keys)
	case c.Keys > MaxKeys:
		return fmt.Errorf("%w, got %d", ErrTooManyKeys, c.Keys)
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
	case !(c.Rate == 0 || c.Rate >= MinRate && c.Rate <= MaxRate):
		return fmt.Errorf("%w, got %g", ErrInvalidRate, c.Rate)
	}
	for _, d := range KeyDists {
		if c.KeyDist == d {
			return c.validateShape()
		}
	}
	return fmt.Errorf("%w %q (accepted: %s)", ErrInvalidKeyDist, c.KeyDist, strings.Join(KeyDists, ", "))
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
// strategies.Gap when the config asks for a race pause or crashes between
// the commands of a non-atomic strategy, and, for an atomic strategy with
// a crash rate, the crasher that kills the worker mid-request. Both use the
// worker's own random source: they run only on the worker's goroutine.
func faultContext(ctx context.Context, cfg Config, atomic bool, seed uint64, worker int) (context.Context, *crasher) {
	if cfg.CrashRate == 0 && cfg.RacePause == 0 {
		return ctx, nil
	}
	r := rand.New(rand.NewPCG(seed^0x9e3779b97f4a7c15, uint64(worker)))
	if atomic {
		if cfg.CrashRate == 0 {
			return ctx, nil
		}
		return ctx, &crasher{rate: cfg.CrashRate, r: r, last: 100 * time.Microsecond}
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
		if cfg.CrashRate > 0 && r.Float64() < cfg.CrashRate {
			return strategies.ErrCrashed
		}
		return nil
	}
	return strategies.WithGap(ctx, gap), nil
}

// crasher kills an atomic strategy's worker in the middle of a request: at
// a random moment within the worker's last latency, its context ends. A
// client whose context ends mid-read drops the connection (go-redis closes
// it; rueidis, whose few connections all workers share, abandons the
// reply). The server has then run the whole atomic unit or none of it.
type crasher struct {
	rate float64
	r    *rand.Rand
	last time.Duration // the worker's last latency
}

// cut says whether the next request dies, and after how long.
func (c *crasher) cut() (time.Duration, bool) {
	if c == nil || c.r.Float64() >= c.rate {
		return 0, false
	}
	return time.Duration(c.r.Int64N(int64(c.last) + 1)), true
}

// observe records the latency of a request that completed.
func (c *crasher) observe(latency time.Duration) {
	if c != nil {
		c.last = max(latency, time.Microsecond)
	}
}

// Run drives s through c with cfg.Workers workers, in a closed loop or, when
// cfg.Rate is set, an open one, and records each decision in rec (with
// Recorder.RecordOpen in an open loop), until cfg.Duration passes,
// cfg.Requests decisions have been made, or ctx ends. It shows each
// decision to obs, when obs is not nil, as the strategy returned it
// (probe.Decision), before recording it: a probe.List is the cell's
// probes. Decisions in flight at the end of the duration complete and are
// recorded. The Result gives the wall time from the first worker's start to
// the last worker's return and, in an open loop, how closely the schedule
// was kept.
func Run(ctx context.Context, cfg Config, s strategies.Strategy, c strategies.Client, rec *results.Recorder, obs probe.Observer) (Result, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	r := &runner{
		ctx: ctx, cfg: cfg, strategy: s, client: c, rec: rec, obs: obs,
		keys:    KeyTable(cfg.Prefix, cfg.Keys),
		limited: cfg.Requests > 0,
	}
	if cfg.Rate > 0 {
		r.interval = 1e9 / cfg.Rate
		r.stats = make([]workerStats, cfg.Workers)
	}
	r.shape = newShape(cfg)

	var cancel context.CancelFunc
	r.stopCtx, cancel = context.WithCancel(ctx)
	defer cancel()
	if cfg.Duration > 0 {
		t := time.AfterFunc(cfg.Duration, cancel)
		defer t.Stop()
	}

	info, _ := strategies.InfoOf(s)
	var wg sync.WaitGroup
	r.start = time.Now()
	go func() {
		<-r.stopCtx.Done()
		r.stoppedAt.Store(int64(time.Since(r.start)))
		r.stop.Store(true)
	}()
	for w := 0; w < cfg.Workers; w++ {
		pick := newPicker(cfg.KeyDist, cfg.Keys, cfg.Seed, w)
		wctx, cr := faultContext(ctx, cfg, info.Atomic, cfg.Seed, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cfg.Rate > 0 {
				r.openLoop(w, wctx, pick, cr)
			} else {
				r.closedLoop(w, wctx, pick, cr)
			}
		}()
	}
	stopStages := r.sampleStages()
	wg.Wait()
	res := r.result(time.Since(r.start))
	res.Stages = stopStages(res.Elapsed)
	return res, ctx.Err()
}

// runner is the state a Run's workers share.
type runner struct {
	ctx      context.Context
	cfg      Config
	strategy strategies.Strategy
	client   strategies.Client
	rec      *results.Recorder
	obs      probe.Observer
	// keys is the table of the first KeyTableMax key names.
	keys []string
	// limited is true when cfg.Requests bounds the run.
	limited bool
	// start is when the load started: the schedule's time zero.
	start time.Time
	// stopCtx ends when the duration passes or ctx ends; stop mirrors it
	// for a cheap check on the hot path, and stoppedAt says when, in
	// nanoseconds from start.
	stopCtx   context.Context
	stop      atomic.Bool
	stoppedAt atomic.Int64
	// interval is the open loop's time between slots, in nanoseconds.
	interval float64
	// shape is the load's stages; nil for a flat load.
	shape *shape
	// next counts the decisions claimed so far: the open loop's next slot
	// on the schedule, and the closed loop's place in a request budget. It
	// is written on every decision, so it sits on a cache line of its own,
	// away from the fields every worker only reads.
	_    [64]byte
	next atomic.Int64
	_    [56]byte
	// stats holds each open-loop worker's own figures, written only by that
	// worker and read once they have all returned.
	stats []workerStats
}

// errInterrupted says that ctx ended a decision: not a server fault, so the
// worker stops without recording it.
var errInterrupted = errors.New("interrupted")

// namer returns a worker's KeyNamer.
func (r *runner) namer() KeyNamer {
	return NewKeyNamer(r.cfg.Prefix, r.keys)
}

// now is the time since the load started: one monotonic clock read, where
// time.Now reads the wall clock too.
func (r *runner) now() time.Duration { return time.Since(r.start) }

// decide makes one decision on key (key number k) for a worker, shows it
// to r.obs, and returns when it completed, as r.now. Its error is
// errInterrupted when ctx ended it, and strategies.ErrCrashed when the
// crasher killed the worker mid-request. t0 is when the worker sent it,
// read by the caller: one clock read less. The crasher's path is a function
// of its own, so that its locals do not deepen every worker's stack.
func (r *runner) decide(wctx context.Context, cr *crasher, k int, key string, t0 time.Duration) (strategies.Decision, time.Duration, error) {
	if cr != nil {
		return r.decideCrashing(wctx, cr, k, key, t0)
	}
	d, err := r.strategy.Decide(wctx, r.client, key)
	done := r.now()
	if r.obs != nil {
		r.observe(wctx, k, key, d, t0, done, err, false)
	}
	if err != nil && r.ctx.Err() != nil {
		return d, done, errInterrupted
	}
	return d, done, err
}

// decideCrashing is decide for a worker with a crasher: the decision
// itself is decide's, under a context the crasher may cut.
//
//go:noinline
func (r *runner) decideCrashing(wctx context.Context, cr *crasher, k int, key string, t0 time.Duration) (strategies.Decision, time.Duration, error) {
	dctx := wctx
	cut, crash := cr.cut()
	if crash {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(wctx, cut)
		defer cancel()
	}
	d, err := r.strategy.Decide(dctx, r.client, key)
	done := r.now()
	if r.obs != nil {
		r.observe(dctx, k, key, d, t0, done, err, crash)
	}
	if err != nil && r.ctx.Err() != nil {
		return d, done, errInterrupted
	}
	if crash {
		return strategies.Decision{}, done, strategies.ErrCrashed
	}
	cr.observe(done - t0)
	return d, done, err
}

// observe shows r.obs one decision as the strategy returned it under dctx
// (probe.Decision).
func (r *runner) observe(dctx context.Context, k int, key string, d strategies.Decision, sent, done time.Duration, err error, crashed bool) {
	r.obs.Observe(probe.Decision{
		Key: k, Name: key, Allowed: d.Allowed, Count: d.Count, Err: err, At: done, Sent: sent,
		Cut: dctx.Err() != nil, Crashed: crashed,
	})
}

// closedLoop is one closed-loop worker: send, wait for the reply, record,
// repeat.
func (r *runner) closedLoop(w int, wctx context.Context, pick picker, cr *crasher) {
	names := r.namer()
	for !r.stop.Load() {
		if r.shape != nil && !r.awaitTurn(w) {
			return
		}
		if r.limited && r.next.Add(1) > r.cfg.Requests {
			return
		}
		k := pick()
		key := names.Name(k)
		t0 := r.now()
		r.rec.Begin(w)
		d, t1, err := r.decide(wctx, cr, k, key, t0)
		if err == errInterrupted {
			r.rec.Abandon(w)
			return
		}
		r.rec.Record(w, t1-t0, d.Allowed, err)
	}
}

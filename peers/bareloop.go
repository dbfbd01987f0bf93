package peers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/audit"
	rlclients "github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/saturation"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/workload"
)

// BareConfig configures BareLoop. Every field must be set, but Connections.
type BareConfig struct {
	// Addr is the server's host:port.
	Addr string
	// Client is the client library, one of clients.Names.
	Client string
	// Workers is the number of goroutines, each in a closed loop.
	Workers int
	// Keys is the key space; key i is workload.KeyName(Prefix, i), named
	// by a workload.KeyNamer as rlbench's workers name them.
	Keys int
	// Prefix starts every key; BareLoop deletes them at the end.
	Prefix string
	// Warmup is how long the loop runs, uncounted, before Duration, on
	// keys of its own (keyspace.Warmup(Prefix)), deleted before the counted loop.
	Warmup time.Duration
	// Duration is how long the counted loop runs.
	Duration time.Duration
	// Limit and Window are the lua strategy's (Window in whole seconds).
	Limit, Window int64
	// Connections is the connection shape (clients.Options.Connections);
	// 0 means the client's default.
	Connections int
}

// BareResult is what BareLoop counted.
type BareResult struct {
	// Decisions is the number of decisions completed in the counted loop,
	// Errors those of them that failed.
	Decisions int64 `json:"decisions"`
	Errors    int64 `json:"errors"`
	// ElapsedS is the counted loop's wall time, in seconds: from the
	// workers' start to the last one's return.
	ElapsedS float64 `json:"elapsed_s"`
	// PerS is Decisions / ElapsedS.
	PerS float64 `json:"per_s"`
	// CPUS is the process's CPU time (user + system) over the counted
	// loop, in seconds.
	CPUS float64 `json:"cpu_s"`
	// ClientOptions is the client's own account of its options.
	ClientOptions string `json:"client_options"`
}

// BareLoop is rlbench's closed loop with nothing of rlbench's own: the same
// client with the same pool and options (clients.New, sized for the
// workers, with workload.DefaultFlushDelay), the same lua strategy and
// script, a uniform key choice named as rlbench's workers name keys
// (workload.KeyNamer), and a count per worker. No clock read, histogram,
// admission tracking, progress line or self-check. Set GOMAXPROCS as
// rlbench's to compare the two.
func BareLoop(ctx context.Context, c BareConfig) (BareResult, error) {
	strat, err := strategies.New("lua", strategies.Config{Limit: c.Limit, Window: c.Window})
	if err != nil {
		return BareResult{}, fmt.Errorf("bare loop: %w", err)
	}
	wl := workload.Config{Workers: c.Workers}
	conn, err := rlclients.New(c.Client, rlclients.Options{Addr: c.Addr, Workers: c.Workers,
		FlushDelay: workload.DefaultFlushDelay(wl), ClientName: "bareloop", Connections: c.Connections})
	if err != nil {
		return BareResult{}, fmt.Errorf("bare loop: %w", err)
	}
	defer conn.Close()
	if err := conn.Open(ctx, c.Workers); err != nil {
		return BareResult{}, fmt.Errorf("bare loop: %w", err)
	}
	observer := connection.Admin{PoolSize: 1}.PlainClient(c.Addr)
	defer observer.Close()

	// As rlbench's: on keys of its own, deleted before the counted loop,
	// which then starts on new keys.
	if c.Warmup > 0 {
		warm := keyspace.Warmup(c.Prefix)
		if _, err := loop(ctx, c.Warmup, c.Workers, 1, warm, c.Keys, strat, conn); err != nil {
			return BareResult{}, fmt.Errorf("bare loop: warm-up: %w", err)
		}
		if _, err := audit.Cleanup(ctx, observer, warm); err != nil {
			return BareResult{}, fmt.Errorf("bare loop: warm-up: %w", err)
		}
	}
	before, err := saturation.Take(ctx, observer)
	if err != nil {
		return BareResult{}, fmt.Errorf("bare loop: %w", err)
	}
	res, err := loop(ctx, c.Duration, c.Workers, 2, c.Prefix, c.Keys, strat, conn)
	res.ClientOptions = conn.Options()
	if after, terr := saturation.Take(ctx, observer); terr == nil {
		res.CPUS = (after.ProcessCPU - before.ProcessCPU).Seconds()
	} else if err == nil {
		err = terr
	}

	if _, cerr := audit.Cleanup(context.WithoutCancel(ctx), observer, c.Prefix); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return res, fmt.Errorf("bare loop: %w", err)
	}
	return res, nil
}

// loop runs workers on keys keys under prefix for d and counts their
// decisions.
func loop(ctx context.Context, d time.Duration, workers int, seed uint64, prefix string, keys int, s strategies.Strategy, c strategies.Client) (BareResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stop atomic.Bool
	t := time.AfterFunc(d, func() { stop.Store(true) })
	defer t.Stop()
	var decisions, errs atomic.Int64
	var wg sync.WaitGroup
	table := workload.KeyTable(prefix, keys)
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			names := workload.NewKeyNamer(prefix, table)
			var n, e int64
			for !stop.Load() && ctx.Err() == nil {
				if _, err := s.Decide(ctx, c, names.Name(r.IntN(keys))); err != nil {
					e++
				}
				n++
			}
			decisions.Add(n)
			errs.Add(e)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	res := BareResult{Decisions: decisions.Load(), Errors: errs.Load(), ElapsedS: elapsed.Seconds()}
	if res.ElapsedS > 0 {
		res.PerS = float64(res.Decisions) / res.ElapsedS
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if res.Errors > 0 {
		return res, fmt.Errorf("%d of %d decisions failed", res.Errors, res.Decisions)
	}
	if res.Decisions == 0 {
		return res, errors.New("no decisions")
	}
	return res, nil
}

// bareRun runs one bare-loop side of target t, with procs CPUs (rlbench's
// GOMAXPROCS in the same run; 0 leaves the Go runtime's default), on keys
// of the same length as rlbench's.
func (b *bench) bareRun(ctx context.Context, t comparison, procs int) (side, error) {
	args := []string{"--addr", b.addr, "--client", t.client, "--clients", strconv.Itoa(t.workers),
		"--keys", strconv.Itoa(b.o.Keys), "--prefix", keyspace.Cell(prefix, "bar", t.client),
		"--duration", fmt.Sprintf("%ds", b.o.Seconds), "--limit", strconv.Itoa(limit), "--window", strconv.Itoa(window)}
	var env []string
	if procs > 0 {
		env = []string{"GOMAXPROCS=" + strconv.Itoa(procs)}
	}
	m, err := b.measure(ctx, time.Duration(b.o.Seconds)*time.Second+rlbenchSlack, env, b.o.BareLoop, args...)
	if err != nil {
		return side{}, fmt.Errorf("bare loop: %w", err)
	}
	var r BareResult
	if err := json.Unmarshal(m.stdout, &r); err != nil {
		return side{}, fmt.Errorf("bare loop: parse its output %q: %w", m.stdout, err)
	}
	s := side{
		Command:          append(append(env, "bareloop"), args...), // GOMAXPROCS=N bareloop ...
		PerS:             r.PerS,
		CPUPerDecisionUS: perDecisionUS(r.CPUS, r.Decisions),
		Requests:         r.Decisions,
		WallS:            m.wall.Seconds(),
		Saturation:       m.saturation(procs),
		ServerCalls:      m.calls.calls,
	}
	return s, b.checkCalls(s, m)
}

// perDecisionUS is cpuS seconds of CPU over n decisions, in microseconds
// per decision; 0 for no decisions.
func perDecisionUS(cpuS float64, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return cpuS * 1e6 / float64(n)
}

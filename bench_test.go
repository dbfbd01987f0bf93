package rlbench_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/serverinfo"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/workload"
)

// benchKeys, benchLimit and benchWindow shape the benchmark's counters: few
// keys with a short window, so that every run crosses window boundaries and
// rejects as well as allows.
const (
	benchKeys   = 16
	benchLimit  = 1000
	benchWindow = 1
)

// BenchmarkDecide measures one rate-limit decision, end to end through a
// real client to a private redis-server on loopback, for every strategy on
// every client at two levels of concurrency. ns/op is the time per decision
// across all workers (throughput), not the latency of one. Beside it:
// allowed/op and rejected/op (which add up to 1 less errors/op), and
// immortal-keys, the counters the run left with no TTL (audited after the
// run).
//
//	go test -run '^$' -bench . -benchmem -count 6 | tee new.txt; benchstat old.txt new.txt
func BenchmarkDecide(b *testing.B) {
	srv := redistest.Start(b)
	observer := redistest.Client(b, srv)
	var cell atomic.Int64
	for _, s := range strategies.All() {
		if !serverinfo.VersionAtLeast(srv.Info().RedisVersion, s.MinRedis) {
			continue // the hash-field strategies need Redis 7.4
		}
		for _, client := range clients.Names {
			if !s.Supports(client) {
				continue // a published library written for go-redis
			}
			for _, par := range []int{1, 32} {
				workers := par * runtime.GOMAXPROCS(0)
				name := fmt.Sprintf("strategy=%s/client=%s/workers=%d", s.Name, client, workers)
				b.Run(name, func(b *testing.B) {
					strat, err := strategies.New(s.Name, strategies.Config{Limit: benchLimit, Window: benchWindow})
					if err != nil {
						b.Fatal(err)
					}
					conn, err := clients.New(client, clients.Options{Addr: srv.Addr(), Workers: workers})
					if err != nil {
						b.Fatal(err)
					}
					defer conn.Close()
					// A fresh prefix each time the framework calls this body.
					prefix := redistest.Prefix(b) + strconv.FormatInt(cell.Add(1), 10) + ":"
					keys := workload.KeyNames(prefix, benchKeys)
					var allowed, rejected, errs, next atomic.Int64
					ctx := context.Background()

					b.ReportAllocs()
					b.SetParallelism(par)
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						var a, r, e int64
						for i := next.Add(1); pb.Next(); i++ {
							d, err := strat.Decide(ctx, conn, keys[i%benchKeys])
							switch {
							case err != nil:
								e++
							case d.Allowed:
								a++
							default:
								r++
							}
						}
						allowed.Add(a)
						rejected.Add(r)
						errs.Add(e)
					})
					b.StopTimer()

					res, err := audit.Run(ctx, observer, prefix, benchWindow)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := audit.Cleanup(ctx, observer, prefix); err != nil {
						b.Fatal(err)
					}
					n := float64(b.N)
					b.ReportMetric(float64(allowed.Load())/n, "allowed/op")
					b.ReportMetric(float64(rejected.Load())/n, "rejected/op")
					b.ReportMetric(float64(errs.Load())/n, "errors/op")
					b.ReportMetric(float64(res.Immortal), "immortal-keys")
				})
			}
		}
	}
}

// benchStackWorkers is BenchmarkWorkerStacks' closed loop: enough workers
// that their stacks are most of the process's.
const benchStackWorkers = 1000

// BenchmarkWorkerStacks measures the goroutine stack a closed-loop worker
// holds, as a cell runs it: the client opened for the workers
// (clients.Conn.Open), the lua strategy, workload.Run with a Recorder.
// stack-B/worker is the most stack memory in use during the run
// (runtime/metrics, sampled every 10 ms) over the workers, less what was
// in use before: 4096 means every worker fits the smallest stack Go grows
// to, 8192 the next. An operation is one decision.
//
//	go test -run '^$' -bench WorkerStacks -benchtime 20000x .
func BenchmarkWorkerStacks(b *testing.B) {
	srv := redistest.Start(b)
	observer := redistest.Client(b, srv)
	ctx := context.Background()
	for _, client := range clients.Names {
		b.Run("client="+client, func(b *testing.B) {
			strat, err := strategies.New("lua", strategies.Config{Limit: 1 << 40, Window: 60})
			if err != nil {
				b.Fatal(err)
			}
			wl := workload.Config{Workers: benchStackWorkers, Keys: 100_000, Requests: int64(max(b.N, 4*benchStackWorkers)),
				Prefix: redistest.Prefix(b) + client + ":"}
			conn, err := clients.New(client, clients.Options{Addr: srv.Addr(), Workers: wl.Workers, FlushDelay: workload.DefaultFlushDelay(wl)})
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			if err := conn.Open(ctx, wl.Workers); err != nil {
				b.Fatal(err)
			}
			base := stackBytes()
			peak, done := make(chan uint64), make(chan struct{})
			go func() {
				var most uint64
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-done:
						peak <- most
						return
					case <-tick.C:
						most = max(most, stackBytes())
					}
				}
			}()
			var rec results.Recorder
			b.ResetTimer()
			_, err = workload.Run(ctx, wl, strat, conn, &rec, nil)
			b.StopTimer()
			close(done)
			most := <-peak
			if err != nil {
				b.Fatal(err)
			}
			if _, err := audit.Cleanup(ctx, observer, wl.Prefix); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(most-min(base, most))/benchStackWorkers, "stack-B/worker")
		})
	}
}

// stackBytes is the goroutine stack memory in use (StackInuse).
func stackBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

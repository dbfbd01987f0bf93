package verify

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// CheckConcurrent: Workers workers send 3 requests each to one key at
// once; exactly Limit are admitted (leaks when more are).
const CheckConcurrent = "concurrent"

// requestsPerWorker is what each worker of the concurrent check sends.
const requestsPerWorker = 3

func init() {
	register(checkDef{
		Check:    Check{Name: CheckConcurrent, Doc: "many workers (50 by default) on one key at once: the atomic strategies admit exactly limit"},
		window:   longWindow,
		run:      checkConcurrent,
		expected: passUnlessNotAtomic,
	})
}

func checkConcurrent(ctx context.Context, t *trial) Cell {
	key := t.key("k")
	if err := t.roomInWindow(ctx, key); err != nil {
		return failf("%v", err)
	}
	var allowed, failed atomic.Int64
	var firstErr error
	var once sync.Once
	start := make(chan struct{})
	var workers sync.WaitGroup
	for range t.cfg.Workers {
		workers.Go(func() {
			<-start
			for range requestsPerWorker {
				d, err := t.decide(ctx, key)
				switch {
				case err != nil:
					failed.Add(1)
					once.Do(func() { firstErr = err })
				case d.Allowed:
					allowed.Add(1)
				}
			}
		})
	}
	began := time.Now()
	close(start)
	workers.Wait()
	took := time.Since(began)
	total := t.cfg.Workers * requestsPerWorker
	if n := failed.Load(); n > 0 {
		return failf("%d of %d decisions errored; first: %v", n, total, firstErr)
	}
	immortal, err := t.immortal(ctx, t.keyPrefix(), t.window)
	if err != nil {
		return failf("%v", err)
	}
	return t.admitted(allowed.Load(), immortal, total, took)
}

// admitted judges the concurrent check's decisions, admitted of total in
// took, leaving immortal counters with no TTL. More admitted than the
// limit once a request's share of the window has gone by (lateAfter) may
// be requests given back by the strategy: too late to judge (Cell.late).
func (t *trial) admitted(admitted, immortal int64, total int, took time.Duration) Cell {
	what := fmt.Sprintf("admitted %d of limit %d (%d requests from %d workers on one key)", admitted, t.cfg.Limit, total, t.cfg.Workers)
	if immortal > 0 {
		return Cell{Outcome: Leaks, Note: fmt.Sprintf("%s, and left %d %ss with no TTL", what, immortal, t.counterNoun())}
	}
	switch {
	case admitted > t.cfg.Limit:
		return Cell{Outcome: Leaks, Note: what, late: took >= t.lateAfter()}
	case admitted < t.cfg.Limit:
		return failf("%s; want exactly %d", what, t.cfg.Limit)
	case !t.info.Atomic:
		return Cell{Outcome: Pass, Note: what}
	}
	return Cell{Outcome: Pass}
}

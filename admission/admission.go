// Package admission checks, during a load run, how many requests a limiter
// really let through per key: the largest excess over the limit in any one
// fixed window (over-admission), and the largest number admitted within any
// span of one window length (the boundary burst a fixed window allows, up to
// twice the limit).
//
// A fixed window is delimited by the decision that created its counter:
// Count 0 (the key was missing) for a strategy that reads before it writes,
// Count 1 for one whose Count is its own increment's result. How many a
// window admitted is counted two ways, by the strategy's kind:
//
//   - read-then-write (naive): the allowed decisions attributed to the
//     window. Workers that read the same value are all admitted, which is
//     the over-admission this package exists to show; creators (Count 0)
//     that complete within 1/SpanBuckets of a window's first belong to it.
//   - increment-first (every other fixed-window strategy): the highest
//     Count among the window's allowed decisions, since the server numbered
//     them 1, 2, 3 ... in the order it ran them. This cannot be fooled by
//     replies that reach the recorder out of order.
//
// The span count uses SpanBuckets buckets per window length, so a span is
// measured to within one bucket (1/SpanBuckets of the window).
//
// Memory is bounded: a Tracker follows at most MaxTrackedKeys keys (144
// bytes each), exactly. With more keys it follows keys 0 to
// MaxTrackedKeys-1, a fixed sample whose figures are exact for every key
// in it, and ignores decisions on the others; Result says how many it
// covered. Under the uniform key distribution every key is as likely as
// any other, so these keys are a sample like any other; under zipf and hot
// they are the most requested ones, where contention (and so
// over-admission) is highest.
package admission

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

// SpanBuckets is the number of buckets one window length is divided into for
// the span count.
const SpanBuckets = 20

// MaxTrackedKeys is the most keys New follows: keys 0 to MaxTrackedKeys-1.
const MaxTrackedKeys = 10_000

// Tracker counts admissions per key. It is safe for concurrent use; each
// key has its own lock, so workers on different keys never contend.
type Tracker struct {
	limit       int64
	bucket      time.Duration
	fixed       bool
	countIsRead bool
	// total is the run's number of keys; keys holds the first of them,
	// those followed.
	total int
	keys  []keyState
	// spans are WatchSpans'; created counts the windows that started in
	// each.
	spans   []Span
	created []atomic.Int64
}

// Span is a stretch of the load: a fault's, during which WatchSpans
// counts the fixed windows that start.
type Span struct {
	// From and To are its start and its end (included), from the start
	// of the load.
	From, To time.Duration
}

// WatchSpans makes the Tracker count, for each span, the fixed windows
// that start inside it (a fresh counter's first increment, as the package
// doc delimits windows) on the keys it follows. Call it before the first
// Observe.
func (t *Tracker) WatchSpans(spans []Span) {
	t.spans, t.created = spans, make([]atomic.Int64, len(spans))
}

// Creations returns, for each span of WatchSpans, how many fixed windows
// started inside it; nil for a strategy that is not a fixed window, whose
// windows the Tracker does not delimit.
func (t *Tracker) Creations() []int64 {
	if !t.fixed {
		return nil
	}
	out := make([]int64, len(t.created))
	for i := range t.created {
		out[i] = t.created[i].Load()
	}
	return out
}

// keyState is one key's counts: 144 bytes, of which the ring is 80.
type keyState struct {
	mu sync.Mutex
	// winAdmitted is the current fixed window's admissions, counted as the
	// package doc says; winOpen is false until the first window starts.
	winAdmitted int64
	winOpenedAt time.Duration // when the current window's first creator completed
	overMax     int64
	// ring holds admissions per bucket, each up to bucketMax; newest is
	// the absolute index of the newest bucket written, spanSum the sum of
	// the ring.
	ring    [SpanBuckets]int32
	newest  int64
	spanSum int64
	spanMax int64
	winOpen bool
}

// bucketMax is the most admissions one bucket of one key counts: more
// than 2 billion within 1/SpanBuckets of a window, beyond any real run.
const bucketMax = math.MaxInt32

// New returns a Tracker for keys counters of a strategy with the given
// limit and window (in whole seconds), following at most MaxTrackedKeys of
// them: NewBounded(info, keys, MaxTrackedKeys, limit, window).
func New(info strategies.Info, keys int, limit, window int64) *Tracker {
	return NewBounded(info, keys, MaxTrackedKeys, limit, window)
}

// NewBounded is New following keys 0 to tracked-1 only, when keys is more
// than tracked.
func NewBounded(info strategies.Info, keys, tracked int, limit, window int64) *Tracker {
	keys = max(keys, 0)
	return &Tracker{
		limit:       limit,
		bucket:      max(time.Duration(window)*time.Second/SpanBuckets, 1),
		fixed:       info.FixedWindow,
		countIsRead: info.CountIsRead,
		total:       keys,
		keys:        make([]keyState, min(keys, max(tracked, 0))),
	}
}

// Observe records a decision for key index k that completed at elapsed time
// at from the start of the load. A key the Tracker does not follow is
// ignored.
func (t *Tracker) Observe(k int, d strategies.Decision, at time.Duration) {
	if !d.Allowed || uint(k) >= uint(len(t.keys)) {
		return
	}
	ks := &t.keys[k]
	ks.mu.Lock()
	if t.fixed {
		t.window(ks, d, at)
	}
	ks.span(int64(at / t.bucket))
	ks.mu.Unlock()
}

// window updates the current fixed window of ks with d, an allowed decision
// that completed at at.
func (t *Tracker) window(ks *keyState, d strategies.Decision, at time.Duration) {
	created := d.Count == 1
	if t.countIsRead {
		created = d.Count == 0
		// Workers that all read "missing" at once all create the counter:
		// one window, each of them admitted. A creator within one bucket of
		// the window's first is one of those, not a new window.
		if created && ks.winOpen && at-ks.winOpenedAt < t.bucket {
			created = false
		}
	}
	if created {
		ks.winAdmitted, ks.winOpen, ks.winOpenedAt = 0, true, at
		for i, sp := range t.spans {
			if at >= sp.From && at <= sp.To {
				t.created[i].Add(1)
			}
		}
	}
	if !ks.winOpen {
		return // admitted in a window that started before the run
	}
	if t.countIsRead {
		ks.winAdmitted++
	} else {
		ks.winAdmitted = max(ks.winAdmitted, d.Count)
	}
	ks.overMax = max(ks.overMax, ks.winAdmitted-t.limit)
}

// span adds one admission in absolute bucket b.
func (ks *keyState) span(b int64) {
	switch {
	case b > ks.newest:
		// Clear the buckets that fell out of the span.
		for i := ks.newest + 1; i <= b && i <= ks.newest+SpanBuckets; i++ {
			ks.spanSum -= int64(ks.ring[i%SpanBuckets])
			ks.ring[i%SpanBuckets] = 0
		}
		ks.newest = b
	case b <= ks.newest-SpanBuckets:
		// Older than the span that ends now: it fell in a span already
		// measured. Count it there, but not in the running sum.
		return
	}
	if ks.ring[b%SpanBuckets] == bucketMax {
		return
	}
	ks.ring[b%SpanBuckets]++
	ks.spanSum++
	ks.spanMax = max(ks.spanMax, ks.spanSum)
}

// Result is what a Tracker found: results.Admission, the group of the
// report's run it fills. Its MaxAdmittedPerWindow is exact to within
// 1/SpanBuckets of a window length; AdmissionKeysTracked says when the
// figures cover a sample of the keys.
type Result = results.Admission

// Result returns the counts so far.
func (t *Tracker) Result() Result {
	var r Result
	if len(t.keys) < t.total {
		r.AdmissionKeysTracked = int64(len(t.keys))
	}
	var over int64
	for i := range t.keys {
		ks := &t.keys[i]
		ks.mu.Lock()
		over = max(over, ks.overMax)
		r.MaxAdmittedPerWindow = max(r.MaxAdmittedPerWindow, ks.spanMax)
		ks.mu.Unlock()
	}
	if t.fixed {
		r.OverAdmitted = &over
	}
	return r
}

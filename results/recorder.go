package results

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// MaxShards is the most shards a Recorder has when none is given: it has
// ShardsPerProc per GOMAXPROCS, up to MaxShards. At most GOMAXPROCS workers
// record at once, so more shards would only cost memory (a latency
// histogram is about 160 KiB).
const MaxShards = 64

// ShardsPerProc is how many shards a Recorder has per GOMAXPROCS when none is
// given, so that two workers recording at once rarely share one.
const ShardsPerProc = 8

// defaultShards is the shard count of a Recorder given none, with procs
// CPUs (GOMAXPROCS).
func defaultShards(procs int) int {
	return min(MaxShards, ShardsPerProc*max(procs, 1))
}

// Histogram geometry shared by every Recorder. Values are latencies in
// microseconds; Record clamps latencies into [MinLatencyUS, MaxLatencyUS].
const (
	// MinLatencyUS is the lowest latency a histogram tracks, in microseconds.
	MinLatencyUS = 1
	// MaxLatencyUS is the highest latency a histogram tracks, in microseconds (60 s).
	MaxLatencyUS = 60_000_000
	// LatencySignificantDigits is the histogram's precision, in significant decimal digits.
	LatencySignificantDigits = 3
)

// cacheLine is the padding unit that keeps two shards off the same cache
// lines. 128 bytes covers the adjacent-line prefetcher of x86 and the 128-byte
// lines of some arm64 cores.
const cacheLine = 128

// shard is one lock and the data it guards. Workers whose index maps to the
// same shard share it.
type shard struct {
	mu sync.Mutex
	// latency is the shard's histogram, in microseconds; nil until the first
	// Record, so shards no worker uses cost no histogram. In open loop it
	// holds the corrected latencies.
	latency *hdrhistogram.Histogram
	// uncorrected holds open loop's uncorrected latencies, in microseconds;
	// nil until the shard's first RecordOpen, so a closed loop never pays for it.
	uncorrected *hdrhistogram.Histogram
	// allowed, rejected and errors count decisions.
	allowed, rejected, errors int64
	// kinds counts errors by ErrorKind; nil until the first error.
	kinds map[string]int64
	// begun counts Begin's calls, outside mu: the decisions sent, of
	// which those not yet recorded are in flight.
	begun atomic.Int64
}

// paddedShard pads a shard to a whole number of cache lines against false
// sharing between neighbouring shards.
type paddedShard struct {
	shard
	_ [cacheLine - unsafe.Sizeof(shard{})%cacheLine]byte
}

// Recorder records decisions from many concurrent workers. Its zero value is
// ready to use and has ShardsPerProc shards per GOMAXPROCS (read at its first
// use), up to MaxShards; NewRecorder chooses another count.
//
// Worker w records into shard w % shards, so memory is bounded by the shard
// count (one histogram per shard in use, two once RecordOpen has been
// called on it), not by the number of workers. All
// methods are safe for concurrent use. A Recorder must not be copied after
// first use.
type Recorder struct {
	once sync.Once
	// n is the shard count NewRecorder asked for; 0 means defaultShards.
	n      int
	shards []paddedShard
	// inFlight is set by TrackInFlight, before the workers start: Begin
	// and Abandon count.
	inFlight bool
}

// NewRecorder returns a Recorder with the given number of shards; shards <= 0
// means the zero Recorder's count.
func NewRecorder(shards int) *Recorder {
	r := &Recorder{n: shards}
	r.once.Do(r.init)
	return r
}

// init allocates the shards. Histograms are allocated lazily, per shard.
func (r *Recorder) init() {
	if r.n <= 0 {
		r.n = defaultShards(runtime.GOMAXPROCS(0))
	}
	r.shards = make([]paddedShard, r.n)
}

// newLatencyHistogram returns an empty histogram with the Recorder's geometry.
func newLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(MinLatencyUS, MaxLatencyUS, LatencySignificantDigits)
}

// Record records one decision attempt by worker. The latency goes into the
// histogram, truncated to whole microseconds and clamped into
// [MinLatencyUS, MaxLatencyUS], except for a simulated crash (KindCrashed),
// whose latency is an artificial cut and would drag the figures down. When err is nil the decision counts as allowed
// or rejected; otherwise it counts as an error of kind ErrorKind(err) and
// allowed is ignored. Any worker number is accepted, negative ones included.
func (r *Recorder) Record(worker int, latency time.Duration, allowed bool, err error) {
	r.record(worker, latency, -1, allowed, err)
}

// RecordOpen records one open-loop decision attempt by worker, as Record
// does, with two latencies: corrected, from the request's intended start
// time on the schedule, goes into the histogram that Histogram returns;
// uncorrected, from the moment it was actually sent, goes into the one that
// UncorrectedHistogram returns. Both are truncated and clamped as in Record.
// Corrected is the figure to trust: it counts the time a request waited
// behind a slow server before it could be sent (coordinated omission).
func (r *Recorder) RecordOpen(worker int, corrected, uncorrected time.Duration, allowed bool, err error) {
	r.record(worker, corrected, max(uncorrected, 0), allowed, err)
}

// record is Record, and RecordOpen when uncorrected is not negative.
func (r *Recorder) record(worker int, latency, uncorrected time.Duration, allowed bool, err error) {
	r.once.Do(r.init)
	s := &r.shards[uint(worker)%uint(len(r.shards))].shard

	us, uus := clampUS(latency), clampUS(uncorrected)
	var kind string
	if err != nil {
		kind = ErrorKind(err) // outside the lock
	}

	s.mu.Lock()
	if kind != KindCrashed {
		if s.latency == nil {
			s.latency = newLatencyHistogram()
		}
		// Values are clamped into the histograms' range: RecordValue
		// cannot fail.
		_ = s.latency.RecordValue(us)
		if uncorrected >= 0 {
			if s.uncorrected == nil {
				s.uncorrected = newLatencyHistogram()
			}
			_ = s.uncorrected.RecordValue(uus)
		}
	}
	s.count(allowed, err, kind)
	s.mu.Unlock()
}

// RecordUnsent records n open-loop requests that fell due and were never
// sent, at latency lowerBound each (the end of the run minus their due
// time), in the histogram that Histogram returns: they are in the corrected
// latency, not in any decision count nor in the uncorrected latency.
// lowerBound is truncated and clamped as in Record; n <= 0 records nothing.
func (r *Recorder) RecordUnsent(lowerBound time.Duration, n int64) {
	if n <= 0 {
		return
	}
	r.once.Do(r.init)
	s := &r.shards[0].shard
	s.mu.Lock()
	if s.latency == nil {
		s.latency = newLatencyHistogram()
	}
	_ = s.latency.RecordValues(clampUS(lowerBound), n)
	s.mu.Unlock()
}

// clampUS truncates d to whole microseconds and clamps it into
// [MinLatencyUS, MaxLatencyUS].
func clampUS(d time.Duration) int64 {
	us := d.Microseconds()
	if us < MinLatencyUS {
		return MinLatencyUS
	} else if us > MaxLatencyUS {
		return MaxLatencyUS
	}
	return us
}

// count counts one decision attempt; kind is ErrorKind(err) when err is not
// nil. The caller holds s.mu.
func (s *shard) count(allowed bool, err error, kind string) {
	switch {
	case err != nil:
		s.errors++
		if s.kinds == nil {
			s.kinds = make(map[string]int64)
		}
		s.kinds[kind]++
	case allowed:
		s.allowed++
	default:
		s.rejected++
	}
}

// TrackInFlight makes Begin and Abandon count, for InFlight (live
// metrics); without it they do nothing. Call it before the first Begin
// (before the workers start).
func (r *Recorder) TrackInFlight() {
	r.once.Do(r.init)
	r.inFlight = true
}

// Begin notes that worker has sent a decision that it will record with
// Record or RecordOpen, or give up with Abandon: InFlight counts it until
// then. Unless TrackInFlight was called it does nothing; otherwise it takes
// no lock (one atomic add on the worker's shard). It allocates nothing.
func (r *Recorder) Begin(worker int) {
	if r.inFlight {
		r.begin(worker, 1)
	}
}

// Abandon notes that worker gave up the decision of its latest Begin
// without recording it (an interrupt ended it).
func (r *Recorder) Abandon(worker int) {
	if r.inFlight {
		r.begin(worker, -1)
	}
}

// begin adds n to worker's shard's count of begun decisions.
func (r *Recorder) begin(worker int, n int64) {
	r.shards[uint(worker)%uint(len(r.shards))].begun.Add(n)
}

// InFlight returns the decisions sent (Begin) and not yet recorded, given
// t, a Totals read before the call; 0 unless TrackInFlight was called. It
// is meant for a Recorder whose every decision is begun, as workload.Run's
// are.
func (r *Recorder) InFlight(t Totals) int64 {
	r.once.Do(r.init)
	if !r.inFlight {
		return 0
	}
	var begun int64
	for i := range r.shards {
		begun += r.shards[i].begun.Load()
	}
	// Each Begin precedes its Record, and begun is read after t: the
	// difference is never below zero, unless a caller records without
	// Begin.
	return max(begun-t.Decisions, 0)
}

// Totals is a snapshot of a Recorder's counters, for a live progress line.
type Totals struct {
	// Decisions is the number of decision attempts: Allowed + Rejected + Errors.
	Decisions int64
	// Allowed is the number of requests admitted.
	Allowed int64
	// Rejected is the number of requests refused by the limiter.
	Rejected int64
	// Errors is the number of attempts that ended in an error.
	Errors int64
}

// Totals returns a snapshot of the counters. It takes each shard's lock in
// turn, briefly, and copies no histogram, so it is cheap enough to call every
// progress tick.
func (r *Recorder) Totals() Totals {
	var t Totals
	r.each(func(s *shard) { s.addTotals(&t) })
	t.Decisions = t.Allowed + t.Rejected + t.Errors
	return t
}

// each runs f on every shard in turn, under the shard's lock.
func (r *Recorder) each(f func(s *shard)) {
	r.once.Do(r.init)
	for i := range r.shards {
		s := &r.shards[i].shard
		s.mu.Lock()
		f(s)
		s.mu.Unlock()
	}
}

// addTotals adds the shard's counters to t, whose Decisions it leaves alone.
// The caller holds s.mu.
func (s *shard) addTotals(t *Totals) {
	t.Allowed += s.allowed
	t.Rejected += s.rejected
	t.Errors += s.errors
}

// Snapshot returns the totals and the merged latency histogram (as
// Histogram) read together, shard by shard under each shard's lock, so that
// the histogram holds exactly the decisions the totals count.
func (r *Recorder) Snapshot() (Totals, *hdrhistogram.Histogram) {
	r.once.Do(r.init)
	var t Totals
	h := newLatencyHistogram()
	for i := range r.shards {
		s := &r.shards[i].shard
		s.mu.Lock()
		s.addTotals(&t)
		var shard *hdrhistogram.Histogram
		if s.latency != nil {
			// A copy under the lock, the slower merge outside it: the
			// shard's workers wait for a memcpy, not a walk of its buckets.
			shard = s.latency.Clone()
		}
		s.mu.Unlock()
		if shard != nil {
			h.Merge(shard)
		}
	}
	t.Decisions = t.Allowed + t.Rejected + t.Errors
	return t, h
}

// Histogram merges all shards into a new histogram of latencies in
// microseconds: every Record's latency and every RecordOpen's corrected one.
// The caller owns the result.
func (r *Recorder) Histogram() *hdrhistogram.Histogram {
	h := newLatencyHistogram()
	r.each(func(s *shard) {
		if s.latency != nil {
			// Same geometry on both sides, so nothing is dropped.
			h.Merge(s.latency)
		}
	})
	return h
}

// UncorrectedHistogram merges all shards' uncorrected latencies, those
// given to RecordOpen, into a new histogram in microseconds. It returns nil
// when nothing was recorded with RecordOpen since the Recorder was made (a
// closed loop). The caller owns the result.
func (r *Recorder) UncorrectedHistogram() *hdrhistogram.Histogram {
	var h *hdrhistogram.Histogram
	r.each(func(s *shard) {
		if s.uncorrected != nil {
			if h == nil {
				h = newLatencyHistogram()
			}
			h.Merge(s.uncorrected)
		}
	})
	return h
}

// ErrorKinds returns the errors counted so far by ErrorKind, in a new map that
// the caller owns. The map is empty, not nil, when there were no errors.
func (r *Recorder) ErrorKinds() map[string]int64 {
	kinds := make(map[string]int64)
	r.each(func(s *shard) {
		for k, n := range s.kinds {
			kinds[k] += n
		}
	})
	return kinds
}

// Reset clears every counter and histogram, e.g. after a warm-up. Shards keep
// their histograms' memory. A Record that runs concurrently with Reset may be
// counted or cleared.
func (r *Recorder) Reset() {
	r.each(func(s *shard) {
		if s.latency != nil {
			s.latency.Reset()
		}
		if s.uncorrected != nil {
			s.uncorrected.Reset()
		}
		s.allowed, s.rejected, s.errors = 0, 0, 0
		s.begun.Store(0)
		clear(s.kinds)
	})
}

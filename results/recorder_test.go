package results

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rlbench/rlbench/strategies"
)

// TestRecorderConcurrent records from many goroutines at once, more workers
// than shards, and checks that every count comes out exact.
func TestRecorderConcurrent(t *testing.T) {
	t.Parallel()
	const (
		workers   = 200
		perWorker = 1_000
	)
	rec := NewRecorder(0)
	wrongType := fmt.Errorf("lua: evalsha: %w", strategies.ReplyError("WRONGTYPE Operation against a key holding the wrong kind of value"))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				switch i % 4 {
				case 0, 1:
					rec.Record(w, time.Duration(i)*time.Microsecond, true, nil)
				case 2:
					rec.Record(w, time.Millisecond, false, nil)
				case 3:
					rec.Record(w, time.Second, false, wrongType)
				}
				if i%100 == 0 {
					_ = rec.Totals() // readers run alongside writers
				}
			}
		})
	}
	wg.Wait()

	want := Totals{
		Decisions: workers * perWorker,
		Allowed:   workers * perWorker / 2,
		Rejected:  workers * perWorker / 4,
		Errors:    workers * perWorker / 4,
	}
	if got := rec.Totals(); got != want {
		t.Errorf("Totals() = %+v; want %+v", got, want)
	}
	if got := rec.Histogram().TotalCount(); got != want.Decisions {
		t.Errorf("Histogram().TotalCount() = %d; want %d", got, want.Decisions)
	}
	kinds := rec.ErrorKinds()
	if got := kinds["WRONGTYPE"]; got != want.Errors || len(kinds) != 1 {
		t.Errorf("ErrorKinds() = %v; want map[WRONGTYPE:%d]", kinds, want.Errors)
	}
}

// TestRecorderZeroValue checks that a zero Recorder is ready to use.
func TestRecorderZeroValue(t *testing.T) {
	t.Parallel()
	var rec Recorder
	if got, want := rec.Totals(), (Totals{}); got != want {
		t.Errorf("Totals() on a zero Recorder = %+v; want %+v", got, want)
	}
	if got := rec.Histogram().TotalCount(); got != 0 {
		t.Errorf("Histogram().TotalCount() on a zero Recorder = %d; want 0", got)
	}
	if got := rec.ErrorKinds(); got == nil || len(got) != 0 {
		t.Errorf("ErrorKinds() on a zero Recorder = %#v; want an empty map", got)
	}

	rec.Record(3, 250*time.Microsecond, true, nil)
	rec.Record(-7, 250*time.Microsecond, false, nil)
	rec.Record(1<<40, time.Millisecond, false, errors.New("boom"))

	if got, want := rec.Totals(), (Totals{Decisions: 3, Allowed: 1, Rejected: 1, Errors: 1}); got != want {
		t.Errorf("Totals() = %+v; want %+v", got, want)
	}
	if got, want := len(rec.shards), defaultShards(runtime.GOMAXPROCS(0)); got != want {
		t.Errorf("zero Recorder has %d shards; want %d", got, want)
	}
	if got := rec.ErrorKinds()[KindOther]; got != 1 {
		t.Errorf("ErrorKinds()[%q] = %d; want 1", KindOther, got)
	}
}

// TestRecorderReset checks that Reset clears counters, histograms and error
// kinds, and that the Recorder records again afterwards.
func TestRecorderReset(t *testing.T) {
	t.Parallel()
	rec := NewRecorder(4)
	for w := range 10 {
		rec.Record(w, time.Millisecond, w%2 == 0, nil)
		rec.Record(w, time.Millisecond, false, errors.New("boom"))
	}
	rec.Reset()
	if got, want := rec.Totals(), (Totals{}); got != want {
		t.Errorf("Totals() after Reset = %+v; want %+v", got, want)
	}
	if got := rec.Histogram().TotalCount(); got != 0 {
		t.Errorf("Histogram().TotalCount() after Reset = %d; want 0", got)
	}
	if got := rec.ErrorKinds(); len(got) != 0 {
		t.Errorf("ErrorKinds() after Reset = %v; want empty", got)
	}
	rec.Record(0, time.Millisecond, true, nil)
	if got, want := rec.Totals(), (Totals{Decisions: 1, Allowed: 1}); got != want {
		t.Errorf("Totals() after Reset and Record = %+v; want %+v", got, want)
	}
}

// TestNewRecorderShards checks the shard count NewRecorder picks.
func TestNewRecorderShards(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		shards int
		want   int
	}{
		{name: "zero means default", shards: 0, want: defaultShards(runtime.GOMAXPROCS(0))},
		{name: "negative means default", shards: -1, want: defaultShards(runtime.GOMAXPROCS(0))},
		{name: "one shard", shards: 1, want: 1},
		{name: "explicit", shards: 8, want: 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := len(NewRecorder(tc.shards).shards); got != tc.want {
				t.Errorf("len(NewRecorder(%d).shards) = %d; want %d", tc.shards, got, tc.want)
			}
		})
	}
}

// TestRecorderMemoryBound records from 10,000 workers and checks that the
// Recorder still holds one histogram per shard.
func TestRecorderMemoryBound(t *testing.T) {
	t.Parallel()
	const workers = 10_000
	var rec Recorder
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { rec.Record(w, time.Millisecond, true, nil) })
	}
	wg.Wait()

	histograms := 0
	for i := range rec.shards {
		if rec.shards[i].latency != nil {
			histograms++
		}
	}
	if want := defaultShards(runtime.GOMAXPROCS(0)); histograms != want {
		t.Errorf("after %d workers the Recorder holds %d histograms; want %d", workers, histograms, want)
	}
	if got := rec.Totals().Decisions; got != workers {
		t.Errorf("Totals().Decisions = %d; want %d", got, workers)
	}
}

// TestRecordOpen checks that RecordOpen counts like Record and keeps the
// corrected latency in Histogram and the uncorrected one beside it.
func TestRecordOpen(t *testing.T) {
	t.Parallel()
	var rec Recorder
	if h := rec.UncorrectedHistogram(); h != nil {
		t.Fatalf("UncorrectedHistogram() on a zero Recorder = %v; want nil", h)
	}
	rec.Record(0, time.Millisecond, true, nil)
	if h := rec.UncorrectedHistogram(); h != nil {
		t.Fatalf("UncorrectedHistogram() after Record only = %v; want nil (closed loop)", h)
	}
	rec.Reset()
	for w := range 100 {
		rec.RecordOpen(w, 300*time.Millisecond, 200*time.Microsecond, w%2 == 0, nil)
	}
	rec.RecordOpen(7, 2*time.Hour, -time.Second, false, errors.New("boom"))

	if got, want := rec.Totals(), (Totals{Decisions: 101, Allowed: 50, Rejected: 50, Errors: 1}); got != want {
		t.Errorf("Totals() = %+v; want %+v", got, want)
	}
	if got := rec.ErrorKinds()[KindOther]; got != 1 {
		t.Errorf("ErrorKinds()[%q] = %d; want 1", KindOther, got)
	}
	tests := []struct {
		name             string
		got              Latency
		wantP50, wantMax float64 // µs, at the histogram's precision
	}{
		{name: "corrected", got: LatencyOf(rec.Histogram()), wantP50: 300_000, wantMax: MaxLatencyUS},
		{name: "uncorrected", got: LatencyOf(rec.UncorrectedHistogram()), wantP50: 200, wantMax: 200},
	}
	for _, tc := range tests {
		if !within(tc.got.P50, tc.wantP50) || !within(tc.got.Max, tc.wantMax) {
			t.Errorf("%s latency = %+v; want p50 %v and max %v (±0.1%%)", tc.name, tc.got, tc.wantP50, tc.wantMax)
		}
	}
	if got := rec.UncorrectedHistogram(); got.TotalCount() != 101 || got.Min() != MinLatencyUS {
		t.Errorf("UncorrectedHistogram() holds %d values from %dµs; want 101 from %dµs (clamped)", got.TotalCount(), got.Min(), MinLatencyUS)
	}

	rec.Reset()
	if h := rec.UncorrectedHistogram(); h == nil || h.TotalCount() != 0 {
		t.Errorf("UncorrectedHistogram() after Reset = %v; want empty", h)
	}
}

// TestNewRunUncorrected checks that NewRun summarises the uncorrected
// latencies of an open loop, and leaves them out for a closed one.
func TestNewRunUncorrected(t *testing.T) {
	t.Parallel()
	var closed, open Recorder
	closed.Record(0, time.Millisecond, true, nil)
	open.RecordOpen(0, 5*time.Millisecond, time.Millisecond, true, nil)
	if got := NewRun(&closed, time.Second).OpenLoop; got != nil {
		t.Errorf("NewRun(closed loop).OpenLoop = %+v; want nil", *got)
	}
	run := NewRun(&open, time.Second)
	if run.OpenLoop == nil || run.LatencyUncorrectedUS == nil || !within(run.LatencyUncorrectedUS.P50, 1000) || !within(run.LatencyUS.P50, 5000) {
		t.Errorf("NewRun(open loop) latencies = %+v, open loop %+v; want p50 5000µs, uncorrected p50 1000µs", run.LatencyUS, run.OpenLoop)
	}
}

// within reports whether got is within the histograms' precision (3
// significant digits) of want.
func within(got, want float64) bool {
	return got >= want*0.999 && got <= want*1.001
}

// TestRecordOpenMemoryBound records open-loop decisions from 10,000 workers
// and checks that the Recorder holds at most two histograms per shard.
func TestRecordOpenMemoryBound(t *testing.T) {
	t.Parallel()
	const workers = 10_000
	var rec Recorder
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { rec.RecordOpen(w, 2*time.Millisecond, time.Millisecond, true, nil) })
	}
	wg.Wait()
	corrected, uncorrected := 0, 0
	for i := range rec.shards {
		if rec.shards[i].latency != nil {
			corrected++
		}
		if rec.shards[i].uncorrected != nil {
			uncorrected++
		}
	}
	if want := defaultShards(runtime.GOMAXPROCS(0)); corrected != want || uncorrected != want {
		t.Errorf("after %d workers the Recorder holds %d + %d histograms; want %d + %d", workers, corrected, uncorrected, want, want)
	}
	if got := rec.UncorrectedHistogram().TotalCount(); got != workers {
		t.Errorf("UncorrectedHistogram().TotalCount() = %d; want %d", got, workers)
	}
}

// TestShardPadding checks that shards fill whole cache lines, so neighbours
// never share one.
func TestShardPadding(t *testing.T) {
	t.Parallel()
	if size := unsafe.Sizeof(paddedShard{}); size%cacheLine != 0 {
		t.Errorf("unsafe.Sizeof(paddedShard{}) = %d; want a multiple of %d", size, cacheLine)
	}
}

// TestRecordLatencyClamp checks how Record maps latencies into the histogram.
func TestRecordLatencyClamp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		latency time.Duration
		wantUS  int64 // value the histogram should hold, in µs
	}{
		{name: "zero becomes 1µs", latency: 0, wantUS: 1},
		{name: "negative becomes 1µs", latency: -time.Second, wantUS: 1},
		{name: "sub-microsecond becomes 1µs", latency: 999 * time.Nanosecond, wantUS: 1},
		{name: "truncated to whole µs", latency: 1999 * time.Nanosecond, wantUS: 1},
		{name: "exact below 2048µs", latency: 183 * time.Microsecond, wantUS: 183},
		{name: "60s kept", latency: time.Minute, wantUS: MaxLatencyUS},
		{name: "over 60s clamps to 60s", latency: 2 * time.Hour, wantUS: MaxLatencyUS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rec Recorder
			rec.Record(0, tc.latency, true, nil)
			got := rec.Histogram()
			want := newLatencyHistogram()
			if err := want.RecordValue(tc.wantUS); err != nil {
				t.Fatalf("RecordValue(%d) = %v; want nil", tc.wantUS, err)
			}
			if got.TotalCount() != 1 {
				t.Fatalf("Record(0, %v, true, nil) recorded %d values; want 1", tc.latency, got.TotalCount())
			}
			if !got.Equals(want) {
				t.Errorf("Record(0, %v, true, nil) recorded [%d, %d] µs; want [%d, %d] (%d µs)",
					tc.latency, got.Min(), got.Max(), want.Min(), want.Max(), tc.wantUS)
			}
		})
	}
}

// TestRecordAllocs checks that Record and RecordOpen do not allocate once a shard is warm,
// on the success path and on the error path.
func TestRecordAllocs(t *testing.T) {
	rec := NewRecorder(0)
	timeout := fmt.Errorf("lua: evalsha: %w", strategies.ReplyError("NOSCRIPT No matching script"))
	rec.Record(1, time.Millisecond, false, timeout) // warm: histogram and map entry
	tests := []struct {
		name string
		err  error
	}{
		{name: "decision", err: nil},
		{name: "error reply", err: timeout},
	}
	rec.RecordOpen(1, time.Millisecond, time.Millisecond, false, timeout) // warm the uncorrected histogram
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := testing.AllocsPerRun(1000, func() { rec.Record(1, 250*time.Microsecond, true, tc.err) }); got != 0 {
				t.Errorf("Record(1, 250µs, true, %v) allocates %v times; want 0", tc.err, got)
			}
			if got := testing.AllocsPerRun(1000, func() { rec.RecordOpen(1, time.Millisecond, 250*time.Microsecond, true, tc.err) }); got != 0 {
				t.Errorf("RecordOpen(1, 1ms, 250µs, true, %v) allocates %v times; want 0", tc.err, got)
			}
		})
	}
}

// BenchmarkRecorderRecord isolates the cost of Record on the load
// generator's hot path: serial (uncontended shard), serial with an error
// reply (ErrorKind + map update), and parallel with one worker number per
// goroutine, as the workload runner does.
func BenchmarkRecorderRecord(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		rec := NewRecorder(0)
		b.ReportAllocs()
		for b.Loop() {
			rec.Record(0, 183*time.Microsecond, true, nil)
		}
	})
	b.Run("serial-error", func(b *testing.B) {
		rec := NewRecorder(0)
		err := fmt.Errorf("lua: evalsha: %w", strategies.ReplyError("WRONGTYPE Operation against a key holding the wrong kind of value"))
		b.ReportAllocs()
		for b.Loop() {
			rec.Record(0, 183*time.Microsecond, false, err)
		}
	})
	// parallel(p) runs p goroutines per CPU, each with its own worker number;
	// parallel(64) puts several workers on each shard, as a large run does.
	for _, p := range []int{1, 64} {
		b.Run(fmt.Sprintf("parallel(%d)", p), func(b *testing.B) {
			rec := NewRecorder(0)
			var nextWorker atomic.Int64
			b.SetParallelism(p)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := int(nextWorker.Add(1) - 1)
				for pb.Next() {
					rec.Record(w, 183*time.Microsecond, true, nil)
				}
			})
		})
	}
}

// BenchmarkRecorderBegin isolates what Begin adds to a decision's
// recording (the in-flight count of live metrics): Record alone, and Begin
// then Record with TrackInFlight, by one worker number per goroutine, 64
// per CPU.
func BenchmarkRecorderBegin(b *testing.B) {
	for _, begin := range []bool{false, true} {
		b.Run(fmt.Sprintf("begin=%t", begin), func(b *testing.B) {
			rec := NewRecorder(0)
			if begin {
				rec.TrackInFlight()
			}
			var nextWorker atomic.Int64
			b.SetParallelism(64)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := int(nextWorker.Add(1) - 1)
				for pb.Next() {
					if begin {
						rec.Begin(w)
					}
					rec.Record(w, 183*time.Microsecond, true, nil)
				}
			})
		})
	}
}

// BenchmarkRecorderRecordOpen isolates the cost of RecordOpen, the open
// loop's Record with a second histogram, serial and with one worker number
// per goroutine.
func BenchmarkRecorderRecordOpen(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		rec := NewRecorder(0)
		b.ReportAllocs()
		for b.Loop() {
			rec.RecordOpen(0, 683*time.Microsecond, 183*time.Microsecond, true, nil)
		}
	})
	for _, p := range []int{1, 64} {
		b.Run(fmt.Sprintf("parallel(%d)", p), func(b *testing.B) {
			rec := NewRecorder(0)
			var nextWorker atomic.Int64
			b.SetParallelism(p)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := int(nextWorker.Add(1) - 1)
				for pb.Next() {
					rec.RecordOpen(w, 683*time.Microsecond, 183*time.Microsecond, true, nil)
				}
			})
		})
	}
}

// TestDefaultShards checks the shard count of a Recorder given none: 8 per
// CPU, at most MaxShards.
func TestDefaultShards(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ procs, want int }{{0, 8}, {1, 8}, {2, 16}, {8, 64}, {64, 64}} {
		if got := defaultShards(tc.procs); got != tc.want {
			t.Errorf("defaultShards(%d) = %d; want %d", tc.procs, got, tc.want)
		}
	}
}

// TestInFlight counts the decisions begun and not yet recorded or
// abandoned, only once TrackInFlight was called, with no allocation.
// Not parallel: AllocsPerRun.
func TestInFlight(t *testing.T) {
	var off Recorder
	off.Begin(0)
	if got := off.InFlight(off.Totals()); got != 0 {
		t.Errorf("InFlight without TrackInFlight = %d; want 0", got)
	}
	var rec Recorder
	rec.TrackInFlight()
	for w := range 3 {
		rec.Begin(w)
	}
	rec.Record(0, time.Millisecond, true, nil)
	rec.Abandon(1)
	if got := rec.InFlight(rec.Totals()); got != 1 {
		t.Errorf("InFlight after 3 Begin, 1 Record, 1 Abandon = %d; want 1", got)
	}
	if got := testing.AllocsPerRun(100, func() { rec.Begin(5); rec.Abandon(5) }); got != 0 {
		t.Errorf("Begin and Abandon allocate %v times; want 0", got)
	}
}

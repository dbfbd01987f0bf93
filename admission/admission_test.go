package admission

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/rlbench/rlbench/strategies"
)

var (
	naiveInfo = strategies.Info{Name: "naive", FixedWindow: true, CountIsRead: true}
	luaInfo   = strategies.Info{Name: "lua", FixedWindow: true}
	gcraInfo  = strategies.Info{Name: "gcra"}
)

func allow(n int64) strategies.Decision  { return strategies.Decision{Allowed: true, Count: n} }
func reject(n int64) strategies.Decision { return strategies.Decision{Count: n} }

func TestOverAdmitted(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name      string
		info      strategies.Info
		limit     int64
		decisions []strategies.Decision
		want      int64
	}{
		{"naive exact", naiveInfo, 3, []strategies.Decision{allow(0), allow(1), allow(2), reject(3)}, 0},
		{"naive two workers read the same value", naiveInfo, 3, []strategies.Decision{allow(0), allow(1), allow(1), allow(2), reject(3)}, 1},
		{"naive two workers both create the counter", naiveInfo, 2, []strategies.Decision{allow(0), allow(0), allow(1), allow(1)}, 2},
		{"admissions in a window begun before the run are not counted", naiveInfo, 1, []strategies.Decision{allow(0)}, 0},
		{"naive window begun before the run", naiveInfo, 1, []strategies.Decision{allow(5), allow(5), allow(5)}, 0},
		{"lua exact", luaInfo, 3, []strategies.Decision{allow(1), allow(2), allow(3), reject(4)}, 0},
		// The reply ranked 2 reaches the recorder before the window's
		// first: it counts in the old window, whose highest rank stays 3.
		{"lua replies out of order", luaInfo, 3, []strategies.Decision{allow(1), allow(2), allow(3), reject(4), allow(2), allow(1), allow(3)}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(tc.info, 1, tc.limit, 1)
			for i, d := range tc.decisions {
				tr.Observe(0, d, time.Duration(i)*ms)
			}
			got := tr.Result().OverAdmitted
			if got == nil || *got != tc.want {
				t.Errorf("OverAdmitted after %v = %v; want %d", tc.decisions, got, tc.want)
			}
		})
	}
	if got := New(gcraInfo, 1, 3, 1).Result().OverAdmitted; got != nil {
		t.Errorf("OverAdmitted for a non-fixed-window strategy = %d; want nil", *got)
	}
}

func TestMaxAdmittedPerWindow(t *testing.T) {
	t.Parallel()
	const window = 1 // second; buckets of 50ms
	tests := []struct {
		name string
		at   []time.Duration // completion times of allowed decisions
		want int64
	}{
		{"none", nil, 0},
		{"one burst", []time.Duration{0, time.Millisecond, 2 * time.Millisecond}, 3},
		// 3 just before a boundary and 3 just after: a fixed window lets
		// both through; they fall within one window length.
		{"boundary burst", []time.Duration{950 * time.Millisecond, 960 * time.Millisecond, 970 * time.Millisecond,
			1010 * time.Millisecond, 1020 * time.Millisecond, 1030 * time.Millisecond}, 6},
		{"spread over two windows", []time.Duration{0, 100 * time.Millisecond, 1100 * time.Millisecond, 1200 * time.Millisecond}, 2},
		{"far apart", []time.Duration{0, 10 * time.Second, 20 * time.Second}, 1},
		{"late reply inside the span", []time.Duration{500 * time.Millisecond, 600 * time.Millisecond, 550 * time.Millisecond}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(gcraInfo, 1, 100, window)
			for _, at := range tc.at {
				tr.Observe(0, allow(1), at)
			}
			if got := tr.Result().MaxAdmittedPerWindow; got != tc.want {
				t.Errorf("MaxAdmittedPerWindow after %v = %d; want %d", tc.at, got, tc.want)
			}
		})
	}
}

func TestRejectionsAreNotAdmissions(t *testing.T) {
	t.Parallel()
	tr := New(luaInfo, 2, 1, 1)
	for i := 0; i < 10; i++ {
		tr.Observe(1, reject(int64(i+2)), 0)
	}
	if got := tr.Result().MaxAdmittedPerWindow; got != 0 {
		t.Errorf("MaxAdmittedPerWindow after only rejections = %d; want 0", got)
	}
}

// TestNaiveNewWindow checks that a creator well after the window's first
// opens a new window.
func TestNaiveNewWindow(t *testing.T) {
	t.Parallel()
	tr := New(naiveInfo, 1, 2, 1)
	for _, o := range []struct {
		d  strategies.Decision
		at time.Duration
	}{
		{allow(0), 0}, {allow(1), time.Millisecond}, {reject(2), 2 * time.Millisecond},
		{allow(0), 1100 * time.Millisecond}, {allow(1), 1101 * time.Millisecond},
	} {
		tr.Observe(0, o.d, o.at)
	}
	if got := tr.Result().OverAdmitted; got == nil || *got != 0 {
		t.Errorf("OverAdmitted over two windows of 2 each = %v; want 0", got)
	}
}

// decisionStream simulates decisions on keys counters of limit per window
// (1 s), one every 20µs on a random key: for naive, a fifth of the reads
// are stale (other workers read the same value), which over-admits; for
// an increment-first strategy, the server's count.
func decisionStream(info strategies.Info, keys int, limit int64, n int) (ks []int, ds []strategies.Decision, ats []time.Duration) {
	r := rand.New(rand.NewPCG(1, 2))
	count := make([]int64, keys)
	opened := make([]time.Duration, keys)
	for i := range n {
		k := r.IntN(keys)
		// Key k's share of the traffic grows with k, so that the busiest
		// keys lie beyond any sample of the first ones.
		if r.IntN(2) == 0 {
			k = keys - 1 - r.IntN(keys/10)
		}
		at := time.Duration(i) * 20 * time.Microsecond
		if count[k] == 0 || at-opened[k] >= time.Second {
			count[k], opened[k] = 0, at
		}
		var d strategies.Decision
		if info.CountIsRead {
			read := count[k]
			if r.IntN(5) == 0 {
				// Staler on busier keys: more workers read at once.
				read -= min(read, int64(1+r.IntN(1+k/50)))
			}
			d = strategies.Decision{Allowed: read < limit, Count: read}
			if d.Allowed {
				count[k]++
			}
		} else {
			count[k]++
			d = strategies.Decision{Allowed: count[k] <= limit, Count: count[k]}
		}
		ks, ds, ats = append(ks, k), append(ds, d), append(ats, at)
	}
	return ks, ds, ats
}

// TestSampleMatchesExact checks a Tracker that follows the first 100 of
// 1,000 keys against one that follows all of them, on the same decisions:
// the sample's figures are the exact tracker's largest over keys 0 to 99,
// and they are below the exact figures over all keys (the stream puts its
// busiest keys beyond the sample), so a sample that counted other keys
// would show.
func TestSampleMatchesExact(t *testing.T) {
	t.Parallel()
	const keys, tracked, limit = 1000, 100, 20
	for _, info := range []strategies.Info{naiveInfo, luaInfo, gcraInfo} {
		t.Run(info.Name, func(t *testing.T) {
			t.Parallel()
			exact := NewBounded(info, keys, keys, limit, 1)
			sample := NewBounded(info, keys, tracked, limit, 1)
			ks, ds, ats := decisionStream(info, keys, limit, 200_000)
			for i := range ks {
				exact.Observe(ks[i], ds[i], ats[i])
				sample.Observe(ks[i], ds[i], ats[i])
			}
			var wantOver, wantSpan int64
			for k := range tracked {
				ks := &exact.keys[k]
				wantOver, wantSpan = max(wantOver, ks.overMax), max(wantSpan, ks.spanMax)
			}
			got, all := sample.Result(), exact.Result()
			if got.AdmissionKeysTracked != int64(tracked) {
				t.Errorf("sample Result() keys tracked %d; want %d", got.AdmissionKeysTracked, tracked)
			}
			if all.AdmissionKeysTracked != 0 {
				t.Errorf("exact Result() keys tracked %d; want 0 (every key)", all.AdmissionKeysTracked)
			}
			if got.MaxAdmittedPerWindow != wantSpan || got.MaxAdmittedPerWindow >= all.MaxAdmittedPerWindow {
				t.Errorf("sample MaxAdmittedPerWindow = %d; want %d (exact over keys 0-%d), below %d (exact over all keys)",
					got.MaxAdmittedPerWindow, wantSpan, tracked-1, all.MaxAdmittedPerWindow)
			}
			if !info.FixedWindow {
				return
			}
			if *got.OverAdmitted != wantOver {
				t.Errorf("sample OverAdmitted = %d; want %d (exact over keys 0-%d)", *got.OverAdmitted, wantOver, tracked-1)
			}
			if info.CountIsRead && (wantOver == 0 || wantOver >= *all.OverAdmitted) {
				t.Errorf("naive: exact OverAdmitted %d over keys 0-%d, %d over all; want > 0 and below", wantOver, tracked-1, *all.OverAdmitted)
			}
		})
	}
}

// BenchmarkObserve measures one allowed decision on a followed key and on
// a key beyond the bound, which the Tracker ignores.
func BenchmarkObserve(b *testing.B) {
	for _, tc := range []struct {
		name string
		key  int
	}{{"followed", 7}, {"beyond", MaxTrackedKeys + 7}} {
		b.Run("key="+tc.name, func(b *testing.B) {
			tr := New(luaInfo, 2*MaxTrackedKeys, 1<<40, 60)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				tr.Observe(tc.key, allow(int64(i+1)), time.Duration(i)*time.Microsecond)
			}
		})
	}
}

// TestKeyStateSize guards the per-key cost that MaxTrackedKeys multiplies.
func TestKeyStateSize(t *testing.T) {
	if got := unsafe.Sizeof(keyState{}); got != 144 {
		t.Errorf("unsafe.Sizeof(keyState{}) = %d; want 144 (update the package doc)", got)
	}
}

// TestBucketSaturates checks that a full bucket stops counting, and that
// the running sum stays the ring's sum.
func TestBucketSaturates(t *testing.T) {
	t.Parallel()
	var ks keyState
	ks.ring[0], ks.spanSum = bucketMax-1, bucketMax-1
	ks.span(0)
	ks.span(0)
	if ks.ring[0] != bucketMax || ks.spanSum != bucketMax {
		t.Errorf("after two more admissions in a bucket one short of full: ring %d, spanSum %d; want %d, %d", ks.ring[0], ks.spanSum, int64(bucketMax), int64(bucketMax))
	}
	ks.span(SpanBuckets) // the bucket falls out of the span
	if ks.spanSum != 1 {
		t.Errorf("spanSum after the full bucket fell out = %d; want 1", ks.spanSum)
	}
}

// TestNewBound checks New's bound: keys beyond MaxTrackedKeys are not
// followed, and the Result says how many are.
func TestNewBound(t *testing.T) {
	t.Parallel()
	tr := New(gcraInfo, MaxTrackedKeys+5, 100, 1)
	tr.Observe(MaxTrackedKeys+1, allow(1), 0)
	tr.Observe(-1, allow(1), 0)
	if got := tr.Result(); got.AdmissionKeysTracked != MaxTrackedKeys || got.MaxAdmittedPerWindow != 0 {
		t.Errorf("New(%d keys) after admissions on keys beyond the bound: %+v; want tracked %d, none admitted", MaxTrackedKeys+5, got, MaxTrackedKeys)
	}
	tr.Observe(MaxTrackedKeys-1, allow(1), 0)
	if got := tr.Result().MaxAdmittedPerWindow; got != 1 {
		t.Errorf("MaxAdmittedPerWindow after an admission on the last followed key = %d; want 1", got)
	}
	if got := New(gcraInfo, 7, 100, 1).Result(); got.AdmissionKeysTracked != 0 {
		t.Errorf("New(7 keys).Result() = %+v; want every key tracked, not sampled", got)
	}
}

// TestCreationsInSpans checks that WatchSpans counts, per span, the fixed
// windows that start inside it (a decision counting 1), and that a
// strategy that is not a fixed window has no such count.
func TestCreationsInSpans(t *testing.T) {
	t.Parallel()
	tr := New(luaInfo, 3, 10, 60)
	tr.WatchSpans([]Span{{From: 0, To: time.Second}, {From: 2 * time.Second, To: 3 * time.Second}})
	tr.Observe(0, strategies.Decision{Allowed: true, Count: 1}, 100*time.Millisecond)
	tr.Observe(1, strategies.Decision{Allowed: true, Count: 1}, 500*time.Millisecond)
	tr.Observe(0, strategies.Decision{Allowed: true, Count: 2}, 2500*time.Millisecond)  // no new window
	tr.Observe(2, strategies.Decision{Allowed: false, Count: 1}, 2500*time.Millisecond) // not admitted
	if got, want := tr.Creations(), []int64{2, 0}; !slices.Equal(got, want) {
		t.Errorf("Creations() = %v; want %v", got, want)
	}
	other := New(gcraInfo, 3, 10, 60)
	other.WatchSpans([]Span{{From: 0, To: time.Second}})
	if got := other.Creations(); got != nil {
		t.Errorf("Creations() of gcra = %v; want nil", got)
	}
}

package metrics

import (
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	dto "github.com/prometheus/client_model/go"
)

// TestLatencyOf converts a recorder's histogram (microseconds) into
// Prometheus' buckets (seconds): the classic ones cumulative at their
// bounds, the native ones at schema 3, and the count and sum.
func TestLatencyOf(t *testing.T) {
	t.Parallel()
	h := hdrhistogram.New(1, 60_000_000, 3)
	_ = h.RecordValues(200, 100)     // 200µs
	_ = h.RecordValues(3000, 50)     // 3ms
	_ = h.RecordValues(2_400_000, 1) // 2.4s
	l := latencyOf(h)
	if l.count != 151 {
		t.Errorf("count = %d; want 151", l.count)
	}
	if want := (100*200e-6 + 50*3e-3 + 2.4); l.sum < want*0.999 || l.sum > want*1.001 {
		t.Errorf("sum = %v; want %v within 0.1%%", l.sum, want)
	}
	for _, tc := range []struct {
		le   float64
		want uint64
	}{{0.0001, 0}, {0.00025, 100}, {0.0025, 100}, {0.005, 150}, {1, 150}, {2.5, 151}, {60, 151}} {
		for i, b := range ClassicBuckets {
			if b == tc.le && l.classic[i] != tc.want {
				t.Errorf("bucket le=%v = %d; want %d", tc.le, l.classic[i], tc.want)
			}
		}
	}
	// 200µs: log2(0.0002) x 8 = -98.3, bucket -98; 3ms: -67.0.., bucket -67; 2.4s: 10.1.., bucket 11.
	for idx, want := range map[int]int64{-98: 100, -67: 50, 11: 1} {
		if got := l.native[idx]; got != want {
			t.Errorf("native bucket %d = %d; want %d (buckets %v)", idx, got, want, l.native)
		}
	}
}

// TestLatencyMetricHasBoth writes the histogram metric as a scrape in
// protobuf reads it: the native buckets (schema, spans, deltas) and the
// classic ones in one histogram.
func TestLatencyMetricHasBoth(t *testing.T) {
	t.Parallel()
	h := hdrhistogram.New(1, 60_000_000, 3)
	_ = h.RecordValues(200, 100)
	_ = h.RecordValues(3000, 50)
	m, err := latencyOf(h).metric(latencyDesc, time.Unix(1, 0), "t", "lua", "go-redis")
	if err != nil {
		t.Fatal(err)
	}
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	hist := out.GetHistogram()
	if hist.GetSchema() != NativeSchema || len(hist.GetPositiveSpan()) == 0 || len(hist.GetPositiveDelta()) != 2 {
		t.Errorf("native part: schema %d, spans %v, deltas %v; want schema %d and 2 buckets", hist.GetSchema(), hist.GetPositiveSpan(), hist.GetPositiveDelta(), NativeSchema)
	}
	if len(hist.GetBucket()) != len(ClassicBuckets) || hist.GetSampleCount() != 150 {
		t.Errorf("classic part: %d buckets, count %d; want %d buckets, count 150", len(hist.GetBucket()), hist.GetSampleCount(), len(ClassicBuckets))
	}
}

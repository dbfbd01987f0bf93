package metrics

import (
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// NativeSchema is the schema of the native latency histogram: buckets grow
// by a factor of 2^(1/8), about 9%, as client_golang's default
// NativeHistogramBucketFactor of 1.1 gives.
const NativeSchema = 3

// ClassicBuckets are the upper bounds of the classic latency buckets, in
// seconds, from 100µs to the recorder's 60 s ceiling.
var ClassicBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// latency is a cell's latency histogram in Prometheus' terms, converted
// from the recorder's HDR histogram (microseconds).
type latency struct {
	count uint64
	// sum is in seconds: the HDR histogram's mean times its count (it
	// keeps no exact sum), within its 3 significant digits.
	sum float64
	// native counts the values by native bucket index (NativeSchema).
	native map[int]int64
	// classic holds the cumulative counts at ClassicBuckets.
	classic []uint64
}

// latencyOf converts h, in microseconds. Each HDR bucket counts at its
// highest equivalent value, as the recorder's percentiles do.
func latencyOf(h *hdrhistogram.Histogram) latency {
	l := latency{
		count:   uint64(h.TotalCount()),
		sum:     h.Mean() * float64(h.TotalCount()) / 1e6,
		native:  make(map[int]int64),
		classic: make([]uint64, len(ClassicBuckets)),
	}
	if l.count == 0 {
		l.sum = 0
		return l
	}
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		s := float64(bar.To) / 1e6
		l.native[nativeIndex(s)] += bar.Count
		for i, le := range ClassicBuckets {
			if s <= le {
				l.classic[i] += uint64(bar.Count)
			}
		}
	}
	return l
}

// nativeIndex is the index of the native bucket (NativeSchema) that holds
// v > 0: bucket i holds (2^((i-1)/8), 2^(i/8)].
func nativeIndex(v float64) int {
	return int(math.Ceil(math.Log2(v) * (1 << NativeSchema)))
}

// metric is l as one Prometheus histogram with both the native buckets
// and the classic ones, labelled labelValues.
func (l latency) metric(desc *prometheus.Desc, created time.Time, labelValues ...string) (prometheus.Metric, error) {
	native, err := prometheus.NewConstNativeHistogram(desc, l.count, l.sum, l.native, nil, 0, NativeSchema, 0, created, labelValues...)
	if err != nil {
		return nil, err
	}
	buckets := make([]*dto.Bucket, len(ClassicBuckets))
	for i, le := range ClassicBuckets {
		buckets[i] = &dto.Bucket{UpperBound: &le, CumulativeCount: &l.classic[i]}
	}
	return withClassic{native, buckets}, nil
}

// withClassic is a native histogram that also carries classic buckets:
// a scrape in the text format reads these, one in protobuf reads both.
type withClassic struct {
	prometheus.Metric
	buckets []*dto.Bucket
}

// Write writes the native histogram, then adds the classic buckets.
func (m withClassic) Write(out *dto.Metric) error {
	if err := m.Metric.Write(out); err != nil {
		return err
	}
	out.Histogram.Bucket = m.buckets
	return nil
}

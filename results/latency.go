package results

import (
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latency summarises a latency histogram. Every field is in microseconds.
type Latency struct {
	// P50 is the median latency, in microseconds.
	P50 float64 `json:"p50"`
	// P90 is the 90th percentile latency, in microseconds.
	P90 float64 `json:"p90"`
	// P99 is the 99th percentile latency, in microseconds.
	P99 float64 `json:"p99"`
	// P999 is the 99.9th percentile latency, in microseconds.
	P999 float64 `json:"p999"`
	// Max is the highest latency recorded, in microseconds.
	Max float64 `json:"max"`
	// Mean is the arithmetic mean latency, in microseconds.
	Mean float64 `json:"mean"`
}

// LatencyOf summarises h, whose values are microseconds. Percentiles and Max
// are the highest value equivalent to the recorded ones at the histogram's
// precision. A nil or empty histogram gives the zero Latency.
func LatencyOf(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		P50:  float64(h.ValueAtQuantile(50)),
		P90:  float64(h.ValueAtQuantile(90)),
		P99:  float64(h.ValueAtQuantile(99)),
		P999: float64(h.ValueAtQuantile(99.9)),
		Max:  float64(h.Max()),
		Mean: h.Mean(),
	}
}

// Percentile is one point of a latency distribution.
type Percentile struct {
	// Quantile is the fraction of decisions at or below Value, e.g. 99.9.
	Quantile float64 `json:"q"`
	// ValueUS is the latency, in microseconds.
	ValueUS float64 `json:"us"`
}

// curveQuantiles are the points of a percentile curve: 0 to 99.9999, dense
// in the tail, as HdrHistogram's plots space them.
var curveQuantiles = []float64{0, 10, 20, 30, 40, 50, 60, 70, 75, 80, 85, 90, 92.5, 95, 96.25, 97.5, 98.125, 98.75, 99, 99.375, 99.5, 99.75, 99.875, 99.9, 99.95, 99.975, 99.99, 99.995, 99.999, 99.9999, 100}

// PercentilesOf returns h's percentile curve, in microseconds.
func PercentilesOf(h *hdrhistogram.Histogram) []Percentile {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	out := make([]Percentile, len(curveQuantiles))
	for i, q := range curveQuantiles {
		out[i] = Percentile{Quantile: q, ValueUS: float64(h.ValueAtQuantile(q))}
	}
	return out
}

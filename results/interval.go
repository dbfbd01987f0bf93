package results

import (
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Interval turns successive cumulative histograms into the latency of each
// interval between them, for a per-second time series. Its zero value is
// ready; the first interval runs from the start.
type Interval struct {
	last []int64 // the counts of the previous cumulative histogram
}

// Next returns the p50 and p99, in microseconds, of the decisions recorded
// since the previous call, given the cumulative histogram now (as from
// Recorder.Histogram). Both are 0 when there were none.
func (iv *Interval) Next(h *hdrhistogram.Histogram) (p50, p99 float64) {
	d := iv.NextHistogram(h)
	if d == nil {
		return 0, 0
	}
	return float64(d.ValueAtQuantile(50)), float64(d.ValueAtQuantile(99))
}

// NextHistogram returns the histogram of the decisions recorded since the
// previous call (of it or of Next), given the cumulative histogram now;
// nil when there were none.
func (iv *Interval) NextHistogram(h *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	s := h.Export()
	cur := s.Counts
	diff := make([]int64, len(cur))
	any := false
	for i, c := range cur {
		if i < len(iv.last) {
			c -= iv.last[i]
		}
		diff[i] = c
		any = any || c != 0
	}
	iv.last = cur
	if !any {
		return nil
	}
	s.Counts = diff
	return hdrhistogram.Import(s)
}

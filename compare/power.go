package compare

import (
	"math"
	"strconv"

	"golang.org/x/perf/benchmath"
)

// detectable estimates the smallest worsening, as a fraction of the
// baseline's median, that a U test of samples like b and n would find
// beyond the noise at thresholds' alpha: the file's samples, their spread
// kept, are moved to the baseline's median made worse by d, and d is the
// least for which the test's p-value reaches alpha (found by bisection, to
// 0.1% of the median). It is +Inf when no p-value of these sample sizes
// reaches alpha, or no move up to a 100% drop (throughput) or a 100-fold
// rise (latency) does; NaN for the error rate (any rise counts), a
// baseline median of 0, or no sample.
func detectable(m BaselineMetric, b, n *benchmath.Sample, thresholds *benchmath.Thresholds) float64 {
	base := median(b.Values)
	if m.AnyRise || base == 0 || len(b.Values) == 0 || len(n.Values) == 0 {
		return math.NaN()
	}
	if minP(len(b.Values), len(n.Values)) > thresholds.CompareAlpha {
		return math.Inf(1)
	}
	at := median(n.Values)
	sign := -1.0
	hi := 1.0
	if m.HigherIsWorse {
		sign, hi = 1, 100
	}
	moved := make([]float64, len(n.Values))
	found := func(d float64) bool {
		for i, v := range n.Values {
			moved[i] = v - at + base*(1+sign*d)
		}
		p := benchmath.AssumeNothing.Compare(b, benchmath.NewSample(moved, thresholds)).P
		return !(p > thresholds.CompareAlpha)
	}
	if !found(hi) {
		return math.Inf(1)
	}
	lo := 0.0
	for hi-lo > 0.001 {
		if mid := (lo + hi) / 2; found(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// formatDetectable formats a Detectable: "48.2%", "nothing" for +Inf,
// "-" for NaN.
func formatDetectable(v float64) string {
	switch {
	case math.IsNaN(v):
		return missing
	case math.IsInf(v, 1):
		return "nothing"
	}
	return strconv.FormatFloat(v*100, 'f', 1, 64) + "%"
}

// minP is the smallest p-value a two-sided Mann-Whitney U test of samples
// of n1 and n2 values can give: 2 / C(n1+n2, n1).
func minP(n1, n2 int) float64 {
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return min(1, 2/c)
}

// samplesNeeded is the fewest samples a side for which a U test can reach
// alpha.
func samplesNeeded(alpha float64) int {
	n := 1
	for minP(n, n) > alpha {
		n++
	}
	return n
}

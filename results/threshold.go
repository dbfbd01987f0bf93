package results

// ThresholdResult is one --threshold checked on one cell (package
// thresholds), serialised in the run's "thresholds".
type ThresholdResult struct {
	// Threshold is the expression as given, e.g. "p99<5ms".
	Threshold string `json:"threshold"`
	// Measured is the cell's figure in the threshold's unit: microseconds
	// for a latency, decisions per second for throughput, a count
	// otherwise; nil when the cell did not measure it (Note says why).
	Measured *float64 `json:"measured"`
	// Value is Measured as the summary shows it, e.g. "4.6ms".
	Value string `json:"value,omitempty"`
	// Pass is true when the threshold holds; a figure not measured fails.
	Pass bool `json:"pass"`
	// Note says why the figure was not measured (Measured nil), or
	// qualifies the one measured: "sampled 10000 of 50000 keys", errors
	// among the latencies, keys with no TTL by design.
	Note string `json:"note,omitempty"`
}

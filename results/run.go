package results

import (
	"runtime"

	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/saturation"

	"time"

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

// Audit is what a post-run scan of a run's counter keys found. It mirrors
// audit.Result field for field; the runner converts one into the other.
type Audit struct {
	// Keys is the number of counter keys the scan found.
	Keys int64 `json:"keys"`
	// Immortal is the number of counters with no TTL: their users stay
	// locked out once they reach the limit.
	Immortal int64 `json:"immortal"`
	// TTLOverWindow is the number of counters whose TTL exceeds the window.
	TTLOverWindow int64 `json:"ttl_over_window"`
	// Vanished is the number of keys that expired or disappeared during the scan.
	Vanished int64 `json:"vanished"`
}

// Server describes the Redis-compatible server the runs were made against.
type Server struct {
	// Addr is the server's address, host:port.
	Addr string `json:"addr"`
	// Name is the server's flavour: "redis" or "valkey".
	Name string `json:"name"`
	// Version is the server's version, e.g. "7.2.4".
	Version string `json:"version"`
	// Managed is true when rlbench started the server itself.
	Managed bool `json:"managed"`
}

// Run is the result of one strategy x client load phase.
type Run struct {
	// Target is the label of the server the run used, e.g. "127.0.0.1:6379"
	// or "redis-7.2" (see rlbench.TargetSpec).
	Target string `json:"target"`
	// Server is that server.
	Server *Server `json:"server,omitempty"`
	// Environment is what else shaped the figures: the client library's
	// version, Go, the CPUs.
	Environment *Environment `json:"environment,omitempty"`
	// Strategy is the strategy's registered name, e.g. "lua".
	Strategy string `json:"strategy"`
	// Client is the Redis client's name, e.g. "go-redis" or "rueidis".
	Client string `json:"client"`
	// ClientOptions describes the client's settings, e.g. "pool_size=500".
	ClientOptions string `json:"client_options"`
	// Clients is the number of concurrent workers.
	Clients int `json:"clients"`
	// DurationS is the measured wall time of the load phase, in seconds.
	DurationS float64 `json:"duration_s"`
	// StartedAt is the wall-clock start of the load phase, in UTC; the load
	// ran from StartedAt to StartedAt + DurationS. Zero in files written
	// before it was recorded.
	StartedAt time.Time `json:"started_at,omitzero"`
	// Decisions is the number of decision attempts: Allowed + Rejected + Errors.
	Decisions int64 `json:"decisions"`
	// Allowed is the number of requests admitted.
	Allowed int64 `json:"allowed"`
	// Rejected is the number of requests refused by the limiter.
	Rejected int64 `json:"rejected"`
	// Errors is the number of attempts that ended in an error.
	Errors int64 `json:"errors"`
	// ErrorKinds counts Errors by ErrorKind.
	ErrorKinds map[string]int64 `json:"error_kinds"`
	// ThroughputPerS is the rate of decision attempts, per second.
	ThroughputPerS float64 `json:"throughput_per_s"`
	// LatencyUS summarises the attempts' latencies, in microseconds. In an
	// open loop (Rate > 0) they are corrected: measured from each request's
	// intended start time on the schedule.
	LatencyUS Latency `json:"latency_us"`
	// LatencyUncorrectedUS summarises an open loop's latencies measured from
	// the moment each request was actually sent, in microseconds; nil for a
	// closed loop. A server stall shows in LatencyUS, much less here.
	LatencyUncorrectedUS *Latency `json:"latency_uncorrected_us,omitempty"`
	// Rate is the open loop's target rate, in decisions per second; 0 for a
	// closed loop.
	Rate float64 `json:"target_rate_per_s,omitempty"`
	// AchievedRatePerS is the rate at which an open loop started requests,
	// in requests per second (see workload.Result.Achieved); 0 for a closed
	// loop.
	AchievedRatePerS float64 `json:"achieved_rate_per_s,omitempty"`
	// ScheduleLagMS is how far behind its intended start time an open
	// loop's last request started, in milliseconds.
	ScheduleLagMS float64 `json:"schedule_lag_ms,omitempty"`
	// RateNote says that an open loop did not reach its target rate, by how
	// much and how far behind schedule it ended; "" when it did, and for a
	// closed loop.
	RateNote string `json:"rate_note,omitempty"`
	// OnError is the outage policy applied to a decision that failed:
	// "open" admits the request, "closed" rejects it.
	OnError string `json:"on_error"`
	// Admitted is the number of requests let through: Allowed, plus Errors
	// when OnError is "open".
	Admitted int64 `json:"admitted"`
	// Faults lists the faults injected during the load, in time order.
	Faults []faults.Event `json:"faults,omitempty"`
	// PerSecond is the load's time series, one entry per whole second.
	PerSecond []Second `json:"per_second"`
	// OverAdmitted is the largest number of requests admitted beyond the
	// limit in one fixed window of one key (see package admission); nil
	// for a strategy that is not a fixed window.
	OverAdmitted *int64 `json:"over_admitted"`
	// MaxAdmittedPerWindow is the largest number admitted for one key within
	// any span of one window length: up to twice the limit for a fixed
	// window, around a window boundary.
	MaxAdmittedPerWindow int64 `json:"max_admitted_per_window_span"`
	// AdmissionKeysTracked, when the run had more keys than package
	// admission follows (admission.MaxTrackedKeys), is how many keys
	// OverAdmitted and MaxAdmittedPerWindow cover, exactly: keys 0 to
	// AdmissionKeysTracked-1 ({0} to {N-1} under the cell's prefix). 0
	// (absent) when they cover every key.
	AdmissionKeysTracked int64 `json:"admission_keys_tracked,omitempty"`
	// Saturation says who was the busier side during the load: rlbench or
	// the server; nil when it could not be measured (e.g. after a restart).
	Saturation *saturation.Report `json:"saturation"`
	// ScriptFallbacks counts scripts sent again with EVAL after the server
	// answered NOSCRIPT to EVALSHA.
	ScriptFallbacks int64 `json:"script_fallbacks"`
	// ClusterErrors counts, by kind, the replies by which a cluster's nodes
	// turned commands away during the load: MOVED and ASK redirections
	// (which the clients follow without returning an error, so they are not
	// in Errors), TRYAGAIN and CLUSTERDOWN. The counts are the nodes' own,
	// from INFO errorstats on every master and replica (package redirects),
	// so on a cluster that others use too they include theirs. Nil for a
	// single server, for Redis before 6.2 (no INFO errorstats), and when the
	// nodes could not be read.
	ClusterErrors map[string]int64 `json:"cluster_errors,omitempty"`
	// Audit is what the post-run key scan found.
	Audit Audit `json:"audit"`
	// AuditPerNode is Audit for each master of a cluster target, by
	// host:port; nil for a single server.
	AuditPerNode map[string]Audit `json:"audit_per_node,omitempty"`
	// Percentiles is the latency percentile curve, for plots and compare.
	Percentiles []Percentile `json:"latency_percentiles"`
	// Histogram holds the latencies, in microseconds, for reporters that need
	// the whole distribution (e.g. .hgrm files). It is not serialised.
	Histogram *hdrhistogram.Histogram `json:"-"`
	// HistogramEncoded is Histogram in HdrHistogram's V2 compressed
	// encoding, base64 text, so that runs can be merged exactly (see
	// package merge); "" in files written before it was recorded.
	HistogramEncoded string `json:"latency_histogram,omitempty"`
}

// Second is one second of a run's time series.
type Second struct {
	// T is the end of the second, in seconds from the start of the load.
	T float64 `json:"t_s"`
	// Decisions, Allowed, Rejected and Errors count what happened in that second.
	Decisions int64 `json:"decisions"`
	Allowed   int64 `json:"allowed"`
	Rejected  int64 `json:"rejected"`
	Errors    int64 `json:"errors"`
	// P50US and P99US are the latency of that second's decisions, in
	// microseconds; 0 when there were none.
	P50US float64 `json:"p50_us"`
	P99US float64 `json:"p99_us"`
	// Immortal is the latest count of keys with no TTL from the periodic
	// audit (--audit-every); nil without one.
	Immortal *int64 `json:"immortal,omitempty"`
}

// NewRun fills the counters, error kinds, throughput, latency summaries,
// histogram (also encoded) and start time of a Run from rec and the measured
// wall time of the load phase.
// Strategy, client, worker count and audit are left for the caller. A
// non-positive elapsed gives zero throughput.
func NewRun(rec *Recorder, elapsed time.Duration) Run {
	t := rec.Totals()
	h := rec.Histogram()
	run := Run{
		DurationS:   elapsed.Seconds(),
		Decisions:   t.Decisions,
		Allowed:     t.Allowed,
		Rejected:    t.Rejected,
		Errors:      t.Errors,
		ErrorKinds:  rec.ErrorKinds(),
		LatencyUS:   LatencyOf(h),
		Percentiles: PercentilesOf(h),
		Histogram:   h,
	}
	// Encoding into memory cannot fail.
	if enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
		run.HistogramEncoded = string(enc)
	}
	// An estimate, assuming the load ended just now: a runner that noted
	// the time just before the load sets StartedAt exactly.
	run.StartedAt = time.Now().Add(-elapsed).UTC()
	if elapsed > 0 {
		run.ThroughputPerS = float64(t.Decisions) / elapsed.Seconds()
	}
	if u := rec.UncorrectedHistogram(); u != nil {
		l := LatencyOf(u)
		run.LatencyUncorrectedUS = &l
	}
	return run
}

// Environment records what shaped a run's figures besides the server and
// the configuration, so that files from different days compare honestly.
type Environment struct {
	// ClientModule and ClientVersion are the client library's Go module and
	// its version in this build, e.g. "github.com/redis/rueidis" "v1.0.79".
	ClientModule  string `json:"client_module"`
	ClientVersion string `json:"client_version"`
	// GoVersion is the Go toolchain that built rlbench.
	GoVersion string `json:"go_version"`
	// OS and Arch are the platform, e.g. "linux" "amd64".
	OS   string `json:"os"`
	Arch string `json:"arch"`
	// NumCPU is the number of logical CPUs; GOMAXPROCS the number Go uses.
	NumCPU     int `json:"num_cpu"`
	GOMAXPROCS int `json:"gomaxprocs"`
}

// EnvironmentOf returns the environment of a run with the given client
// module and version.
func EnvironmentOf(module, version string) *Environment {
	return &Environment{
		ClientModule:  module,
		ClientVersion: version,
		GoVersion:     runtime.Version(),
		OS:            runtime.GOOS,
		Arch:          runtime.GOARCH,
		NumCPU:        runtime.NumCPU(),
		GOMAXPROCS:    runtime.GOMAXPROCS(0),
	}
}

// Report is everything rlbench measured in one invocation.
type Report struct {
	// Tool is the name of the program that wrote the report: "rlbench".
	Tool string `json:"tool"`
	// Started is when the invocation started.
	Started time.Time `json:"started"`
	// Server is the server the runs were made against.
	Server Server `json:"server"`
	// Config is the invocation's configuration, marshalled as given.
	Config any `json:"config"`
	// Runs holds one entry per strategy x client load phase, in run order.
	Runs []Run `json:"runs"`
}

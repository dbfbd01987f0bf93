package results

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Run is the result of one cell: one target x strategy x client load
// phase. It is made of groups, each filled by the part of rlbench that
// measures it:
//
//   - Cell: what ran, where and with what (the runner);
//   - Load: when the load ran, its counts, throughput and latency summary
//     (the Recorder, through NewRun);
//   - OpenLoop: the open loop's schedule and uncorrected latencies; nil in a
//     closed loop (NewRun, and the runner from workload's result);
//   - Outage: what the --on-error policy made of failed decisions (the runner);
//   - Faults: the faults injected (package faults);
//   - PerSecond: the time series (the runner's per-second sampler);
//   - Admission: the over-admission of a fixed window (package admission);
//   - Saturation: who was the busier side (package saturation);
//   - ScriptFallbacks: scripts sent again after NOSCRIPT (the client adapter);
//   - Libraries: the Functions libraries loaded, reloaded and deleted (the
//     client adapter);
//   - Failover: a Sentinel failover's recovery and lost increments (the
//     runner's failover watch);
//   - Cluster: the cluster's redirections and errors (package redirects);
//   - Audits: the post-run key scan (package audit);
//   - Distribution: the latency percentile curve and histogram (the Recorder).
//
// The groups are embedded, so that their fields read as the run's own
// (run.Decisions) and the JSON is one flat object whose fields come in the
// order of this list. Each group has the Add that package merge combines
// runs with.
type Run struct {
	Cell
	Load
	*OpenLoop
	Outage
	// Faults lists the faults injected during the load, in time order.
	Faults []FaultEvent `json:"faults,omitempty"`
	// PerSecond is the load's time series, one entry per whole second.
	PerSecond []Second `json:"per_second"`
	// Stages are the figures of each stage of the load's shape (--stages),
	// in order; absent for a load with none.
	Stages []Stage `json:"stages,omitempty"`
	Admission
	// Saturation says who was the busier side during the load: rlbench or
	// the server; nil when it could not be measured (e.g. after a restart).
	Saturation *Saturation `json:"saturation"`
	// ScriptFallbacks counts scripts sent again with EVAL after the server
	// answered NOSCRIPT to EVALSHA during the measured load (not the
	// warm-up's, which loads the script on a server that lacks it).
	ScriptFallbacks int64 `json:"script_fallbacks"`
	// Libraries are the libraries of Redis Functions the cell's client
	// was given and what became of each; absent for a strategy with none.
	Libraries []Library `json:"function_libraries,omitempty"`
	// Thresholds are the --threshold results of the cell (package
	// thresholds), in the order given; absent without any.
	Thresholds []ThresholdResult `json:"thresholds,omitempty"`
	Failover
	Cluster
	Audits
	Distribution
}

// Cell is a run's identity and environment: the target, strategy and
// client, the client's settings and workers, and what else shaped the
// figures.
type Cell struct {
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
	// ImmortalKeysLeak is true when a key with no TTL that the strategy
	// left is a leak, not a locked-out user: the strategy is not a
	// fixed-window counter, or it heals, so a key gets a TTL again on its
	// next allowed request, and only a key nobody requests again keeps
	// none. False, the default, for a fixed-window counter that does not
	// heal: once at the limit, its user stays locked out.
	ImmortalKeysLeak bool `json:"immortal_keys_leak,omitempty"`
	// ImmortalByDesign is true when the strategy never sets a TTL
	// (strategies.Info.NoTTL, bucket4j's default): every key it writes has
	// none, and nothing will delete it.
	ImmortalByDesign bool `json:"immortal_by_design,omitempty"`
	// Client is the Redis client's name, e.g. "go-redis" or "rueidis".
	Client string `json:"client"`
	// ClientOptions describes the client's settings, e.g. "pool_size=500".
	ClientOptions string `json:"client_options"`
	// Workers is the number of concurrent workers.
	Workers int `json:"clients"`
	// UserCodeGuard says what confined a user strategy's code (--script,
	// --function): GuardStatic, the parse-time check alone, or
	// GuardStaticACL, that check and a temporary ACL user holding only the
	// cell's commands on its keys for the cell's whole load. "" for a
	// built-in strategy.
	UserCodeGuard string `json:"user_code_guard,omitempty"`
}

// The guards of user code, as Cell.UserCodeGuard names them.
const (
	GuardStatic    = "static"
	GuardStaticACL = "static+acl"
)

// Load is what the Recorder measured of a run's load phase: when it ran,
// how many decisions it made and how fast, and their latency summary.
type Load struct {
	// DurationS is the measured wall time of the load phase, in seconds.
	DurationS float64 `json:"duration_s"`
	// StartedAt is the wall-clock start of the load phase, in UTC; the load
	// ran from StartedAt to StartedAt + DurationS. Zero in files written
	// before it was recorded.
	StartedAt time.Time `json:"started_at,omitzero"`
	// Incomplete is true when the load phase did not run to its end (the
	// run was interrupted, or failed): its figures cover only part of it.
	// It is written "complete": false, and absent for a complete run, so
	// that files written before it existed read as complete.
	Incomplete Incomplete `json:"complete,omitzero"`
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
	// ThroughputPerS is the rate of decision attempts, per second:
	// Decisions / DurationS.
	ThroughputPerS float64 `json:"throughput_per_s"`
	// LatencyUS summarises the attempts' latencies, in microseconds. In an
	// open loop they are corrected: measured from each request's intended
	// start time on the schedule.
	LatencyUS Latency `json:"latency_us"`
}

// Incomplete is Load.Incomplete: true for a run that did not finish. Its
// JSON is the negation, "complete".
type Incomplete bool

// MarshalJSON writes i as "complete": false for true.
func (i Incomplete) MarshalJSON() ([]byte, error) {
	if i {
		return []byte("false"), nil
	}
	return []byte("true"), nil
}

// UnmarshalJSON reads "complete": true or false.
func (i *Incomplete) UnmarshalJSON(data []byte) error {
	switch string(data) {
	case "true", "null":
		*i = false
	case "false":
		*i = true
	default:
		return fmt.Errorf("complete: want true or false, got %s", data)
	}
	return nil
}

// OpenLoop is what an open loop (a target rate, workload.Config.Rate > 0)
// adds to a run: the latencies from the send, and how well the schedule
// was kept. A closed loop has none (Run.OpenLoop is nil).
type OpenLoop struct {
	// LatencyUncorrectedUS summarises the latencies measured from the
	// moment each request was actually sent, in microseconds; nil when no
	// request was sent. A server stall shows in LatencyUS, much less here.
	LatencyUncorrectedUS *Latency `json:"latency_uncorrected_us,omitempty"`
	// Rate is the target rate, in decisions per second.
	Rate float64 `json:"target_rate_per_s,omitempty"`
	// AchievedRatePerS is the rate at which requests were started, in
	// requests per second (see workload.Result.Achieved).
	AchievedRatePerS float64 `json:"achieved_rate_per_s,omitempty"`
	// ScheduleLagMS is the furthest behind schedule the loop fell, in
	// milliseconds: the largest lag of a request started (from its due
	// time), or of one never sent at its lower bound (the end of the run
	// minus its due time), whichever is larger.
	ScheduleLagMS float64 `json:"schedule_lag_ms,omitempty"`
	// ScheduleLagLastMS is how far behind its intended start time the last
	// request started, in milliseconds.
	ScheduleLagLastMS float64 `json:"schedule_lag_last_ms,omitempty"`
	// Unsent is the number of requests that fell due before the end of the
	// run and were never sent: they are in LatencyUS (the corrected
	// latency) at their lower bound, the end of the run minus their due
	// time, and in no decision count.
	Unsent int64 `json:"unsent,omitempty"`
	// RateNote says that the loop did not reach its target rate, by how
	// much, how many requests were never sent and how far behind schedule
	// it fell at worst; "" when it did.
	RateNote string `json:"rate_note,omitempty"`
}

// Outage is what the outage policy made of the decisions that failed.
type Outage struct {
	// OnError is the policy applied to a decision that failed: "open"
	// admits the request, "closed" rejects it.
	OnError string `json:"on_error"`
	// Admitted is the number of requests let through: Allowed, plus Errors
	// (less simulated crashes) when OnError is "open".
	Admitted int64 `json:"admitted"`
}

// Admission is how far a fixed window let requests through beyond its
// limit, from package admission.
type Admission struct {
	// OverAdmitted is the largest number of requests admitted beyond the
	// limit in one fixed window of one key; nil for a strategy that is not
	// a fixed window.
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
}

// Cluster is what a Redis Cluster's nodes said about the load.
type Cluster struct {
	// ClusterErrors counts, by kind (ClusterErrorKinds), the replies by
	// which a cluster's nodes turned commands away during the load: MOVED
	// and ASK redirections (which the clients follow without returning an
	// error, so they are not in Errors), TRYAGAIN and CLUSTERDOWN. The
	// counts are the nodes' own, from INFO errorstats on every master and
	// replica (package redirects), so on a cluster that others use too they
	// include theirs. Nil for a single server, for Redis before 6.2 (no
	// INFO errorstats), and when the nodes could not be read.
	ClusterErrors map[string]int64 `json:"cluster_errors,omitempty"`
}

// ClusterErrorKinds are the kinds of Cluster.ClusterErrors, in the order
// reports list them.
var ClusterErrorKinds = []string{"MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN"}

// Audits is what the post-run key scan found (package audit).
type Audits struct {
	// Audit is what the scan found over the whole target.
	Audit Audit `json:"audit"`
	// AuditPerNode is Audit for each master of a cluster target, by
	// host:port; nil for a single server.
	AuditPerNode map[string]Audit `json:"audit_per_node,omitempty"`
}

// Audit is what a scan of a run's counter keys found.
type Audit struct {
	// Keys is the number of counter keys the scan found.
	Keys int64 `json:"keys"`
	// Immortal is the number of counters with no TTL: their users stay
	// locked out once they reach the limit, or, for a strategy whose keys
	// get a TTL again (Cell.ImmortalKeysLeak), keys leaked.
	Immortal int64 `json:"immortal"`
	// TTLOverWindow is the number of counters whose TTL exceeds the window.
	TTLOverWindow int64 `json:"ttl_over_window"`
	// Vanished is the number of keys that expired or disappeared during the scan.
	Vanished int64 `json:"vanished"`
	// Fields is the number of hash fields the field audit examined, for a
	// strategy whose counters are hash fields; 0, and left out, otherwise.
	// A hash with no key TTL counts in Immortal only when one of its
	// fields has no TTL either.
	Fields int64 `json:"fields,omitempty"`
	// ImmortalFields is the number of hash fields with no TTL (HTTL -1):
	// their users stay locked out once they reach the limit.
	ImmortalFields int64 `json:"immortal_fields,omitempty"`
	// FieldTTLOverWindow is the number of hash fields whose TTL exceeds
	// the window.
	FieldTTLOverWindow int64 `json:"field_ttl_over_window,omitempty"`
	// HashesExpired is the number of hashes whose fields had all expired
	// when the scan read them.
	HashesExpired int64 `json:"hashes_expired,omitempty"`
	// Stamp is the stamp the strategy's keys carry in their name
	// (strategies.Info.Stamp: "unix", "unix-ms", "unix-ns", "index");
	// "hashed" when the name hashes its window, which then cannot be read
	// from it, and Stale is nil; "" for keys without one.
	Stamp string `json:"stamp,omitempty"`
	// Stale is how many of the Immortal keys of a stamped strategy hold a
	// window that had ended when the scan read them: a lost EXPIRE that
	// leaks memory (nothing deletes them), not a user locked out; the
	// others are live. nil when the keys carry no stamp, a hashed one, or
	// one that is not the last number of their name
	// (strategies.Info.StampHidden): the scan cannot read it.
	Stale *int64 `json:"stale,omitempty"`
	// Error says why the scan did not complete; its figures are then
	// unknown, and written as null.
	Error string `json:"error,omitempty"`
}

// MarshalJSON writes a failed audit's figures as null: a count the scan
// did not finish is not a zero.
func (a Audit) MarshalJSON() ([]byte, error) {
	type plain Audit
	if a.Error == "" {
		return json.Marshal(plain(a))
	}
	return json.Marshal(struct {
		Keys          *int64 `json:"keys"`
		Immortal      *int64 `json:"immortal"`
		TTLOverWindow *int64 `json:"ttl_over_window"`
		Vanished      *int64 `json:"vanished"`
		Error         string `json:"error"`
	}{Error: a.Error})
}

// figures is a's counts as the text table shows them: "?" when the audit
// failed.
func (a Audit) figures() (keys, immortal, overWindow string) {
	if a.Error != "" {
		return "?", "?", "?"
	}
	immortal = strconv.FormatInt(a.Immortal, 10)
	// No space inside a cell: the table splits on white space.
	switch {
	case a.Stale != nil:
		immortal += "(stale:" + strconv.FormatInt(*a.Stale, 10) + ")"
	case a.Stamp != "" && a.Immortal > 0:
		immortal += "(stale:?)"
	}
	return strconv.FormatInt(a.Keys, 10), immortal, strconv.FormatInt(a.TTLOverWindow, 10)
}

// Live is how many of a's immortal keys are not stale: all of them when
// the scan could not tell.
func (a Audit) Live() int64 {
	if a.Stale == nil {
		return a.Immortal
	}
	return a.Immortal - *a.Stale
}

// Distribution is the whole latency distribution of a run, in
// microseconds, from the Recorder.
type Distribution struct {
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
	// Stage is the number (from 1) of the load shape's stage (--stages)
	// at the middle of that second; 0, and absent, for a load with none.
	Stage int `json:"stage,omitempty"`
	// Target is the load shape's target at the middle of that second, in
	// workers or decisions per second (see Stage.Of); nil for a load with
	// no shape.
	Target *float64 `json:"target,omitempty"`
}

// NewRun fills the Load and Distribution of a Run from rec and the measured
// wall time of the load phase, and its OpenLoop's uncorrected latencies
// when rec recorded an open loop. The other groups are left for the caller.
// A non-positive elapsed gives zero throughput.
func NewRun(rec *Recorder, elapsed time.Duration) Run {
	t := rec.Totals()
	h := rec.Histogram()
	run := Run{
		Load: Load{
			DurationS:  elapsed.Seconds(),
			Decisions:  t.Decisions,
			Allowed:    t.Allowed,
			Rejected:   t.Rejected,
			Errors:     t.Errors,
			ErrorKinds: rec.ErrorKinds(),
			LatencyUS:  LatencyOf(h),
			// An estimate, assuming the load ended just now: a runner that
			// noted the time just before the load sets StartedAt exactly.
			StartedAt: time.Now().Add(-elapsed).UTC(),
		},
		Distribution: distributionOf(h),
	}
	if elapsed > 0 {
		run.ThroughputPerS = float64(t.Decisions) / elapsed.Seconds()
	}
	if u := rec.UncorrectedHistogram(); u != nil {
		l := LatencyOf(u)
		run.OpenLoop = &OpenLoop{LatencyUncorrectedUS: &l}
	}
	return run
}

// distributionOf is the Distribution of h.
func distributionOf(h *hdrhistogram.Histogram) Distribution {
	d := Distribution{Percentiles: PercentilesOf(h), Histogram: h}
	// Encoding into memory cannot fail.
	if enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
		d.HistogramEncoded = string(enc)
	}
	return d
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
	// Interrupted is true when an interrupt stopped the invocation before
	// every cell had run: some cells are missing, and the last run may be
	// Incomplete. Absent when every cell ran, and when a failure stopped it
	// (Failed, StoppedBy; files of earlier versions set it for both).
	Interrupted bool `json:"interrupted,omitempty"`
	// Failed is true when the invocation failed: a cell measured nothing
	// (no decision made, or every one failed), or a failure stopped it
	// before every cell had run (StoppedBy). Absent otherwise.
	Failed bool `json:"failed,omitempty"`
	// StoppedBy, when a failure stopped the invocation before every cell
	// had run (a cell could not connect, be measured or be audited), is
	// that failure's error: the cells after it are missing, and its keys
	// may remain. Absent when every cell ran, or an interrupt stopped it.
	StoppedBy string `json:"stopped_by,omitempty"`
	// Server is the server the runs were made against.
	Server Server `json:"server"`
	// Config is the invocation's configuration, marshalled as given.
	Config any `json:"config"`
	// Runs holds one entry per strategy x client load phase, in run order.
	Runs []Run `json:"runs"`
	// UnmatchedThresholds are the --thresholds whose STRATEGY/CLIENT:
	// matched no run, each failed (package thresholds); absent when none.
	UnmatchedThresholds []ThresholdResult `json:"thresholds_unmatched,omitempty"`
}

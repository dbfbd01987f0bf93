package peers

import (
	"time"

	"github.com/rlbench/rlbench/saturation"
)

// report is everything written to --out.
type report struct {
	Tool       string         `json:"tool"`
	Started    time.Time      `json:"started"`
	Command    []string       `json:"command"`
	Server     server         `json:"server"`
	ScriptSHA1 string         `json:"script_sha1"`
	CPUs       int            `json:"cpus"`
	Config     config         `json:"config"`
	Targets    []targetResult `json:"targets"`
	// Error is why the comparison stopped early; "" when it completed.
	Error string `json:"error,omitempty"`
}

type server struct {
	Addr    string `json:"addr"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

type config struct {
	Runs           int   `json:"runs"`
	SecondsPerSide int   `json:"seconds_per_side"`
	Keys           int   `json:"keys"`
	WindowS        int   `json:"window_s"`
	Limit          int64 `json:"limit"`
	// RedisBenchmarkThreads is redis-benchmark's --threads; 0 means the flag
	// was left out (one thread, its classic mode).
	RedisBenchmarkThreads int `json:"redis_benchmark_threads"`
}

// targetResult is one target's pairs and medians.
type targetResult struct {
	Name                   string `json:"name"`
	RlbenchClient          string `json:"rlbench_client"`
	RlbenchWorkers         int    `json:"rlbench_workers"`
	RedisBenchmarkClients  int    `json:"redis_benchmark_clients"`
	RedisBenchmarkPipeline int    `json:"redis_benchmark_pipeline"`
	Pairs                  []pair `json:"pairs"`
	// MedianRatio is the median of the pairs' ratios (not the ratio of the medians).
	MedianRatio              float64 `json:"median_ratio"`
	MedianRlbenchPerS        float64 `json:"median_rlbench_per_s"`
	MedianRedisBenchmarkPerS float64 `json:"median_redis_benchmark_per_s"`
	// MedianBareRatio is the median of the pairs' BareRatio, and
	// MedianBareLoopPerS the bare loop's median throughput.
	MedianBareRatio    float64 `json:"median_rlbench_per_bare_loop"`
	MedianBareLoopPerS float64 `json:"median_bare_loop_per_s"`
	// MedianCPURatio is the median of the pairs' CPURatio, and
	// MedianCPURBRatio of their CPURBRatio.
	MedianCPURatio   float64 `json:"median_cpu_rlbench_per_bare_loop"`
	MedianCPURBRatio float64 `json:"median_cpu_rlbench_per_redis_benchmark"`
	// The medians of each side's CPUPerDecisionUS, in microseconds.
	MedianRlbenchCPUUS        float64 `json:"median_rlbench_cpu_us_per_decision"`
	MedianBareLoopCPUUS       float64 `json:"median_bare_loop_cpu_us_per_decision"`
	MedianRedisBenchmarkCPUUS float64 `json:"median_redis_benchmark_cpu_us_per_request"`
}

// pair is one rlbench run and the bare loop and redis-benchmark runs right
// after it.
type pair struct {
	Run            int  `json:"run"`
	Rlbench        side `json:"rlbench"`
	BareLoop       side `json:"bare_loop"`
	RedisBenchmark side `json:"redis_benchmark"`
	// Ratio is Rlbench.PerS / RedisBenchmark.PerS.
	Ratio float64 `json:"ratio"`
	// BareRatio is Rlbench.PerS / BareLoop.PerS: rlbench's throughput as a
	// share of what the client alone makes.
	BareRatio float64 `json:"rlbench_per_bare_loop"`
	// CPURatio is Rlbench.CPUPerDecisionUS / BareLoop.CPUPerDecisionUS:
	// what a decision costs rlbench against the bare loop, in client CPU,
	// a figure that a busy machine disturbs less than throughput; 0 when
	// either is unknown.
	CPURatio float64 `json:"cpu_rlbench_per_bare_loop"`
	// CPURBRatio is Rlbench.CPUPerDecisionUS / RedisBenchmark.CPUPerDecisionUS;
	// 0 when either is unknown.
	CPURBRatio float64 `json:"cpu_rlbench_per_redis_benchmark"`
	// LoadAvg1 is the machine's 1-minute load average after the pair.
	LoadAvg1 float64 `json:"load_avg_1m"`
}

// side is one run of one tool.
type side struct {
	Command []string `json:"command"`
	// PerS is the tool's own figure, in requests per second: rlbench's
	// runs[0].throughput_per_s, the bare loop's per_s, redis-benchmark's
	// rps.
	PerS float64 `json:"per_s"`
	// Requests is what the tool says it sent: rlbench's and the bare
	// loop's decisions, redis-benchmark's -n.
	Requests int64 `json:"requests"`
	// ServerCalls is the EVALSHA calls the server counted during the run
	// (INFO commandstats), an independent check of Requests.
	ServerCalls int64 `json:"server_evalsha_calls"`
	// P50Ms and P99Ms are the tool's latency percentiles, in milliseconds.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	// WallS is the process's whole life, in seconds, start-up and (for
	// rlbench) the audit and clean-up included.
	WallS float64 `json:"wall_s"`
	// Saturation is measured from outside over the process's whole life:
	// client_cpu and peak_rss_bytes are the child process's (getrusage of
	// the child), server_cpu and connections_opened the server's.
	Saturation saturation.Report `json:"saturation"`
	// RlbenchSaturation is rlbench's own self-check over its load phase,
	// copied from its JSON when it reports one.
	RlbenchSaturation *saturation.Report `json:"rlbench_saturation,omitempty"`
	// CPUPerDecisionUS is the client's CPU per decision, in microseconds:
	// rlbench's own self-check over its load phase
	// (client_cpu_per_decision_us), the bare loop's CPU over its counted
	// loop, redis-benchmark's process CPU over its -n requests.
	CPUPerDecisionUS float64 `json:"cpu_us_per_decision,omitempty"`
	// ScriptFallbacks is rlbench's count of EVALSHA answered NOSCRIPT (0 once
	// the script is loaded); absent for redis-benchmark.
	ScriptFallbacks *int64 `json:"script_fallbacks,omitempty"`
}

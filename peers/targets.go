package peers

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// comparison is one comparison at matched shape: an rlbench client with
// workers workers, each with one request in flight, against
// redis-benchmark with rbClients connections of pipeline requests each.
type comparison struct {
	client    string // rlbench --client
	workers   int    // rlbench --clients, the bare loop's --clients
	rbClients int    // redis-benchmark -c
	pipeline  int    // redis-benchmark -P
}

// targets have the same requests in flight on both sides (workers =
// rbClients x pipeline), with rlbench's defaults otherwise: the pooled
// clients, go-redis and redigo (a connection per worker), against plain
// redis-benchmark -c 500; the pipelining ones, rueidis and valkey-go (their
// workers auto-pipelined over a few connections, gathered with
// workload.DefaultFlushDelay), against redis-benchmark -P 16, as 512 (-c 32)
// and as 8,000 (-c 500) requests in flight.
var targets = []comparison{
	{client: "go-redis", workers: 500, rbClients: 500, pipeline: 1},
	{client: "rueidis", workers: 512, rbClients: 32, pipeline: 16},
	{client: "rueidis", workers: 8000, rbClients: 500, pipeline: 16},
	{client: "valkey-go", workers: 512, rbClients: 32, pipeline: 16},
	{client: "valkey-go", workers: 8000, rbClients: 500, pipeline: 16},
	{client: "redigo", workers: 500, rbClients: 500, pipeline: 1},
}

// ErrUnknownClient is returned, wrapped, for an Options.Clients name that
// no target has.
var ErrUnknownClient = errors.New("no target has this client")

// CheckClients refuses a name among names that no target has
// (ErrUnknownClient), as Run would.
func CheckClients(names []string) error {
	_, err := selectTargets(names)
	return err
}

// selectTargets returns the targets of the clients named, in targets'
// order; none named means every target.
func selectTargets(names []string) ([]comparison, error) {
	if len(names) == 0 {
		return targets, nil
	}
	var have []string
	for _, t := range targets {
		if !slices.Contains(have, t.client) {
			have = append(have, t.client)
		}
	}
	for _, n := range names {
		if !slices.Contains(have, n) {
			return nil, fmt.Errorf("%q: %w (accepted: %s)", n, ErrUnknownClient, strings.Join(have, ", "))
		}
	}
	return slices.DeleteFunc(slices.Clone(targets), func(t comparison) bool { return !slices.Contains(names, t.client) }), nil
}

// legend explains the columns of header.
const legend = `per side: requests/s, then µs/op = the client's CPU time per request (rlbench's client_cpu_per_decision_us over its load; the bare loop's over its counted loop; redis-benchmark's process CPU over -n), then cpu = client/server cores over each process's life, C = client-bound, S = server-bound (package saturation)
/rb and /bare = rlbench/s over redis-benchmark/s and over bare/s, the bare loop of the same client, pool and script with no recording (cmd/bareloop, as many CPUs as rlbench); cpu/rb and cpu/bare = rlbench's µs/op over theirs; load = the 1-minute load average after the pair (/proc/loadavg)`

// header heads the pairs' lines.
var header = fmt.Sprintf("%-4s %10s %6s %-11s %10s %6s %-11s %10s %6s %-11s %6s %6s %7s %8s %5s",
	"run", "rlbench/s", "µs/op", "cpu", "bare/s", "µs/op", "cpu", "rb/s", "µs/op", "cpu", "/rb", "/bare", "cpu/rb", "cpu/bare", "load")

// newPair is run's pair of sides with its ratios and the load average.
func newPair(run int, a, bare, rb side) pair {
	p := pair{Run: run, Rlbench: a, BareLoop: bare, RedisBenchmark: rb, Ratio: a.PerS / rb.PerS, BareRatio: a.PerS / bare.PerS, LoadAvg1: loadAvg1()}
	if a.CPUPerDecisionUS > 0 && bare.CPUPerDecisionUS > 0 {
		p.CPURatio = a.CPUPerDecisionUS / bare.CPUPerDecisionUS
	}
	if a.CPUPerDecisionUS > 0 && rb.CPUPerDecisionUS > 0 {
		p.CPURBRatio = a.CPUPerDecisionUS / rb.CPUPerDecisionUS
	}
	return p
}

// line is the pair under header.
func (p pair) line() string {
	a, bare, rb := p.Rlbench, p.BareLoop, p.RedisBenchmark
	return fmt.Sprintf("%-4d %10.0f %6.2f %-11s %10.0f %6.2f %-11s %10.0f %6.2f %-11s %6.3f %6.3f %7.3f %8.3f %5.2f",
		p.Run, a.PerS, a.CPUPerDecisionUS, cpuCell(a.Saturation), bare.PerS, bare.CPUPerDecisionUS, cpuCell(bare.Saturation),
		rb.PerS, rb.CPUPerDecisionUS, cpuCell(rb.Saturation), p.Ratio, p.BareRatio, p.CPURBRatio, p.CPURatio, p.LoadAvg1)
}

// summarize sets tr's medians from its pairs. A CPU figure or ratio of 0
// is unknown (a side whose CPU could not be read) and is left out of its
// median, which would otherwise lean towards 0.
func (tr *targetResult) summarize() {
	var ratios, bareRatios, cpuRatios, cpuRBRatios, as, bares, rbs, aCPU, bareCPU, rbCPU []float64
	for _, p := range tr.Pairs {
		ratios, bareRatios = append(ratios, p.Ratio), append(bareRatios, p.BareRatio)
		cpuRatios, cpuRBRatios = appendKnown(cpuRatios, p.CPURatio), appendKnown(cpuRBRatios, p.CPURBRatio)
		as, bares, rbs = append(as, p.Rlbench.PerS), append(bares, p.BareLoop.PerS), append(rbs, p.RedisBenchmark.PerS)
		aCPU, bareCPU = appendKnown(aCPU, p.Rlbench.CPUPerDecisionUS), appendKnown(bareCPU, p.BareLoop.CPUPerDecisionUS)
		rbCPU = appendKnown(rbCPU, p.RedisBenchmark.CPUPerDecisionUS)
	}
	tr.MedianRatio, tr.MedianRlbenchPerS, tr.MedianRedisBenchmarkPerS = median(ratios), median(as), median(rbs)
	tr.MedianBareRatio, tr.MedianBareLoopPerS, tr.MedianCPURatio = median(bareRatios), median(bares), median(cpuRatios)
	tr.MedianCPURBRatio = median(cpuRBRatios)
	tr.MedianRlbenchCPUUS, tr.MedianBareLoopCPUUS, tr.MedianRedisBenchmarkCPUUS = median(aCPU), median(bareCPU), median(rbCPU)
}

// appendKnown appends v to xs when it is known: above 0.
func appendKnown(xs []float64, v float64) []float64 {
	if v > 0 {
		return append(xs, v)
	}
	return xs
}

// summary is tr's medians as one line.
func (tr *targetResult) summary() string {
	return fmt.Sprintf("median of %d pair(s): /rb %.3f, /bare %.3f, cpu/rb %.3f, cpu/bare %.3f (medians: rlbench %.0f/s %.2f µs/op, bare loop %.0f/s %.2f µs/op, redis-benchmark %.0f/s %.2f µs/op)",
		len(tr.Pairs), tr.MedianRatio, tr.MedianBareRatio, tr.MedianCPURBRatio, tr.MedianCPURatio,
		tr.MedianRlbenchPerS, tr.MedianRlbenchCPUUS, tr.MedianBareLoopPerS, tr.MedianBareLoopCPUUS,
		tr.MedianRedisBenchmarkPerS, tr.MedianRedisBenchmarkCPUUS)
}

// loadAvg1 is the machine's 1-minute load average from /proc/loadavg; 0
// where there is none.
func loadAvg1() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(data), " ")
	v, _ := strconv.ParseFloat(first, 64)
	return v
}

package peers

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	rlclients "github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/saturation"
	"github.com/rlbench/rlbench/workload"
)

func TestParseRedisBenchmarkCSV(t *testing.T) {
	t.Parallel()
	const header = `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"` + "\n"
	const row = `"evalsha aec4f180b77235580979d2b2e4cf454585b3bc23 1 rl:__rand_int__ 60","84104.29","4.961","1.272","4.383","9.351","11.687","17.375"` + "\n"
	tests := []struct {
		name    string
		out     string
		want    redisBenchmarkResult
		wantErr string // a substring of the error; "" for none
	}{
		{name: "redis 7.0 output", out: header + row, want: redisBenchmarkResult{rps: 84104.29, p50Ms: 4.383, p99Ms: 11.687}},
		{name: "warning before the header", out: "WARNING: Could not fetch server CONFIG\n" + header + row, want: redisBenchmarkResult{rps: 84104.29, p50Ms: 4.383, p99Ms: 11.687}},
		{name: "columns found by name", out: `"test","p99_latency_ms","rps","p50_latency_ms"` + "\n" + `"x","2","1000.50","1"` + "\n", want: redisBenchmarkResult{rps: 1000.5, p50Ms: 1, p99Ms: 2}},
		{name: "no header", out: "Error: Connection refused\n", wantErr: "no header line"},
		{name: "header not at a line start", out: `x "test","rps"` + "\n", wantErr: "no header line"},
		{name: "no row", out: header, wantErr: "no result row"},
		{name: "two rows", out: header + row + row, wantErr: "want one result row"},
		{name: "no rps column", out: `"test","qps","p50_latency_ms","p99_latency_ms"` + "\n", wantErr: `no "rps" column`},
		{name: "rps not a number", out: header + `"x","n/a","1","1","1","1","1","1"` + "\n", wantErr: "rps"},
		{name: "zero rps", out: header + `"x","0.00","1","1","1","1","1","1"` + "\n", wantErr: "want > 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseRedisBenchmarkCSV([]byte(tc.out))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("parseRedisBenchmarkCSV(%q) = (%+v, %v); want an error containing %q", tc.out, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("parseRedisBenchmarkCSV(%q) = (%+v, %v); want (%+v, nil)", tc.out, got, err, tc.want)
			}
		})
	}
}

func TestParseRlbench(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		json     string
		wantPerS float64
		wantSat  bool   // whether runs[0].saturation is present
		wantCPUs int    // runs[0].environment.gomaxprocs
		wantErr  string // a substring of the error; "" for none
	}{
		{name: "current report", json: `{"tool":"rlbench","runs":[{"strategy":"lua","decisions":850000,"errors":0,"throughput_per_s":85000.5,"latency_us":{"p50":5000,"p99":9000},"script_fallbacks":0,"environment":{"num_cpu":2,"gomaxprocs":1}}]}`, wantPerS: 85000.5, wantCPUs: 1},
		{name: "with a self-check", json: `{"tool":"rlbench","runs":[{"strategy":"lua","decisions":10,"throughput_per_s":5,"saturation":{"client_cpu":1.1,"server_cpu":0.8,"connections_opened":502,"peak_rss_bytes":1,"verdict":""}}]}`, wantPerS: 5, wantSat: true},
		{name: "no runs", json: `{"tool":"rlbench","runs":[]}`, wantErr: "no runs"},
		{name: "zero throughput", json: `{"tool":"rlbench","runs":[{"strategy":"lua","decisions":0,"throughput_per_s":0}]}`, wantErr: "want both > 0"},
		{name: "another tool's file", json: `{"tool":"vegeta","runs":[]}`, wantErr: "not an rlbench report"},
		{name: "not json", json: `runs: 1`, wantErr: "parse rlbench json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseRlbench([]byte(tc.json))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("parseRlbench(%s) = (%+v, %v); want an error containing %q", tc.json, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got.ThroughputPerS != tc.wantPerS || (got.Saturation != nil) != tc.wantSat || gomaxprocs(got) != tc.wantCPUs {
				t.Errorf("parseRlbench(%s) = (%+v, %v); want throughput_per_s %v, saturation present %t, gomaxprocs %d", tc.json, got, err, tc.wantPerS, tc.wantSat, tc.wantCPUs)
			}
		})
	}
}

func TestParseEvalshaStats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		text    string
		want    evalshaStats
		wantErr bool
	}{
		{name: "redis 7.0", text: "# Commandstats\r\ncmdstat_evalsha:calls=8659890,usec=34833082,usec_per_call=4.02,rejected_calls=2,failed_calls=3\r\ncmdstat_ttl:calls=5,usec=1\r\n", want: evalshaStats{calls: 8659890, failed: 5}},
		{name: "no evalsha yet", text: "# Commandstats\r\ncmdstat_eval:calls=1,usec=1\r\n"},
		{name: "before 6.2: no failed counters", text: "cmdstat_evalsha:calls=7,usec=9,usec_per_call=1.29\r\n", want: evalshaStats{calls: 7}},
		{name: "bad number", text: "cmdstat_evalsha:calls=x\r\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseEvalshaStats(tc.text)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseEvalshaStats(%q) = (%+v, %v); want (%+v, error %t)", tc.text, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestRequestsFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		rate    float64
		seconds int
		floor   int
		want    int64
	}{
		{name: "rate times seconds", rate: 84104.29, seconds: 10, floor: 500, want: 841043},
		{name: "rounded", rate: 0.5, seconds: 3, floor: 0, want: 2},
		{name: "at least the floor", rate: 100, seconds: 2, floor: 8000, want: 8000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := requestsFor(tc.rate, tc.seconds, tc.floor); got != tc.want {
				t.Errorf("requestsFor(%v, %d, %d) = %d; want %d", tc.rate, tc.seconds, tc.floor, got, tc.want)
			}
		})
	}
}

func TestCPUCell(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		client  float64
		server  float64
		verdict string
		want    string
	}{
		{name: "fine", client: 0.5, server: 0.5, want: "0.50/0.50"},
		{name: "client-bound", client: 1.1, server: 0.8, verdict: "client-bound: ...", want: "1.10/0.80 C"},
		{name: "server-bound", client: 0.4, server: 0.97, verdict: "server-bound: ...", want: "0.40/0.97 S"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := saturationReport(tc.client, tc.server, tc.verdict)
			if got := cpuCell(r); got != tc.want {
				t.Errorf("cpuCell(%+v) = %q; want %q", r, got, tc.want)
			}
		})
	}
}

// TestMeasuredSaturation checks that a child is judged against its own CPUs:
// 0.95 cores next to a server at 0.92 is client-bound for a child with one
// CPU, server-bound for one with two, and server-bound when unknown.
func TestMeasuredSaturation(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)
	m := measured{
		before: saturation.Sample{At: start},
		after:  saturation.Sample{At: start.Add(10 * time.Second), ProcessCPU: 9500 * time.Millisecond, ServerCPU: 9200 * time.Millisecond},
	}
	for _, tc := range []struct {
		cpus int
		want string
	}{{cpus: 1, want: "client-bound"}, {cpus: 2, want: "server-bound"}, {cpus: 0, want: "server-bound"}} {
		r := m.saturation(tc.cpus)
		if bound, _, _ := strings.Cut(r.Verdict, ":"); bound != tc.want || r.ClientCPUs != tc.cpus {
			t.Errorf("saturation(%d) = %+v; want %s with client_cpus %d", tc.cpus, r, tc.want, tc.cpus)
		}
	}
}

func saturationReport(client, server float64, verdict string) saturation.Report {
	return saturation.Report{ClientCPU: client, ServerCPU: server, Verdict: verdict}
}

// TestBenchmarkKeyLength checks that redis-benchmark's keys, once it has
// written __rand_int__ as 12 digits, are as long as rlbench's keys with as
// many digits as the highest: 5 of 100,000 keys, 7 of 10,000,000.
func TestBenchmarkKeyLength(t *testing.T) {
	t.Parallel()
	for _, client := range rlclients.Names {
		for _, keys := range []int{10, DefaultKeys, 10_000_000, workload.MaxKeys} {
			rb := strings.Replace(benchmarkKey(client, keys), "__rand_int__", "000000000001", 1)
			rl := workload.KeyName(keyspace.Cell(prefix, "lua", client), keys-1)
			if len(rb) != len(rl) || !strings.HasPrefix(rb, benchmarkPrefix) {
				t.Errorf("%s, %d keys: redis-benchmark key %q is %d bytes, rlbench's %q %d; want equal, under %q", client, keys, rb, len(rb), rl, len(rl), benchmarkPrefix)
			}
		}
	}
}

func TestPerDecisionUS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cpuS float64
		n    int64
		want float64
	}{
		{name: "2.5 s over 500,000", cpuS: 2.5, n: 500_000, want: 5},
		{name: "no decisions", cpuS: 1, n: 0, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := perDecisionUS(tc.cpuS, tc.n); got != tc.want {
				t.Errorf("perDecisionUS(%v, %d) = %v; want %v", tc.cpuS, tc.n, got, tc.want)
			}
		})
	}
}

// TestTargetsMatchShape checks that every target has as many requests in
// flight on both sides, that 512 and 8,000 on each pipelining client are
// among them, and that every client rlbench has is compared.
func TestTargetsMatchShape(t *testing.T) {
	t.Parallel()
	inFlight := map[string][]int{}
	for _, tg := range targets {
		if tg.workers != tg.rbClients*tg.pipeline {
			t.Errorf("target %+v: rlbench %d in flight, redis-benchmark %d x %d; want the same", tg, tg.workers, tg.rbClients, tg.pipeline)
		}
		inFlight[tg.client] = append(inFlight[tg.client], tg.workers)
	}
	for _, c := range []string{"rueidis", "valkey-go"} {
		if !slices.Equal(inFlight[c], []int{512, 8000}) {
			t.Errorf("%s targets in flight %v; want 512 and 8000", c, inFlight[c])
		}
	}
	for _, c := range rlclients.Names {
		if len(inFlight[c]) == 0 {
			t.Errorf("no target has client %s; want every client compared", c)
		}
	}
}

// TestSelectTargets checks Options.Clients: the named clients' targets in
// order, every target for none, an unknown name refused naming the known.
func TestSelectTargets(t *testing.T) {
	t.Parallel()
	got, err := selectTargets([]string{"valkey-go", "go-redis"})
	if err != nil || len(got) != 3 || got[0].client != "go-redis" || got[1].client != "valkey-go" || got[2].workers != 8000 {
		t.Errorf("selectTargets(valkey-go, go-redis) = %+v, %v; want go-redis 500, valkey-go 512 and 8000", got, err)
	}
	if all, err := selectTargets(nil); err != nil || len(all) != len(targets) {
		t.Errorf("selectTargets(nil) = %d targets, %v; want all %d", len(all), err, len(targets))
	}
	if _, err := selectTargets([]string{"jedis"}); !errors.Is(err, ErrUnknownClient) || !strings.Contains(err.Error(), "redigo") {
		t.Errorf("selectTargets(jedis) error = %v; want ErrUnknownClient naming the clients", err)
	}
}

// TestPairCPUPerRequest checks a pair's and a target's CPU ratios and
// medians: rlbench's CPU per request over redis-benchmark's and the bare
// loop's, the median of the pairs' ratios.
func TestPairCPUPerRequest(t *testing.T) {
	t.Parallel()
	var tr targetResult
	for i, us := range []float64{2, 4, 3} {
		tr.Pairs = append(tr.Pairs, newPair(i+1, side{PerS: 100, CPUPerDecisionUS: us}, side{PerS: 100, CPUPerDecisionUS: 1}, side{PerS: 200, CPUPerDecisionUS: 0.5}))
	}
	if p := tr.Pairs[0]; p.CPURBRatio != 4 || p.CPURatio != 2 || p.Ratio != 0.5 {
		t.Errorf("pair 1 = cpu/rb %v, cpu/bare %v, /rb %v; want 4, 2, 0.5", p.CPURBRatio, p.CPURatio, p.Ratio)
	}
	tr.summarize()
	if tr.MedianCPURBRatio != 6 || tr.MedianRlbenchCPUUS != 3 || tr.MedianRedisBenchmarkCPUUS != 0.5 {
		t.Errorf("medians = cpu/rb %v, rlbench %v µs, redis-benchmark %v µs; want 6, 3, 0.5", tr.MedianCPURBRatio, tr.MedianRlbenchCPUUS, tr.MedianRedisBenchmarkCPUUS)
	}
	if unknown := newPair(1, side{PerS: 1, CPUPerDecisionUS: 2}, side{PerS: 1}, side{PerS: 1}); unknown.CPURBRatio != 0 || unknown.CPURatio != 0 {
		t.Errorf("pair with unknown CPU = %+v; want no CPU ratios", unknown)
	}
}

// TestSummarizeUnknownCPU: a pair whose CPU could not be read (0) is left
// out of the CPU medians, not counted as 0 in rlbench's favour.
func TestSummarizeUnknownCPU(t *testing.T) {
	t.Parallel()
	mk := func(a, bare, rb float64) pair {
		return newPair(1, side{PerS: 100, CPUPerDecisionUS: a}, side{PerS: 100, CPUPerDecisionUS: bare}, side{PerS: 100, CPUPerDecisionUS: rb})
	}
	tr := targetResult{Pairs: []pair{mk(10, 5, 4), mk(12, 6, 4), mk(11, 0, 0)}}
	tr.summarize()
	if tr.MedianCPURatio != 2 || tr.MedianBareLoopCPUUS != 5.5 || tr.MedianRedisBenchmarkCPUUS != 4 || tr.MedianCPURBRatio != 2.75 {
		t.Errorf("summarize() with one pair's bare and redis-benchmark CPU unknown: cpu/bare %g, bare %g µs, rb %g µs, cpu/rb %g; want 2, 5.5, 4, 2.75 (the known ones' medians)",
			tr.MedianCPURatio, tr.MedianBareLoopCPUUS, tr.MedianRedisBenchmarkCPUUS, tr.MedianCPURBRatio)
	}
}

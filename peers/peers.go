// Package peers measures rlbench against redis-benchmark, the C load
// generator people already trust, on one private redis-server and the second
// seed's Lua script, so that a slow load generator cannot pass unnoticed;
// and against a bare loop of the same client (BareLoop, cmd/bareloop), so
// that rlbench's own cost is measured rather than inferred.
//
// For each target Run alternates the three (rlbench, bare loop,
// redis-benchmark, then bare loop, rlbench, redis-benchmark, and so on) on
// the same server and workload (the same requests in flight: rlbench's
// workers, redis-benchmark's -c x -P; Options.Keys random keys of the same
// length, 100,000 by default; EVALSHA of the same script), prints each
// run's throughput and CPU per request of each side, the ratios
// rlbench/redis-benchmark and rlbench/bare loop of both, and their medians,
// and writes every figure as JSON. It measures; it does not judge speed.
// cmd/benchpeers is its command line, and scripts/bench-peers.sh builds and
// runs that.
package peers

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/compare"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/excerpt"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/saturation"
	"github.com/rlbench/rlbench/strategies"
)

// The workload both tools run.
const (
	// window is the script's ARGV[1], in seconds.
	window = 60
	// limit is so high that every request takes the INCR path and is allowed.
	limit = 1_000_000_000
	// prefix is rlbench's --prefix: short, like redis-benchmark's keys.
	prefix = "rl:"
	// benchmarkPrefix starts redis-benchmark's keys: as long as prefix,
	// and another, since rlbench refuses a prefix that holds keys.
	benchmarkPrefix = "rb:"
)

// benchmarkKey is redis-benchmark's key pattern for the target of client
// with keys keys: as long as rlbench's key with the highest number,
// keyspace.Cell(prefix, "lua", client) then "{N}" (most of its keys
// when keys is a power of ten), since key length costs the server (see
// docs/performance.md for the measurement). redis-benchmark writes
// __rand_int__ as 12 digits, so its prefix is the cell prefix less 12 - the
// digits: with 100,000 keys "rb:lua:go{__rand_int__}" against
// "rl:lua:go-redis:{12345}".
func benchmarkKey(client string, keys int) string {
	cell := keyspace.Cell(benchmarkPrefix, "lua", client)
	return cell[:len(cell)-(12-len(strconv.Itoa(keys-1)))] + "{__rand_int__}"
}

// Time bounds on every child process.
const (
	// rlbenchSlack is what rlbench may take beyond --duration: start-up, and
	// the audit and clean-up of up to 100,000 keys.
	rlbenchSlack = 2 * time.Minute
	// calibrationTimeout bounds each redis-benchmark calibration run.
	calibrationTimeout = time.Minute
	// cliTimeout bounds each redis-cli call.
	cliTimeout = 10 * time.Second
	// waitDelay is how long a killed child may take to release its output.
	waitDelay = 5 * time.Second
)

// Options configure Run. Every field must be set except RBThreads and
// RedisServer; the Default... constants are cmd/benchpeers' flag defaults.
type Options struct {
	// Runs is the number of A B pairs per target, at least 1.
	Runs int
	// Seconds is how long each side of a pair runs, in seconds, at least 1.
	Seconds int
	// Keys is the key space of every side (rlbench --keys, the bare loop's
	// --keys, redis-benchmark -r), up to workload.MaxKeys; 0 means
	// DefaultKeys.
	Keys int
	// Out is the JSON file the report is written to.
	Out string
	// RBThreads is redis-benchmark's --threads; 0 leaves the flag out (its
	// classic single-threaded mode).
	RBThreads int
	// Rlbench, BareLoop (cmd/bareloop), RedisBenchmark and RedisCLI are
	// the binaries run, by path or looked up on PATH.
	Rlbench        string
	BareLoop       string
	RedisBenchmark string
	RedisCLI       string
	// RedisServer is the redis-server binary; "" means redis-server on PATH.
	RedisServer string
	// Clients, when not empty, runs only the targets of these rlbench
	// clients (an unknown one is ErrUnknownClient); empty runs every one.
	Clients []string
	// Command is the invocation, recorded in the report.
	Command []string
}

// Defaults, also cmd/benchpeers' flags'.
const (
	// DefaultRuns is the number of A B pairs per target.
	DefaultRuns = 5
	// DefaultSeconds is how long each side of a pair runs, in seconds.
	DefaultSeconds = 10
	// DefaultKeys is the key space.
	DefaultKeys = 100_000
	// ShortRuns and ShortSeconds are --short's pairs and seconds per side.
	ShortRuns    = 1
	ShortSeconds = 2
	// DefaultOut is the JSON file written.
	DefaultOut = "bench-peers.json"
)

// median is the middle of xs (the mean of the middle two for an even
// count), 0 for none.
func median(xs []float64) float64 { return compare.SpreadOf(xs).Median }

// bench holds what every run shares.
type bench struct {
	o      Options
	addr   string
	host   string
	port   string
	sha    string
	rdb    *redis.Client // samples the server between runs
	tmp    string        // rlbench's JSON files
	stdout io.Writer
}

// Run starts a private redis-server, checks that both tools run the same
// script, runs every target, prints each pair and the median to stdout, and
// writes the report to o.Out, also when a run failed part-way.
func Run(ctx context.Context, o Options, stdout io.Writer) (err error) {
	if o.Keys <= 0 {
		o.Keys = DefaultKeys
	}
	selected, err := selectTargets(o.Clients)
	if err != nil {
		return err
	}
	for _, bin := range []*string{&o.Rlbench, &o.BareLoop, &o.RedisBenchmark, &o.RedisCLI} {
		path, lerr := exec.LookPath(*bin)
		if lerr != nil {
			return fmt.Errorf("find %s: %w (scripts/bench-peers.sh builds bin/rlbench and bin/bareloop; redis-benchmark and redis-cli come with apt-get install redis-tools)", *bin, lerr)
		}
		*bin = path
	}
	tmp, err := os.MkdirTemp("", "benchpeers-")
	if err != nil {
		return fmt.Errorf("create temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)

	srv, err := redisserver.Start(ctx, redisserver.Options{Binary: o.RedisServer, Args: []string{"--maxclients", "20000"}})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := srv.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	rdb := connection.Admin{PoolSize: 1}.PlainClient(srv.Addr())
	defer rdb.Close()
	host, port, _ := strings.Cut(srv.Addr(), ":")
	b := &bench{o: o, addr: srv.Addr(), host: host, port: port, sha: strategies.SeedScript.SHA1, rdb: rdb, tmp: tmp, stdout: stdout}

	rep := report{
		Tool:       "bench-peers",
		Started:    time.Now().UTC(),
		Command:    o.Command,
		Server:     server{Addr: srv.Addr(), Name: srv.Info().Name, Version: srv.Info().Version},
		ScriptSHA1: b.sha,
		CPUs:       runtime.NumCPU(),
		Config: config{Runs: o.Runs, SecondsPerSide: o.Seconds, Keys: o.Keys,
			WindowS: window, Limit: limit, RedisBenchmarkThreads: o.RBThreads},
	}
	defer func() {
		if err != nil {
			rep.Error = err.Error()
		}
		if werr := writeJSON(o.Out, rep); werr != nil && err == nil {
			err = werr
		}
		if err == nil {
			fmt.Fprintf(stdout, "\nwrote %s\n", o.Out)
		}
	}()

	fmt.Fprintf(stdout, "bench-peers: private %s %s on %s, %d CPUs; %d pair(s) x %ds per side; %d random keys, EVALSHA of the lua strategy's script\n",
		rep.Server.Name, rep.Server.Version, rep.Server.Addr, rep.CPUs, o.Runs, o.Seconds, o.Keys)
	if err := b.checkScript(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "script %s: strategies.SeedScript's sha1, redis-cli SCRIPT LOAD's reply and the script rlbench's warm-up run cached all agree\n", b.sha)
	fmt.Fprintln(stdout, legend)

	return b.runTargets(ctx, selected, &rep)
}

// runTargets runs each target of selected in turn and appends its result
// to rep, also that of the target that failed.
func (b *bench) runTargets(ctx context.Context, selected []comparison, rep *report) error {
	for i, t := range selected {
		tr := targetResult{
			Name:                   fmt.Sprintf("%d: rlbench --client %s --clients %d vs redis-benchmark -c %d -P %d", i+1, t.client, t.workers, t.rbClients, t.pipeline),
			RlbenchClient:          t.client,
			RlbenchWorkers:         t.workers,
			RedisBenchmarkClients:  t.rbClients,
			RedisBenchmarkPipeline: t.pipeline,
		}
		terr := b.runTarget(ctx, i+1, t, &tr)
		rep.Targets = append(rep.Targets, tr)
		if terr != nil {
			return terr
		}
	}
	return nil
}

// checkScript proves that redis-benchmark will run the very script rlbench
// runs: a short rlbench run on the fresh server must leave SeedScript's SHA
// in the script cache (rlbench sends EVALSHA, then EVAL on NOSCRIPT), and
// redis-cli SCRIPT LOAD of the copy must answer the same SHA, which also
// loads it for redis-benchmark.
func (b *bench) checkScript(ctx context.Context) error {
	args := b.rlbenchArgs(targets[0], 1, 50, 1000, filepath.Join(b.tmp, "warmup.json"))
	if _, err := b.exec(ctx, time.Second+rlbenchSlack, "", b.o.Rlbench, args...); err != nil {
		return fmt.Errorf("rlbench warm-up: %w", err)
	}
	out, err := b.exec(ctx, cliTimeout, "", b.o.RedisCLI, "-h", b.host, "-p", b.port, "SCRIPT", "EXISTS", b.sha)
	if err != nil {
		return fmt.Errorf("script check: %w", err)
	}
	if got := strings.TrimSpace(string(out.stdout)); got != "1" {
		return fmt.Errorf("script check: after an rlbench --strategy lua run, SCRIPT EXISTS %s = %q; want 1: rlbench sent another script than strategies.SeedScript", b.sha, got)
	}
	// -x passes stdin as the last argument byte for byte; "$(cat file)" in a
	// shell would drop the trailing newline and change the SHA.
	out, err = b.exec(ctx, cliTimeout, strategies.SeedScript.Src, b.o.RedisCLI, "-h", b.host, "-p", b.port, "-x", "SCRIPT", "LOAD")
	if err != nil {
		return fmt.Errorf("script load: %w", err)
	}
	if got := strings.TrimSpace(string(out.stdout)); got != b.sha {
		return fmt.Errorf("script load: redis-cli SCRIPT LOAD answered %q; want the sha1 of the script, %s", excerpt.Text(got), b.sha)
	}
	return nil
}

// runTarget calibrates redis-benchmark's -n, then runs o.Runs pairs, printing
// each as it completes and the medians at the end.
func (b *bench) runTarget(ctx context.Context, num int, t comparison, tr *targetResult) error {
	threads := "single-threaded"
	if b.o.RBThreads > 0 {
		threads = fmt.Sprintf("--threads %d", b.o.RBThreads)
	}
	fmt.Fprintf(b.stdout, "\ntarget %d: rlbench --strategy lua --client %s --clients %d  vs  redis-benchmark -c %d -P %d (%s): %d requests in flight\n",
		num, t.client, t.workers, t.rbClients, t.pipeline, threads, t.workers)
	fmt.Fprintf(b.stdout, "keys of one length: rlbench %s{N}, redis-benchmark %s\n", keyspace.Cell(prefix, "lua", t.client), benchmarkKey(t.client, b.o.Keys))

	// redis-benchmark has no duration flag: it sends -n requests. A first
	// run of about a second gives the rate; each run's -n is then the median
	// rate so far times the seconds per side.
	guess := int64(25_000 * t.pipeline)
	cal, err := b.redisBenchmark(ctx, t, guess, calibrationTimeout)
	if err != nil {
		return fmt.Errorf("target %d: calibrate redis-benchmark: %w", num, err)
	}
	rates := []float64{cal.PerS}
	fmt.Fprintf(b.stdout, "calibration: redis-benchmark %.0f/s with -n %d\n", cal.PerS, guess)
	fmt.Fprintln(b.stdout, header)

	sideTimeout := time.Duration(b.o.Seconds) * time.Second
	procs := 0 // rlbench's GOMAXPROCS, which the bare loop is given
	for run := 1; run <= b.o.Runs; run++ {
		a, bare, err := b.rlbenchAndBare(ctx, t, run, &procs)
		if err != nil {
			return fmt.Errorf("target %d run %d: %w", num, run, err)
		}
		n := requestsFor(median(rates), b.o.Seconds, t.rbClients*t.pipeline)
		// A run takes about o.Seconds; the bound allows the rate to drop to a third.
		rb, err := b.redisBenchmark(ctx, t, n, 3*sideTimeout+30*time.Second)
		if err != nil {
			return fmt.Errorf("target %d run %d: %w", num, run, err)
		}
		rates = append(rates, rb.PerS)
		p := newPair(run, a, bare, rb)
		tr.Pairs = append(tr.Pairs, p)
		fmt.Fprintln(b.stdout, p.line())
	}
	tr.summarize()
	fmt.Fprintln(b.stdout, tr.summary())
	return nil
}

// rlbenchAndBare runs the rlbench side and the bare-loop side of one pair,
// rlbench first in odd runs and second in even ones, so that neither gains
// from its place (a server warmed by the side before, a drift in the
// machine's speed). The bare loop gets rlbench's GOMAXPROCS, *procs, which
// every rlbench side that runs first sets (the first run's, before any
// even run; rlbench's JSON always has it). Without it (*procs 0) the bare
// loop would have no GOMAXPROCS to match, so rlbench goes first.
func (b *bench) rlbenchAndBare(ctx context.Context, t comparison, run int, procs *int) (a, bare side, err error) {
	if run%2 == 0 && *procs > 0 {
		if bare, err = b.bareRun(ctx, t, *procs); err != nil {
			return a, bare, err
		}
		a, err = b.rlbenchRun(ctx, t, run)
		return a, bare, err
	}
	if a, err = b.rlbenchRun(ctx, t, run); err != nil {
		return a, bare, err
	}
	*procs = a.Saturation.ClientCPUs
	bare, err = b.bareRun(ctx, t, *procs)
	return a, bare, err
}

// cpuCell formats a side's client and server CPU, in cores, with a mark for
// the side that saturated: "1.10/0.80 C" (client-bound) or "0.45/0.97 S".
func cpuCell(r saturation.Report) string {
	mark := ""
	switch {
	case strings.HasPrefix(r.Verdict, "client-bound"):
		mark = " C"
	case strings.HasPrefix(r.Verdict, "server-bound"):
		mark = " S"
	}
	return fmt.Sprintf("%.2f/%.2f%s", r.ClientCPU, r.ServerCPU, mark)
}

// rlbenchArgs is the lua strategy on client against the shared server, with
// workers and keyCount keys, for seconds, writing its JSON to jsonPath.
func (b *bench) rlbenchArgs(t comparison, seconds, workers, keyCount int, jsonPath string) []string {
	return []string{
		"--strategy", "lua", "--client", t.client,
		"--clients", strconv.Itoa(workers), "--keys", strconv.Itoa(keyCount),
		"--window", strconv.Itoa(window), "--limit", strconv.Itoa(limit),
		"--addr", b.addr, "--duration", fmt.Sprintf("%ds", seconds),
		"--prefix", prefix, "--json", jsonPath, "-q",
	}
}

// rlbenchRun runs one rlbench side and reads its JSON.
func (b *bench) rlbenchRun(ctx context.Context, t comparison, run int) (side, error) {
	jsonPath := filepath.Join(b.tmp, fmt.Sprintf("rlbench-%s-%d.json", t.client, run))
	args := b.rlbenchArgs(t, b.o.Seconds, t.workers, b.o.Keys, jsonPath)
	m, err := b.measure(ctx, time.Duration(b.o.Seconds)*time.Second+rlbenchSlack, nil, b.o.Rlbench, args...)
	if err != nil {
		return side{}, fmt.Errorf("rlbench: %w", err)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		return side{}, fmt.Errorf("rlbench: read its --json: %w", err)
	}
	r, err := parseRlbench(data)
	if err != nil {
		return side{}, fmt.Errorf("rlbench: %s: %w", jsonPath, err)
	}
	if r.Errors > 0 {
		return side{}, fmt.Errorf("rlbench: %d of %d decisions failed (%v): the figure would not be comparable", r.Errors, r.Decisions, r.ErrorKinds)
	}
	s := side{
		Command:           append([]string{"rlbench"}, args...),
		PerS:              r.ThroughputPerS,
		Requests:          r.Decisions,
		P50Ms:             r.LatencyUS.P50 / 1000,
		P99Ms:             r.LatencyUS.P99 / 1000,
		WallS:             m.wall.Seconds(),
		Saturation:        m.saturation(gomaxprocs(r)),
		RlbenchSaturation: r.Saturation,
		ScriptFallbacks:   &r.ScriptFallbacks,
		ServerCalls:       m.calls.calls,
	}
	switch {
	case r.Saturation != nil && r.Saturation.ClientCPUPerDecisionUS > 0:
		s.CPUPerDecisionUS = r.Saturation.ClientCPUPerDecisionUS
	case r.Saturation != nil: // an rlbench from before client_cpu_per_decision_us
		s.CPUPerDecisionUS = perDecisionUS(r.Saturation.ClientCPU*r.DurationS, r.Decisions)
	}
	return s, b.checkCalls(s, m)
}

// redisBenchmark runs redis-benchmark for n requests and parses its CSV.
func (b *bench) redisBenchmark(ctx context.Context, t comparison, n int64, timeout time.Duration) (side, error) {
	pipelineDepth := t.pipeline
	args := []string{"-h", b.host, "-p", b.port, "-c", strconv.Itoa(t.rbClients), "-n", strconv.FormatInt(n, 10),
		"-r", strconv.Itoa(b.o.Keys), "-P", strconv.Itoa(pipelineDepth)}
	if b.o.RBThreads > 0 {
		args = append(args, "--threads", strconv.Itoa(b.o.RBThreads))
	}
	args = append(args, "--csv", "evalsha", b.sha, "1", benchmarkKey(t.client, b.o.Keys), strconv.Itoa(window))
	m, err := b.measure(ctx, timeout, nil, b.o.RedisBenchmark, args...)
	if err != nil {
		return side{}, fmt.Errorf("redis-benchmark: %w", err)
	}
	r, err := parseRedisBenchmarkCSV(m.stdout)
	if err != nil {
		return side{}, fmt.Errorf("redis-benchmark: %w", err)
	}
	s := side{
		Command:          append([]string{"redis-benchmark"}, args...),
		CPUPerDecisionUS: perDecisionUS(m.cpu.Seconds(), n), // its whole life: a few ms of start-up
		PerS:             r.rps,
		Requests:         n,
		P50Ms:            r.p50Ms,
		P99Ms:            r.p99Ms,
		WallS:            m.wall.Seconds(),
		Saturation:       m.saturation(max(b.o.RBThreads, 1)), // one thread unless --threads
		ServerCalls:      m.calls.calls,
	}
	return s, b.checkCalls(s, m)
}

// checkCalls fails a run whose EVALSHA calls failed on the server, or that
// the server saw fewer of than the tool claims.
func (b *bench) checkCalls(s side, m measured) error {
	if m.calls.failed > 0 {
		return fmt.Errorf("%s: the server failed or rejected %d EVALSHA calls", s.Command[0], m.calls.failed)
	}
	if float64(m.calls.calls) < 0.99*float64(s.Requests) {
		return fmt.Errorf("%s: the tool reports %d requests but the server counted %d EVALSHA calls", s.Command[0], s.Requests, m.calls.calls)
	}
	return nil
}

// requestsFor is the -n that keeps redis-benchmark busy for about seconds at
// rate requests/s, and at least floor (so that every connection gets work).
func requestsFor(rate float64, seconds int, floor int) int64 {
	n := int64(math.Round(rate * float64(seconds)))
	return max(n, int64(floor))
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/thresholds"
	"github.com/rlbench/rlbench/workload"
)

// loadOptions are the load run's settings: rlbench.Config and the command
// line's own.
type loadOptions struct {
	cfg            rlbench.Config
	jsonPath       string
	hdrDir         string
	cpuProfile     string
	procs          int
	quiet          bool
	debug          bool
	failOnImmortal bool
	listStrategies bool
	// metricsAddr is --metrics-addr: where to serve live metrics.
	metricsAddr string
	// thresholds are --threshold's, checked on every cell at the end.
	thresholds []thresholds.Threshold
	// The targets by flag, put in cfg.Targets in the documented order.
	redisServers, addrs, managed, clusters, managedSentinels []rlbench.TargetSpec
	// connection holds the login flags, --url and --sentinel.
	connection connectionFlags
}

func (c cli) newLoadFlagSet(o *loadOptions, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("rlbench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	cfg := &o.cfg
	fs.Var(newListValue(&cfg.Strategies, []string{"lua"}, "--strategy", strategies.Names()), "strategy", "strategies to run, comma-separated, or all ("+strings.Join(strategies.Names(), ", ")+")")
	fs.Var(newListValue(&cfg.Clients, []string{clients.Names[0]}, "--client", clients.Names), "client", "Redis clients to drive, comma-separated, or all ("+strings.Join(clients.Names, ", ")+")")
	fs.Var(newCountValue(&cfg.Workload.Workers, workload.DefaultWorkers, "--workers", workload.ErrInvalidWorkers), "workers", "concurrent workers, each in a closed loop; with --rate, the most requests in flight at once (R/s at latency L needs >= R x L)")
	// --clients is the name rlbench had first (beside --client, the
	// library): it stays, as an alias.
	fs.Var(newCountValue(&cfg.Workload.Workers, workload.DefaultWorkers, "--clients", workload.ErrInvalidWorkers), "clients", "alias of --workers")
	fs.DurationVar(&cfg.Workload.Duration, "duration", workload.DefaultDuration, "how long each strategy x client cell runs (0: until --requests are spent)")
	fs.Int64Var(&cfg.Workload.Requests, "requests", 0, "decisions per cell in total (0: no limit); whichever of --duration and --requests ends first stops the cell")
	fs.Var(newCountValue(&cfg.Workload.Keys, workload.DefaultKeys, "--keys", workload.ErrInvalidKeys), "keys", "distinct counters (rate-limited users)")
	fs.StringVar(&cfg.Workload.KeyDist, "key-dist", workload.DefaultKeyDist, "key distribution: uniform, zipf, or hot (half the requests on one key)")
	fs.Var(newCountValue(&cfg.Limit, strategies.DefaultLimit, "--limit", strategies.ErrInvalidLimit), "limit", "requests allowed per key per window")
	fs.Var(newCountValue(&cfg.Fields, 0, "--fields", strategies.ErrInvalidFields), "fields", "fields of each key's hash that a hash-field strategy (hash-*) spreads the key's requests over, one counter each (default 1)")
	cfg.Window = strategies.DefaultWindow
	fs.Var(&windowValue{p: &cfg.Window, text: strconv.Itoa(strategies.DefaultWindow)}, "window", "window length in whole seconds >= 1 (60, 60s and 1m are the same)")
	fs.Var(textValue{p: &cfg.Workload.Prefix, flag: "--prefix", hint: `leave out --prefix for "rlbench:<run-id>:"`}, "prefix", `key prefix; every key the run touches starts with it (default "rlbench:<run-id>:")`)
	fs.Uint64Var(&cfg.Workload.Seed, "seed", 1, "seed for the key choice")
	fs.Var(targetValue{specs: &o.addrs, flag: "--addr", kind: targetAddr}, "addr", "[LABEL=]host:port of an existing server, repeatable (default: start a private redis-server on a free loopback port)")
	fs.Var(targetValue{specs: &o.clusters, flag: "--cluster", kind: targetCluster}, "cluster", "[LABEL=]host:port[,host:port...] of nodes of an existing Redis Cluster, repeatable; the clients discover the rest and route by slot")
	fs.Var(targetValue{specs: &o.managed, flag: "--managed-cluster", kind: targetManagedCluster}, "managed-cluster", "[LABEL=]N[xR]: start a private Redis Cluster of N masters with R replicas each (redis-server on PATH) on free loopback ports, repeatable; stopped at the end")
	fs.Var(targetValue{specs: &o.managedSentinels, flag: "--managed-sentinel", kind: targetManagedSentinel}, "managed-sentinel", "[LABEL=]R: start a private master with R replicas and three sentinels on free loopback ports, repeatable; the clients reach it through the sentinels; stopped at the end")
	o.connection.add(fs)
	fs.BoolVar(&cfg.PrivateTLS, "private-tls", false, "start each private server with TLS only, with a certificate from a throwaway CA that rlbench generates and trusts (to measure what TLS costs)")
	fs.Var(targetValue{specs: &o.redisServers, flag: "--redis-server", kind: targetRedisServer}, "redis-server", "[LABEL=]PATH of a redis-server (or valkey-server) binary to start as a private server, repeatable (default: redis-server on PATH)")
	fs.DurationVar(&cfg.AuditEvery, "audit-every", 0, "also audit each cell's keys this often during the load, for the immortal count in the per-second series (0: only at the end)")
	fs.DurationVar(&cfg.Warmup, "warmup", rlbench.DefaultWarmup, "unrecorded load before each cell, on keys of its own (0: none)")
	addScriptTimeoutFlag(fs, &cfg.ScriptTimeout)
	fs.Var(startAtValue{p: &cfg.StartAt}, "start-at", "start the first cell's measured load (after its warm-up) at this instant, RFC 3339 or Unix seconds, so that several generators load the server together; must be in the future")
	fs.DurationVar(&cfg.FlushDelay, "rueidis-flush-delay", 0, "rueidis and valkey-go MaxFlushDelay: how long the pipeline waits after a write to gather the next batch; 0: none, rueidis' own default (default: 20us in a closed loop of at least 100 workers, else 0)")
	fs.IntVar(&cfg.Retries, "retries", 0, "times a client sends a command again after a network error: go-redis MaxRetries (every command, also one the server already ran: a retried INCR counts twice); rueidis and valkey-go retry read-only commands only (GET; never INCR, EXPIRE, EVAL, MULTI); redigo has none and refuses it (0: none)")
	fs.IntVar(&cfg.Connections, "connections", 0, "connection shape: connections each client opens to each server (each cluster node): go-redis pool size, redigo MaxActive (shared by the workers); rueidis and valkey-go pipelined connections, a power of two up to 256 (2^PipelineMultiplex); rueidis or valkey-go with --clients C*P and --connections C loads a server in the shape of redis-benchmark -c C -P P (0: the client's default: a pooled client one per worker, a pipelining one 2 on 2 cores)")
	fs.DurationVar(&cfg.DialTimeout, "dial-timeout", 0, "the clients' dial timeout (0: the client's default, 5s for both)")
	fs.DurationVar(&cfg.ReadTimeout, "read-timeout", 0, "the clients' timeout for a reply (0: the client's default: go-redis 5s; rueidis has one timeout for writes and replies, ConnWriteTimeout, 10s)")
	fs.DurationVar(&cfg.WriteTimeout, "write-timeout", 0, "the clients' timeout for a write (0: the client's default: go-redis the read timeout; rueidis takes --read-timeout's value, and refuses a different one)")
	fs.Float64Var(&cfg.Workload.CrashRate, "crash-rate", 0, "probability (0 to 1) that a worker dies mid-decision: between the commands of a non-atomic strategy; for an atomic one, at a random moment of the request, dropping its connection")
	fs.Float64Var(&cfg.Workload.Rate, "rate", 0, "open loop: decisions per second in total, sent on schedule whether or not earlier ones returned; latency counts from each one's intended start (0: closed loop)")
	fs.Var(stagesValue{p: &cfg.Workload.Stages}, "stages", "shape the load: DURATION:TARGET,... (e.g. 10s:100,30s:1000,10s:0): each stage moves the target linearly to its own over its duration; the target is the active workers (from 0; the pool, the highest target, opens before the load) or, with --rate R, the rate (from R); the run lasts the stages' sum (so not with --duration, nor --workers without --rate)")
	fs.DurationVar(&cfg.Workload.RacePause, "race-pause", 0, "pause between the read and the write of a non-atomic strategy, to widen its race")
	fs.Var(faultsValue{p: &cfg.Faults}, "fault", "inject a fault, repeatable: script-flush@T and stall@T:D (a private server, or --allow-server-wide-faults), restart@T (private server only), kill-clients@T, failover@T (--managed-cluster NxR only), reshard@T[:HOLD] (--managed-cluster only: moves the slot of the cell's first key to another master, migrating for HOLD), sentinel-failover@T (--managed-sentinel R with R >= 1: measures recovery and lost increments), split-brain@T:D (--managed-sentinel R with R >= 1: cuts the master off from its sentinels and replicas for D while the clients keep writing to it); on the load's connections only, through a proxy (a single server): latency@T:D:MS[~JITTER], reply-loss@T:D:P (the server runs the request, the reply is lost, the connection reset), partition@T:D (bytes vanish both ways: timeouts), reset@T (T from the start of each cell)")
	fs.IntVar(&cfg.MinReplicas, "min-replicas", 0, "min-replicas-to-write N on every node of each --managed-sentinel set-up: a master refuses writes (NOREPLICAS) unless N replicas acknowledged it within --min-replicas-max-lag (0: none; N at most R)")
	fs.IntVar(&cfg.MinReplicasMaxLag, "min-replicas-max-lag", 0, "min-replicas-max-lag in seconds, with --min-replicas (0: 1 s, as the set-up's down-after is 1 s)")
	fs.BoolVar(&cfg.AllowServerWideFaults, "allow-server-wide-faults", false, "let stall and script-flush act on a server rlbench did not start: a stall pauses every client of the server, a script flush empties every tenant's script cache (the report names the server)")
	fs.StringVar(&cfg.OnError, "on-error", rlbench.DefaultOnError, "outage policy for a decision that failed: open (admit) or closed (reject)")
	fs.StringVar(&o.jsonPath, "json", "", `write the whole result as JSON to this file ("-": to stdout, and the text to stderr)`)
	fs.StringVar(&o.hdrDir, "hdr-dir", "", "write each cell's latency histogram as an .hgrm percentile distribution into this directory (created if missing)")
	fs.Var(procsValue{p: &o.procs}, "procs", "CPUs rlbench's Go runtime uses at once, GOMAXPROCS, 1 to "+strconv.Itoa(maxProcs)+" (default: $GOMAXPROCS if set; else the Go runtime's default (the CPUs, or a container's quota) less one when a target runs on this machine (a private server or cluster, or a loopback address), leaving redis-server a CPU; else the runtime's default)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the whole run to this file (read it with go tool pprof)")
	fs.BoolVar(&cfg.KeepKeys, "keep-keys", false, "leave each run's keys in Redis after the audit (default: UNLINK them)")
	fs.BoolVar(&o.failOnImmortal, "fail-on-immortal", false, "exit with status 1 when any run leaves an immortal key")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve live Prometheus metrics at http://HOST:PORT/metrics during the run, e.g. 127.0.0.1:9464 (:9464 listens on every interface) (decisions, latency, in flight, immortal keys with --audit-every, faults; docs/metrics.md)")
	fs.Var(thresholdsValue{p: &o.thresholds}, "threshold", "pass/fail criterion checked on each cell at the end, repeatable, k6-style: [STRATEGY/CLIENT:]METRIC OP VALUE, e.g. p99<5ms, p99.9<50ms, throughput>10000, errors==0, immortal==0, over==0, phantom==0; any failed: exit status 1")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no live progress line")
	fs.BoolVar(&o.debug, "debug", false, "on SIGQUIT (Ctrl-\\), also write every goroutine's stack to stderr before the clean-up (as GOTRACEBACK set does)")
	addUserStrategyFlags(fs, &cfg.Scripts, &cfg.Functions, &cfg.Sequences)
	fs.BoolVar(&o.listStrategies, "list-strategies", false, "list the strategies and exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\nLoad-test rate-limiter counter strategies against a real Redis and count the\nimmortal keys (counters with no TTL) each leaves behind.\n\nFlags:\n%s", c.usageLines(), fs.FlagUsages())
	}
	return fs
}

// load is `rlbench [flags]`: it runs every strategy x client cell on every
// target, prints the report and writes the files the flags ask for.
func (c cli) load(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o loadOptions
	fs := c.newLoadFlagSet(&o, stderr)
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	reg, err := registerUserStrategies(fs, o.cfg.Scripts, o.cfg.Functions, o.cfg.Sequences, &o.cfg.Strategies)
	if err != nil {
		return err
	}
	if o.listStrategies {
		return printed(listStrategies(stdout, reg))
	}
	if o.debug && c.debug != nil {
		c.debug.Store(true)
	}
	if err := o.complete(fs); err != nil {
		return err
	}
	if p, err := o.cfg.Plan(); err == nil { // else Run refuses the Config
		if err := thresholds.CheckCells(o.thresholds, p.Strategies, p.Clients); err != nil {
			return badInput(fmt.Errorf("--threshold: %w", err))
		}
	}
	if n := procsToSet(o, fs.Changed("procs"), os.Getenv("GOMAXPROCS"), runtime.GOMAXPROCS(0)); n > 0 {
		defer c.setProcs(n)()
	}
	out, err := openLoadOutputs(o)
	if err != nil {
		return err
	}
	defer out.discard()

	// The text goes where the JSON does not: stderr under --json -.
	text := stdout
	if out.jsonStdout {
		text = stderr
	}
	opts := rlbench.Options{Log: stderr, Abort: c.abort}
	live, stopMetrics, err := serveMetrics(o.metricsAddr, stderr)
	if err != nil {
		return err
	}
	defer stopMetrics()
	opts.Metrics = live
	if !o.quiet && isTerminal(text) {
		opts.Progress = text
	}
	if err := out.startProfile(); err != nil {
		return err
	}
	rep, runErr := rlbench.Run(ctx, o.cfg, opts)
	if uerr, ok := errors.AsType[*rlbench.UsageError](runErr); ok {
		out.stopProfile()
		return badInput(errors.New(usageMessage(uerr, runFlags)))
	}
	// The files first: stdout may be a pipe that closes early.
	errs := []error{out.writeProfile()}
	if rep != nil && len(rep.Runs) > 0 {
		thresholdText, thresholdErr := checkThresholds(rep, o.thresholds)
		errs = append(errs, out.writeReport(rep, stdout))
		errs = append(errs, printed(results.Text(rep)(text)), printed(thresholdText(text)), thresholdErr)
		if o.failOnImmortal && anyImmortal(rep) {
			errs = append(errs, errReported)
		}
	}
	switch {
	case errors.Is(runErr, context.Canceled) && c.abort != nil && c.abort.Err() != nil:
		errs = append(errs, errors.New("interrupted twice; the cells that ran are above, and the keys left behind are named above"))
	case errors.Is(runErr, context.Canceled):
		errs = append(errs, errors.New("interrupted; the cells that ran are above, and the run's keys were deleted"))
	case runErr != nil:
		errs = append(errs, runErr)
	}
	return errors.Join(errs...)
}

// complete fills in what the flags leave to the command line: the password
// from the environment, the targets in order, the rueidis flush delay; and
// refuses a run with no end.
func (o *loadOptions) complete(fs *pflag.FlagSet) error {
	if err := o.completeStages(fs); err != nil {
		return err
	}
	if o.cfg.Workload.Duration == 0 && o.cfg.Workload.Requests == 0 {
		return badInput(fmt.Errorf("--duration: %w (--duration 0 needs --requests N)", workload.ErrNoEnd))
	}
	// Private servers first, then existing ones, then clusters: managed
	// ones, then existing ones; each in the order given.
	for _, ts := range [][]rlbench.TargetSpec{o.redisServers, o.addrs, o.managed, o.clusters, o.managedSentinels} {
		o.cfg.Targets = append(o.cfg.Targets, ts...)
	}
	if len(o.cfg.Targets)+len(o.connection.urls)+len(o.connection.sentinels) == 0 {
		// No target flag: the private server that Run would start, made
		// here to take the login flags as every target does (it logs in
		// with none, but --db is checked and the report's config says
		// the user and the db, as with any target).
		o.cfg.Targets = []rlbench.TargetSpec{{}}
	}
	// Then the --url targets and the --sentinel ones.
	if err := o.connection.apply(fs, &o.cfg); err != nil {
		return err
	}
	if err := o.connection.checkDB(o.cfg); err != nil {
		return err
	}
	if !fs.Changed("rueidis-flush-delay") {
		o.cfg.FlushDelay = workload.DefaultFlushDelay(o.cfg.Workload)
	}
	return nil
}

// completeStages leaves the duration, and a closed loop's workers, to
// --stages, and refuses the flags that would set them too.
func (o *loadOptions) completeStages(fs *pflag.FlagSet) error {
	wl := &o.cfg.Workload
	if len(wl.Stages) == 0 {
		return nil
	}
	total := workload.StagesDuration(wl.Stages)
	if fs.Changed("duration") {
		return badInput(fmt.Errorf("--duration conflicts with --stages: the run lasts the stages' sum, %s; leave out --duration", total))
	}
	wl.Duration = total
	if wl.Rate == 0 {
		for _, name := range []string{"workers", "clients"} {
			if fs.Changed(name) {
				return badInput(fmt.Errorf("--%s conflicts with --stages in a closed loop: the stages' targets are the workers (the highest, %d, is the pool); leave out --%s, or add --rate for an open loop whose stages are rates", name, workload.StagesWorkers(wl.Stages), name))
			}
		}
		wl.Workers = max(workload.StagesWorkers(wl.Stages), 1)
	}
	return nil
}

// procsToSet is the GOMAXPROCS the load run sets, or 0 to leave it as it
// is: --procs when given; else none when $GOMAXPROCS (env) is set; else
// rlbench.DefaultProcs of the runtime's current setting (which heeds a
// container's CPU quota).
func procsToSet(o loadOptions, procsGiven bool, env string, current int) int {
	n := o.procs
	switch {
	case procsGiven:
	case env != "":
		return 0
	default:
		n = rlbench.DefaultProcs(o.cfg, current)
	}
	if n == current {
		return 0
	}
	return n
}

// loadOutputs are the files a load run writes.
type loadOutputs struct {
	json, profile *outputFile // nil when not asked for, or --json -
	jsonStdout    bool        // --json -: the JSON goes to stdout
	hdrDir        string
	profileData   bytes.Buffer
	profiling     bool
}

// openLoadOutputs checks every output path before the run writes to Redis.
func openLoadOutputs(o loadOptions) (*loadOutputs, error) {
	out := &loadOutputs{hdrDir: o.hdrDir}
	var err error
	if o.jsonPath != "" {
		if out.json, err = openOutputFlag("--json", o.jsonPath); err != nil {
			return nil, err
		}
		out.jsonStdout = out.json == nil
	}
	if o.cpuProfile != "" {
		if out.profile, err = openOutput("--cpuprofile", o.cpuProfile); err != nil {
			out.discard()
			return nil, badInput(err)
		}
	}
	if o.hdrDir != "" {
		if err := checkDir(o.hdrDir); err != nil {
			out.discard()
			return nil, badInput(fmt.Errorf("--hdr-dir: %w", err))
		}
	}
	return out, nil
}

// checkDir creates dir if it is missing and checks that it can hold a new
// file.
func checkDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, tempPattern(filepath.Join(dir, "probe")))
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", dir, pathErrorCause(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// discard removes the temporary files of the files not written.
func (out *loadOutputs) discard() {
	out.json.discard()
	out.profile.discard()
}

// startProfile starts the CPU profile, into memory until the run ends.
func (out *loadOutputs) startProfile() error {
	if out.profile == nil {
		return nil
	}
	if err := pprof.StartCPUProfile(&out.profileData); err != nil {
		return badInput(fmt.Errorf("--cpuprofile: %w", err))
	}
	out.profiling = true
	return nil
}

// stopProfile stops the CPU profile, if it runs.
func (out *loadOutputs) stopProfile() {
	if out.profiling {
		pprof.StopCPUProfile()
		out.profiling = false
	}
}

// writeProfile stops the CPU profile and writes its file.
func (out *loadOutputs) writeProfile() error {
	if out.profile == nil {
		return nil
	}
	out.stopProfile()
	return out.profile.write(func(w io.Writer) error {
		_, err := out.profileData.WriteTo(w)
		return err
	})
}

// writeReport writes the --json file (or the JSON to stdout) and the
// --hdr-dir files.
func (out *loadOutputs) writeReport(rep *results.Report, stdout io.Writer) error {
	var errs []error
	if out.json != nil || out.jsonStdout {
		errs = append(errs, writeJSONReport(out.json, results.JSON(rep), stdout))
	}
	if out.hdrDir != "" {
		for _, r := range rep.Runs {
			f, err := openOutput("--hdr-dir", filepath.Join(out.hdrDir, r.HGRMName()))
			if err == nil {
				err = f.write(results.HGRM(r.Histogram))
			}
			if err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	return errors.Join(errs...)
}

func listStrategies(w io.Writer, reg *strategies.Registry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STRATEGY\tATOMIC\tHEALS\tREDIS\tCLIENTS\tCODE\tKEYS\tCOMMANDS\tDESCRIPTION")
	for _, s := range reg.All() {
		commands := s.Commands
		if s.Module != "" {
			// Recorded by a strategies.Tap on a real server (strategies/published).
			commands = "observed: " + commands
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t>= %s\t%s\t%s\t%s\t%s\t%s\n", s.Name, yesNo(s.Atomic), yesNo(s.Heals), s.MinRedis,
			s.ClientsText(), s.Origin(), s.KeysText(), commands, s.Summary)
	}
	return tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func anyImmortal(rep *results.Report) bool {
	for _, r := range rep.Runs {
		if r.Audit.Immortal > 0 {
			return true
		}
	}
	return false
}

// Command rlbench load-tests rate-limiter counter strategies against a real
// Redis and counts the immortal keys (counters with no TTL) they leave.
//
//	rlbench --strategy lua --clients 500
//	rlbench --strategy naive,multi-nx,lua --client go-redis,rueidis --clients 200 --keys 10 --window 1 --duration 10s --json out.json
//
// It parses flags into an rlbench.Config, calls rlbench.Run and prints the
// report; every other piece of logic lives in the library packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/workload"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // the run failed, or --fail-on-immortal found immortal keys
	exitUsage   = 2 // bad input: nothing was written to Redis
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the command line's own settings, beside rlbench.Config.
type options struct {
	cfg            rlbench.Config
	window         string
	jsonPath       string
	hdrDir         string
	cpuProfile     string
	procs          int
	quiet          bool
	failOnImmortal bool
	listStrategies bool
	faults         []string
	addrs          []string
	redisServers   []string
	clusters       []string
	managed        []string
}

func newFlagSet(o *options, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("rlbench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	c := &o.cfg
	fs.StringSliceVar(&c.Strategies, "strategy", []string{"lua"}, "strategies to run, comma-separated, or all ("+strings.Join(strategies.Names(), ", ")+")")
	fs.StringSliceVar(&c.Clients, "client", []string{clients.Names[0]}, "Redis clients to drive, comma-separated, or all ("+strings.Join(clients.Names, ", ")+")")
	fs.IntVar(&c.Workload.Clients, "clients", workload.DefaultClients, "concurrent workers, each in a closed loop; with --rate, the most requests in flight at once (R/s at latency L needs >= R x L)")
	fs.DurationVar(&c.Workload.Duration, "duration", workload.DefaultDuration, "how long each strategy x client cell runs (0: until --requests are spent)")
	fs.Int64Var(&c.Workload.Requests, "requests", 0, "decisions per cell in total (0: no limit); whichever of --duration and --requests ends first stops the cell")
	fs.IntVar(&c.Workload.Keys, "keys", workload.DefaultKeys, "distinct counters (rate-limited users)")
	fs.StringVar(&c.Workload.KeyDist, "key-dist", workload.DefaultKeyDist, "key distribution: uniform, zipf, or hot (half the requests on one key)")
	fs.Int64Var(&c.Limit, "limit", strategies.DefaultLimit, "requests allowed per key per window")
	fs.StringVar(&o.window, "window", strconv.Itoa(strategies.DefaultWindow), "window length in whole seconds >= 1 (60, 60s and 1m are the same)")
	fs.StringVar(&c.Workload.Prefix, "prefix", "", `key prefix; every key the run touches starts with it (default "rlbench:<run-id>:")`)
	fs.Uint64Var(&c.Workload.Seed, "seed", 1, "seed for the key choice")
	fs.StringArrayVar(&o.addrs, "addr", nil, "[LABEL=]host:port of an existing server, repeatable (default: start a private redis-server on a free loopback port)")
	fs.StringArrayVar(&o.clusters, "cluster", nil, "[LABEL=]host:port[,host:port...] of nodes of an existing Redis Cluster, repeatable; the clients discover the rest and route by slot")
	fs.StringArrayVar(&o.managed, "managed-cluster", nil, "[LABEL=]N[xR]: start a private Redis Cluster of N masters with R replicas each (redis-server on PATH) on free loopback ports, repeatable; stopped at the end")
	fs.StringVar(&c.Password, "password", "", "password for --addr (default: $REDISCLI_AUTH)")
	fs.IntVar(&c.DB, "db", 0, "database number on every server")
	fs.StringArrayVar(&o.redisServers, "redis-server", nil, "[LABEL=]PATH of a redis-server (or valkey-server) binary to start as a private server, repeatable (default: redis-server on PATH)")
	fs.DurationVar(&c.AuditEvery, "audit-every", 0, "also audit each cell's keys this often during the load, for the immortal count in the per-second series (0: only at the end)")
	fs.DurationVar(&c.Warmup, "warmup", rlbench.DefaultWarmup, "unrecorded load before each cell, on keys of its own (0: none)")
	fs.DurationVar(&c.FlushDelay, "rueidis-flush-delay", 0, "rueidis MaxFlushDelay: how long its pipeline waits after a write to gather the next batch; 0: none, rueidis' own default (default: 20us in a closed loop of at least 100 workers, else 0)")
	fs.Float64Var(&c.Workload.CrashRate, "crash-rate", 0, "probability (0 to 1) that a worker dies mid-decision: between the commands of a non-atomic strategy; for an atomic one, at a random moment of the request, dropping its connection")
	fs.Float64Var(&c.Workload.Rate, "rate", 0, "open loop: decisions per second in total, sent on schedule whether or not earlier ones returned; latency counts from each one's intended start (0: closed loop)")
	fs.DurationVar(&c.Workload.RacePause, "race-pause", 0, "pause between the read and the write of a non-atomic strategy, to widen its race")
	fs.StringArrayVar(&o.faults, "fault", nil, "inject a fault, repeatable: script-flush@T, restart@T (private server only), stall@T:D, kill-clients@T, failover@T (--managed-cluster NxR only), reshard@T[:HOLD] (--managed-cluster only: moves the slot of the cell's first key to another master, migrating for HOLD) (T from the start of each cell)")
	fs.StringVar(&c.OnError, "on-error", rlbench.DefaultOnError, "outage policy for a decision that failed: open (admit) or closed (reject)")
	fs.StringVar(&o.jsonPath, "json", "", "write the whole result as JSON to this file")
	fs.StringVar(&o.hdrDir, "hdr-dir", "", "write each cell's latency histogram as an .hgrm percentile distribution into this directory (created if missing)")
	fs.IntVar(&o.procs, "procs", 0, "CPUs rlbench's Go runtime uses at once, GOMAXPROCS (default: $GOMAXPROCS if set; else the Go runtime's default (the CPUs, or a container's quota) less one when a target runs on this machine (a private server or cluster, or a loopback address), leaving redis-server a CPU; else the runtime's default)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the whole run to this file (read it with go tool pprof)")
	fs.BoolVar(&c.KeepKeys, "keep-keys", false, "leave each run's keys in Redis after the audit (default: UNLINK them)")
	fs.BoolVar(&o.failOnImmortal, "fail-on-immortal", false, "exit with status 1 when any run leaves an immortal key")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no live progress line")
	fs.BoolVar(&o.listStrategies, "list-strategies", false, "list the strategies and exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: rlbench [flags]\n       rlbench verify [flags]   (check each strategy's guarantees; see rlbench verify --help)\n       rlbench compare A.json B.json ...   (cells side by side, with ratios)\n       rlbench report A.json ... -o report.html   (one self-contained HTML page)\n       rlbench merge A.json B.json ... -o all.json   (several generators' reports as one, exactly)\n\nLoad-test rate-limiter counter strategies against a real Redis and count the\nimmortal keys (counters with no TTL) each leaves behind.\n\nFlags:\n%s", fs.FlagUsages())
	}
	return fs
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "verify":
			return runVerify(ctx, args[1:], stdout, stderr)
		case "audit":
			return runAudit(ctx, args[1:], stdout, stderr)
		case "compare":
			return runCompare(args[1:], stdout, stderr)
		case "report":
			return runReport(args[1:], stdout, stderr)
		case "merge":
			return runMerge(args[1:], stdout, stderr)
		}
	}
	var o options
	fs := newFlagSet(&o, stderr)
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rlbench: unexpected argument %q (see rlbench --help)\n", fs.Arg(0))
		return exitUsage
	}
	if !fs.Changed("password") {
		o.cfg.Password = os.Getenv("REDISCLI_AUTH")
	}
	if o.listStrategies {
		listStrategies(stdout)
		return exitOK
	}
	// In rlbench.Config a zero means "the default"; on the command line an
	// explicit zero is bad input.
	if err := explicitZeros(fs, &o.cfg); err != nil {
		fmt.Fprintf(stderr, "rlbench: %v\n", err)
		return exitUsage
	}
	w, err := parseWindow(o.window)
	if err != nil {
		fmt.Fprintf(stderr, "rlbench: --window: %v\n", err)
		return exitUsage
	}
	o.cfg.Window = w
	// Private servers first, then existing ones, each in the order given.
	for _, v := range o.redisServers {
		o.cfg.Targets = append(o.cfg.Targets, rlbench.ParseTarget(v, true))
	}
	for _, v := range o.addrs {
		o.cfg.Targets = append(o.cfg.Targets, rlbench.ParseTarget(v, false))
	}
	// Then clusters: managed ones, then existing ones.
	for _, v := range o.managed {
		t := rlbench.ParseTarget(v, false)
		o.cfg.Targets = append(o.cfg.Targets, rlbench.TargetSpec{Label: t.Label, ManagedCluster: t.Addr})
	}
	for _, v := range o.clusters {
		t := rlbench.ParseTarget(v, false)
		o.cfg.Targets = append(o.cfg.Targets, rlbench.TargetSpec{Label: t.Label, Cluster: strings.Split(t.Addr, ",")})
	}
	if !fs.Changed("rueidis-flush-delay") {
		o.cfg.FlushDelay = rlbench.DefaultFlushDelay(o.cfg.Workload)
	}
	procs := o.procs
	switch {
	case fs.Changed("procs") && procs < 1:
		fmt.Fprintf(stderr, "rlbench: --procs must be >= 1, got %d\n", procs)
		return exitUsage
	case !fs.Changed("procs") && os.Getenv("GOMAXPROCS") == "":
		// The runtime's own default, which heeds a container's CPU quota.
		procs = rlbench.DefaultProcs(o.cfg, runtime.GOMAXPROCS(0))
	}
	if procs > 0 && procs != runtime.GOMAXPROCS(0) {
		defer applyProcs(procs)()
	}
	for _, f := range o.faults {
		fault, err := faults.Parse(f)
		if err != nil {
			fmt.Fprintf(stderr, "rlbench: --fault: %v\n", err)
			return exitUsage
		}
		o.cfg.Faults = append(o.cfg.Faults, fault)
	}

	opts := rlbench.Options{Log: stderr}
	if !o.quiet && isTerminal(stdout) {
		opts.Progress = stdout
	}
	var jsonFile *os.File
	if o.jsonPath != "" {
		// A temporary file beside it, now: a path that cannot be written
		// is bad input, found before any load, and an existing file is
		// replaced only by a finished report.
		jsonFile, err = createBeside(o.jsonPath)
		if err != nil {
			fmt.Fprintf(stderr, "rlbench: --json: cannot write %s: %v\n", o.jsonPath, err)
			return exitUsage
		}
		defer os.Remove(jsonFile.Name()) // a no-op once renamed
		defer jsonFile.Close()
	}
	if o.hdrDir != "" {
		if err := os.MkdirAll(o.hdrDir, 0o755); err != nil {
			fmt.Fprintf(stderr, "rlbench: --hdr-dir: %v\n", err)
			return exitUsage
		}
	}
	var profile *os.File
	if o.cpuProfile != "" {
		// Into a temporary file beside it, as --json: an existing profile is
		// replaced only once the run has started.
		profile, err = createBeside(o.cpuProfile)
		if err == nil {
			defer os.Remove(profile.Name()) // a no-op once renamed
			err = pprof.StartCPUProfile(profile)
		}
		if err != nil {
			fmt.Fprintf(stderr, "rlbench: --cpuprofile: %v\n", err)
			return exitUsage
		}
	}
	rep, err := rlbench.Run(ctx, o.cfg, opts)
	var uerr *rlbench.UsageError
	isUsage := errors.As(err, &uerr)
	var profileErr error
	if profile != nil {
		pprof.StopCPUProfile()
		profileErr = profile.Close()
		if profileErr == nil && !isUsage {
			profileErr = os.Rename(profile.Name(), o.cpuProfile)
		}
	}
	if isUsage {
		fmt.Fprintf(stderr, "rlbench: %s\n", usageMessage(uerr, runFlags))
		return exitUsage
	}
	code := exitOK
	if profileErr != nil {
		fmt.Fprintf(stderr, "rlbench: --cpuprofile: %v\n", profileErr)
		code = exitFailure
	}
	if rep != nil && len(rep.Runs) > 0 {
		if werr := results.Text(rep)(stdout); werr != nil {
			fmt.Fprintf(stderr, "rlbench: %v\n", werr)
			code = exitFailure
		}
		if jsonFile != nil {
			werr := writeReport(jsonFile, results.JSON(rep))
			if werr == nil {
				werr = os.Rename(jsonFile.Name(), o.jsonPath)
			}
			if werr != nil {
				fmt.Fprintf(stderr, "rlbench: --json: %v\n", werr)
				code = exitFailure
			}
		}
		if o.hdrDir != "" {
			if _, werr := results.WriteHGRMFiles(o.hdrDir, rep); werr != nil {
				fmt.Fprintf(stderr, "rlbench: --hdr-dir: %v\n", werr)
				code = exitFailure
			}
		}
		if o.failOnImmortal && anyImmortal(rep) {
			code = exitFailure
		}
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "rlbench: interrupted; the cells that ran are above, and the run's keys were deleted")
		return exitFailure
	}
	if err != nil {
		fmt.Fprintf(stderr, "rlbench: %v\n", err)
		return exitFailure
	}
	return code
}

// parseWindow accepts whole seconds >= 1, as a number ("60") or a duration
// ("60s", "1m").
func parseWindow(s string) (int64, error) {
	bad := fmt.Errorf("window must be a whole number of seconds >= 1 (e.g. 1, 60, 60s, 1m), got %q", s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 1 {
			return 0, bad
		}
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second || d%time.Second != 0 {
		return 0, bad
	}
	return int64(d / time.Second), nil
}

func listStrategies(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STRATEGY\tATOMIC\tHEALS\tREDIS\tCOMMANDS\tDESCRIPTION")
	for _, s := range strategies.All() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t>= %s\t%s\t%s\n", s.Name, yesNo(s.Atomic), yesNo(s.Heals), s.MinRedis, s.Commands, s.Summary)
	}
	tw.Flush()
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

// writeFile writes a report to a new file at path.
func writeFile(path string, report results.Reporter) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return writeReport(f, report)
}

// writeReport writes a report to f and closes it.
func writeReport(f *os.File, report results.Reporter) error {
	if err := report(f); err != nil {
		return err
	}
	return f.Close()
}

// explicitZeros refuses counts given as 0 (or less) on the command line,
// which rlbench.Config would otherwise read as "the default".
func explicitZeros(fs *pflag.FlagSet, c *rlbench.Config) error {
	checks := []struct {
		flag string
		bad  bool
		err  error
		got  int64
	}{
		{"clients", c.Workload.Clients < 1, workload.ErrInvalidClients, int64(c.Workload.Clients)},
		{"keys", c.Workload.Keys < 1, workload.ErrInvalidKeys, int64(c.Workload.Keys)},
		{"limit", c.Limit < 1, strategies.ErrInvalidLimit, c.Limit},
	}
	for _, ch := range checks {
		if fs.Changed(ch.flag) && ch.bad {
			return fmt.Errorf("--%s: %w, got %d", ch.flag, ch.err, ch.got)
		}
	}
	if c.Workload.Duration == 0 && c.Workload.Requests == 0 {
		return fmt.Errorf("--duration: %w (--duration 0 needs --requests N)", workload.ErrNoEnd)
	}
	return nil
}

// parseFlags parses args into fs, the flags of the command fs names
// ("rlbench", "rlbench verify", ...). When it returns false the command ends
// with code: 0 after --help, 2 after bad flags, reported on stderr.
func parseFlags(fs *pflag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return exitOK, true
	case errors.Is(err, pflag.ErrHelp):
		return exitOK, false
	}
	fmt.Fprintf(stderr, "%s: %v (see %s --help)\n", fs.Name(), err, fs.Name())
	return exitUsage, false
}

// writeOutput writes data to stdout when out is "-", else to the file out,
// and reports a failure on stderr as the command cmd does; ok is false when
// the command must end with code.
func writeOutput(cmd, out string, data []byte, stdout, stderr io.Writer) (code int, ok bool) {
	if out == "-" {
		if _, err := stdout.Write(data); err != nil {
			fmt.Fprintf(stderr, "%s: write: %v\n", cmd, err)
			return exitFailure, false
		}
		return exitOK, true
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		fmt.Fprintf(stderr, "%s: -o: %v\n", cmd, err)
		return exitUsage, false
	}
	return exitOK, true
}

// createBeside creates a temporary file beside path, mode 0644 (what
// os.Create gives under the usual umask), for the caller to rename over path
// once it is complete: an existing file is replaced only by a complete one.
func createBeside(path string) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o644); err != nil { // CreateTemp made it 0600
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// applyProcs sets GOMAXPROCS to n and returns what restores it. Tests of
// run, which share one process, replace it.
var applyProcs = func(n int) (restore func()) {
	prev := runtime.GOMAXPROCS(n)
	return func() { runtime.GOMAXPROCS(prev) }
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

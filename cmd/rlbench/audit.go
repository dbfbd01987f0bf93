package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/acl"
	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/htmlreport"
	"github.com/rlbench/rlbench/topology"
)

// auditOptions are the settings of `rlbench audit`.
type auditOptions struct {
	// cfg names the target and its login; nothing else of it is used.
	cfg    rlbench.Config
	opts   audit.Options
	maxTTL string
	fixTTL string
	// window is --window, the length of --window-stamp's windows.
	window string
	// jsonPath is --json: a file, "-" for stdout, "" for none.
	jsonPath       string
	failOnImmortal bool
	// allowEmpty accepts an audit that matched no key (exit 0).
	allowEmpty bool
	quiet      bool
	// The targets of --addr and --cluster, then those of --url and
	// --sentinel: Masters reads exactly one.
	addrs, clusters []rlbench.TargetSpec
	connection      connectionFlags
}

func newAuditFlagSet(o *auditOptions, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("rlbench audit", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	p := &o.opts
	fs.StringVar(&p.Match, "match", "", `SCAN MATCH pattern of the keys to audit, required (e.g. 'ratelimit:*'; '*' for every key)`)
	fs.Int64Var(&p.Count, "count", audit.DefaultCount, "SCAN COUNT hint: keys walked per SCAN, and per pipeline of PTTLs")
	fs.StringVar(&p.Type, "type", "", "audit only keys of this type, with SCAN ... TYPE (Redis >= 6.0): "+strings.Join(audit.Types, ", ")+", or a module type as TYPE names it (e.g. ReJSON-RL)")
	fs.BoolVar(&p.Types, "types", false, "also read each key's TYPE and count keys and immortal keys per type")
	fs.BoolVar(&p.Fields, "fields", false, "also audit hash fields with TTLs of their own (Redis >= 7.4: HSCAN ... NOVALUES, HPTTL): count fields with no TTL; a hash with no key TTL is then immortal only when a field has none")
	fs.Float64Var(&p.Rate, "rate", audit.DefaultRate, "most keys walked per second, over all masters: a SCAN counts as its --count (or the keys it returned, if more), a field of --fields as a key (0: no cap)")
	fs.StringVar(&o.maxTTL, "max-ttl", "", "longest TTL the limiter should ever set (e.g. 60, 60s, 1h): count the keys whose TTL exceeds it")
	fs.Int64Var(&p.Limit, "limit", 0, "the limiter's limit: count (and sample) the immortal string counters at or above it, users locked out for good")
	fs.IntVar(&p.Sample, "sample", audit.DefaultSample, "how many immortal keys to describe: type, value of a string, OBJECT IDLETIME")
	fs.StringVar(&o.fixTTL, "fix-ttl", "", "give each immortal key this TTL (whole seconds, e.g. 3600 or 1h), in one script per key that sets it only if the key still has its audited type and no TTL; a write, off by default")
	fs.StringVar(&p.WindowStamp, "window-stamp", "", "keys carry their window in their name, the last number in it: "+strings.Join(audit.Stamps, ", ")+
		" (its start in Unix seconds, milliseconds, nanoseconds, or start / window); split immortal keys into stale (window ended: leaked memory) and live; needs --window")
	fs.StringVar(&o.window, "window", "", "with --window-stamp: the limiter's window (whole seconds, e.g. 60 or 1m)")
	fs.BoolVar(&p.DryRun, "dry-run", false, "with --fix-ttl: count what it would fix, send no EXPIRE")
	fs.Var(auditTargetValue{targetValue{specs: &o.addrs, flag: "--addr", kind: targetAddr}}, "addr", "host:port of the server to audit")
	fs.Var(auditTargetValue{targetValue{specs: &o.clusters, flag: "--cluster", kind: targetCluster}}, "cluster", "host:port[,host:port...] of nodes of a Redis Cluster: every master is audited, replicas skipped")
	o.connection.add(fs)
	fs.StringVar(&o.jsonPath, "json", "", `write the audit as JSON to this file ("-": to stdout, and the text to stderr)`)
	fs.BoolVar(&o.failOnImmortal, "fail-on-immortal", false, "exit with status 1 when an immortal key was found")
	fs.BoolVar(&o.allowEmpty, "allow-empty", false, "exit with status 0 when no key matched (by default an audit that looked at nothing exits 1)")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no live progress line")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: rlbench audit --match PATTERN (--addr HOST:PORT | --url URL | --cluster HOST:PORT,... | --sentinel MASTER@HOST:PORT) [flags]

Find the keys with no TTL (immortal) in a keyspace rlbench did not write:
SCAN MATCH PATTERN, PTTL per key pipelined per batch, at most --rate keys
walked per second, nothing kept per key. Only read commands unless --fix-ttl.
Exit status: 0 done, 1 on failure, interruption, a server that restarted or
failed over during the audit, no key matched (unless --allow-empty), or (with
--fail-on-immortal) immortal keys found, 2 for bad input before any command.

Flags:
%s`, fs.FlagUsages())
	}
	return fs
}

// auditTargetValue is --addr or --cluster of the audit, which has no
// private server to fall back to: an empty value is refused as such.
type auditTargetValue struct{ targetValue }

func (v auditTargetValue) Set(s string) error {
	if t := rlbench.ParseTarget(s, false); strings.TrimSpace(t.Addr) == "" {
		return flagErrorf("%s: an empty address (an unset shell variable?); give host:port", v.flag)
	}
	return v.targetValue.Set(s)
}

// audit is `rlbench audit`: it audits the keys matching --match on every
// master of one existing target, prints what it found and writes --json.
func (c cli) audit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o auditOptions
	fs := newAuditFlagSet(&o, stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := o.check(fs); err != nil {
		return err
	}
	var out *outputFile
	if o.jsonPath != "" && o.jsonPath != "-" {
		var err error
		if out, err = openOutput("--json", o.jsonPath); err != nil {
			return badInput(err)
		}
		defer out.discard()
	}
	masters, closeMasters, err := rlbench.Masters(ctx, o.cfg)
	if uerr, ok := errors.AsType[*rlbench.UsageError](err); ok {
		if cerr, ok := errors.AsType[*connection.CheckError](err); ok && errors.Is(cerr, connection.ErrUnreachable) {
			cerr.Hint = "is a Redis server listening there?" // not: leave out --addr for a private one
		}
		return badInput(errors.New(usageMessage(uerr, runFlags)))
	}
	if err != nil {
		return err
	}
	defer closeMasters()
	if err := refuseReplicaFix(ctx, o.opts, masters); err != nil {
		return err
	}
	if o.opts.Fields {
		if err := checkFieldAudit(ctx, masters); err != nil {
			return err
		}
	}
	opts := o.opts
	opts.Sizes = true
	var line *progressLine
	if !o.quiet && isTerminal(stdout) {
		line = &progressLine{w: stdout}
		opts.Progress = line.show
	}
	nodes := make([]audit.Node, len(masters))
	for i, m := range masters {
		nodes[i] = m
	}
	rep, err := audit.Scan(ctx, nodes, opts)
	line.clear()
	return o.finish(rep, err, out, stdout, stderr)
}

// refuseReplicaFix refuses --fix-ttl (bad input, before any SCAN) on a
// master that is a replica, naming its master, as the load run and
// cleanup do: its fixes would not be the master's, and the next sync
// would discard them. A read-only audit of a replica (a dry run too) is
// allowed.
func refuseReplicaFix(ctx context.Context, opts audit.Options, masters []*redis.Client) error {
	if opts.FixTTL == 0 || opts.DryRun {
		return nil
	}
	for _, m := range masters {
		master, err := topology.ReplicaOf(ctx, m)
		if derr := acl.Denied("info", err); derr != nil {
			return badInput(fmt.Errorf("--fix-ttl: %s: %w (--fix-ttl asks INFO replication whether the server is a replica)", m.Options().Addr, derr))
		}
		if err != nil {
			return fmt.Errorf("--fix-ttl: %s: %w", m.Options().Addr, err)
		}
		if master != "" {
			return badInput(fmt.Errorf("--fix-ttl: %s: %w (an audit without --fix-ttl may read a replica)", m.Options().Addr, topology.ReplicaWrites(master)))
		}
	}
	return nil
}

// checkFieldAudit refuses --fields (bad input) on a master that does not
// know the field audit's commands, asked with COMMAND INFO before any SCAN.
func checkFieldAudit(ctx context.Context, masters []*redis.Client) error {
	for _, m := range masters {
		_, err := acl.Supported(ctx, m, acl.FieldAuditCommands)
		if merr, ok := errors.AsType[*acl.MissingError](err); ok {
			return badInput(fmt.Errorf("--fields: %s does not know %s (COMMAND INFO): the field audit needs Redis >= 7.4 (HSCAN ... NOVALUES, HPTTL)",
				m.Options().Addr, strings.ToUpper(strings.Join(merr.Commands, ", "))))
		}
		if derr := acl.Denied("command|info", err); derr != nil {
			return badInput(fmt.Errorf("--fields: %w (--fields asks COMMAND INFO whether the server has HPTTL)", derr))
		}
		if err != nil {
			return fmt.Errorf("--fields: %s: %w", m.Options().Addr, err)
		}
	}
	return nil
}

// finish writes the --json file, then prints the report (the file first:
// stdout may be a pipe that closes early), and says why the audit ends
// with exit status 1, if it does.
func (o *auditOptions) finish(rep audit.Report, scanErr error, out *outputFile, stdout, stderr io.Writer) error {
	var errs []error
	if o.jsonPath != "" {
		var data bytes.Buffer
		err := audit.JSON(rep)(&data)
		if err == nil {
			err = writeOutput(out, data.Bytes(), stdout)
		}
		errs = append(errs, err)
	}
	// With the JSON on stdout, the text goes to stderr, as for the load
	// run and verify.
	text := stdout
	if o.jsonPath == "-" {
		text = stderr
	}
	if err := printed(audit.Text(rep)(text)); err != nil {
		errs = append(errs, fmt.Errorf("write: %w", err))
	}
	switch {
	case errors.Is(scanErr, context.Canceled):
		errs = append(errs, errors.New("interrupted; the figures above are what it saw"))
	case scanErr != nil:
		errs = append(errs, scanErr)
	case rep.Matched == 0 && o.allowEmpty:
		fmt.Fprintf(stderr, "rlbench audit: %s (--allow-empty)\n", emptyText(rep))
	case rep.Matched == 0:
		errs = append(errs, fmt.Errorf("%s; exit status 1 (check --match and --type, or give --allow-empty)", emptyText(rep)))
	case o.failOnImmortal && rep.Immortal > 0:
		errs = append(errs, fmt.Errorf("%d immortal keys found (--fail-on-immortal)", rep.Immortal))
	}
	return errors.Join(errs...)
}

// emptyText says that the audit of rep matched no key.
func emptyText(rep audit.Report) string {
	what := "MATCH " + rep.Match
	if rep.Match == "" {
		what = "MATCH *"
	}
	if rep.Type != "" {
		what += " TYPE " + rep.Type
	}
	return fmt.Sprintf("no key matched %s on %d node(s): the audit looked at nothing", what, max(len(rep.Servers), 1))
}

// check validates every flag before any connection, and puts the
// targets and the login into o.cfg.
func (o *auditOptions) check(fs *pflag.FlagSet) error {
	if fs.NArg() > 0 {
		return badInputHelp(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if !fs.Changed("match") || o.opts.Match == "" {
		return badInputHelp(errors.New("--match is required (e.g. --match 'ratelimit:*'; '*' for every key)"))
	}
	o.cfg.Targets = append(o.addrs, o.clusters...)
	if err := o.connection.apply(fs, &o.cfg); err != nil {
		return err
	}
	if len(o.cfg.Targets) == 0 {
		return badInputHelp(errors.New("--addr or --cluster is required (or --url, or --sentinel): rlbench audit reads an existing server"))
	}
	if err := o.checkOptions(fs); err != nil {
		return badInputHelp(err)
	}
	return nil
}

// checkOptions validates the flags of audit.Options.
func (o *auditOptions) checkOptions(fs *pflag.FlagSet) error {
	var err error
	if o.opts.MaxTTL, err = parseSeconds(o.maxTTL); err != nil {
		return fmt.Errorf("--max-ttl: %w", err)
	}
	if o.opts.FixTTL, err = parseSeconds(o.fixTTL); err != nil {
		return fmt.Errorf("--fix-ttl: %w", err)
	}
	if err := o.checkStamp(fs); err != nil {
		return err
	}
	if fs.Changed("count") && o.opts.Count == 0 {
		return fmt.Errorf("--count: %w, got 0", audit.ErrInvalidCount)
	}
	if fs.Changed("type") && o.opts.Type == "" {
		return errors.New("--type: an empty type (an unset shell variable?)")
	}
	if err := o.opts.Validate(); err != nil {
		return auditFlagError(err)
	}
	return nil
}

// checkStamp validates --window-stamp and --window, which go together.
func (o *auditOptions) checkStamp(fs *pflag.FlagSet) error {
	stamp := o.opts.WindowStamp
	switch {
	case fs.Changed("window-stamp") && !slices.Contains(audit.Stamps, stamp):
		return fmt.Errorf("--window-stamp: want one of %s, got %q", strings.Join(audit.Stamps, ", "), stamp)
	case stamp != "" && o.window == "":
		return errors.New("--window-stamp needs --window S: the limiter's window, in whole seconds, to tell when a key's window ends")
	case stamp == "" && fs.Changed("window"):
		return fmt.Errorf("--window: only with --window-stamp (%s)", strings.Join(audit.Stamps, ", "))
	}
	var err error
	if o.opts.Window, err = parseSeconds(o.window); err != nil {
		return fmt.Errorf("--window: %w", err)
	}
	if stamp != "" {
		o.opts.StaleMemory = audit.DefaultStaleMemory
	}
	return nil
}

// auditFlagError names the flag behind an error of audit.Options.Validate.
func auditFlagError(err error) error {
	flags := []struct {
		err  error
		flag string
	}{
		{audit.ErrInvalidCount, "--count"},
		{audit.ErrInvalidRate, "--rate"},
		{audit.ErrInvalidLimit, "--limit"},
		{audit.ErrInvalidSample, "--sample"},
		{audit.ErrInvalidFixTTL, "--fix-ttl"},
		{audit.ErrDryRunWithoutFix, "--dry-run"},
		{audit.ErrInvalidType, "--type"},
		{audit.ErrInvalidWindowStamp, "--window-stamp"},
		{audit.ErrInvalidWindow, "--window"},
	}
	for _, f := range flags {
		if errors.Is(err, f.err) {
			return fmt.Errorf("%s: %w", f.flag, err)
		}
	}
	return err
}

// parseSeconds reads "" (0), whole seconds ("60") or a duration of whole
// seconds ("60s", "1h") >= 1 s.
func parseSeconds(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	bad := fmt.Errorf("want a whole number of seconds >= 1 (e.g. 60, 60s, 1h), got %q", s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 1 || n > math.MaxInt64/int64(time.Second) {
			return 0, bad
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second || d%time.Second != 0 {
		return 0, bad
	}
	return d, nil
}

// progressLine rewrites one terminal line with the audit's progress, at
// most every progressEvery.
type progressLine struct {
	w    io.Writer
	last time.Time
	used bool
}

const progressEvery = 250 * time.Millisecond

func (l *progressLine) show(p audit.Progress) {
	if time.Since(l.last) < progressEvery {
		return
	}
	l.last, l.used = time.Now(), true
	eta := "ETA unknown"
	if d := p.ETA(); d >= 0 {
		eta = fmt.Sprintf("~%.0f%% walked, ETA %s", 100*p.Walked(), d.Round(time.Second))
	}
	fmt.Fprintf(l.w, "\r\033[Kaudit: node %d/%d %s: %d keys examined, %.0f keys/s, %d immortal, %s",
		p.Node+1, p.Nodes, p.Addr, p.Keys, p.KeysPerS(), p.Immortal, eta)
}

// clear erases the progress line, if one was drawn.
func (l *progressLine) clear() {
	if l != nil && l.used {
		fmt.Fprint(l.w, "\r\033[K")
	}
}

// splitAuditFiles separates the files of `rlbench audit --json` from the
// load-run reports among paths, and reads the audits.
func splitAuditFiles(paths []string) (runs []string, audits []htmlreport.AuditFile, err error) {
	for _, p := range paths {
		if !audit.IsReportFile(p) {
			runs = append(runs, p)
			continue
		}
		rep, err := audit.ReadReportFile(p)
		if err != nil {
			return nil, nil, err
		}
		audits = append(audits, htmlreport.AuditFile{Path: p, Report: rep})
	}
	return runs, audits, nil
}

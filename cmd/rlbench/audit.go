package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/htmlreport"
)

// auditOptions are the settings of `rlbench audit`.
type auditOptions struct {
	target         targetFlags
	opts           audit.Options
	maxTTL         string
	fixTTL         string
	jsonPath       string
	failOnImmortal bool
	quiet          bool
}

// targetFlags are the flags that name the server(s) a command talks to,
// shared by the commands that take an existing target.
type targetFlags struct {
	addr     string
	cluster  string
	user     string
	password string
	db       int
}

// register adds the target flags to fs.
func (t *targetFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&t.addr, "addr", "", "host:port of the server to audit")
	fs.StringVar(&t.cluster, "cluster", "", "host:port[,host:port...] of nodes of a Redis Cluster: every master is audited, replicas skipped")
	fs.StringVar(&t.user, "user", "", "ACL user name (default: the default user)")
	fs.StringVar(&t.password, "password", "", "password (default: $REDISCLI_AUTH)")
	fs.IntVar(&t.db, "db", 0, "database number (not with --cluster)")
}

// check refuses a target that cannot be right, before any connection.
func (t *targetFlags) check(fs *pflag.FlagSet) error {
	switch {
	case fs.Changed("addr") && t.addr == "", fs.Changed("cluster") && t.cluster == "":
		return errors.New("--addr, --cluster: an empty address (an unset shell variable?)")
	case t.addr == "" && t.cluster == "":
		return errors.New("--addr or --cluster is required: rlbench audit reads an existing server")
	case t.addr != "" && t.cluster != "":
		return errors.New("--addr and --cluster are exclusive: give one")
	case t.db < 0:
		return fmt.Errorf("--db must be >= 0, got %d", t.db)
	case t.cluster != "" && t.db != 0:
		return fmt.Errorf("--db: a Redis Cluster has database 0 only, got %d", t.db)
	}
	if !fs.Changed("password") {
		t.password = os.Getenv("REDISCLI_AUTH")
	}
	return nil
}

// clientOptions are the options of every connection to a target: RESP2
// with AUTH, no CLIENT SETINFO and no maintenance notifications, so that a
// user allowed only the audit's commands can connect.
func (t *targetFlags) clientOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr: addr, Username: t.user, Password: t.password, DB: t.db, Protocol: 2,
		DisableIdentity: true, MaxRetries: -1, DialerRetries: 1, PoolSize: 2,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// nodes connects to the target and returns one client per server to read:
// the server of --addr, or every master of --cluster, by address. close
// closes them.
func (t *targetFlags) nodes(ctx context.Context) (nodes []*redis.Client, close func(), err error) {
	if t.addr != "" {
		c := redis.NewClient(t.clientOptions(t.addr))
		if err := c.Ping(ctx).Err(); err != nil {
			c.Close()
			switch msg := err.Error(); {
			case strings.Contains(msg, "DB index"):
				return nil, nil, fmt.Errorf("--db %d: %w", t.db, err)
			case strings.Contains(msg, "WRONGPASS"), strings.Contains(msg, "NOAUTH"), strings.Contains(msg, "NOPERM"):
				return nil, nil, fmt.Errorf("--user, --password (or $REDISCLI_AUTH): %w", err)
			}
			return nil, nil, fmt.Errorf("--addr %s: %w", t.addr, err)
		}
		return []*redis.Client{c}, func() { c.Close() }, nil
	}
	o := t.clientOptions("")
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: strings.Split(t.cluster, ","), Username: o.Username, Password: o.Password, Protocol: 2,
		DisableIdentity: true, MaxRetries: -1, DialerRetries: 1, PoolSize: 2, MaintNotificationsConfig: o.MaintNotificationsConfig,
	})
	var mu sync.Mutex
	err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		nodes = append(nodes, c)
		return nil
	})
	if err == nil && len(nodes) == 0 {
		err = errors.New("no master found")
	}
	if err != nil {
		cc.Close()
		return nil, nil, fmt.Errorf("--cluster %s: %w", t.cluster, err)
	}
	slices.SortFunc(nodes, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
	return nodes, func() { cc.Close() }, nil
}

func newAuditFlagSet(o *auditOptions, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("rlbench audit", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	p := &o.opts
	fs.StringVar(&p.Match, "match", "", `SCAN MATCH pattern of the keys to audit, required (e.g. 'ratelimit:*'; '*' for every key)`)
	fs.Int64Var(&p.Count, "count", audit.DefaultCount, "SCAN COUNT hint: keys walked per SCAN, and per pipeline of PTTLs")
	fs.StringVar(&p.Type, "type", "", "audit only keys of this type, with SCAN ... TYPE (Redis >= 6.0): string, hash, list, set, zset, stream")
	fs.BoolVar(&p.Types, "types", false, "also read each key's TYPE and count keys and immortal keys per type")
	fs.BoolVar(&p.Fields, "fields", false, "also audit hash fields with TTLs of their own (Redis >= 7.4: HSCAN ... NOVALUES, HPTTL): count fields with no TTL; a hash with no key TTL is then immortal only when a field has none")
	fs.Float64Var(&p.Rate, "rate", audit.DefaultRate, "most keys examined per second, over all masters (0: no cap)")
	fs.StringVar(&o.maxTTL, "max-ttl", "", "longest TTL the limiter should ever set (e.g. 60, 60s, 1h): count the keys whose TTL exceeds it")
	fs.Int64Var(&p.Limit, "limit", 0, "the limiter's limit: count (and sample) the immortal string counters at or above it, users locked out for good")
	fs.IntVar(&p.Sample, "sample", audit.DefaultSample, "how many immortal keys to describe: type, value of a string, OBJECT IDLETIME")
	fs.StringVar(&o.fixTTL, "fix-ttl", "", "give each immortal key this TTL with EXPIRE key D NX (whole seconds, e.g. 3600 or 1h); a write, off by default")
	fs.BoolVar(&p.DryRun, "dry-run", false, "with --fix-ttl: count what it would fix, send no EXPIRE")
	o.target.register(fs)
	fs.StringVar(&o.jsonPath, "json", "", `write the audit as JSON to this file ("-": to stdout, instead of the text)`)
	fs.BoolVar(&o.failOnImmortal, "fail-on-immortal", false, "exit with status 1 when an immortal key was found")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no live progress line")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: rlbench audit --match PATTERN (--addr HOST:PORT | --cluster HOST:PORT,...) [flags]

Find the keys with no TTL (immortal) in a keyspace rlbench did not write:
SCAN MATCH PATTERN, PTTL per key pipelined per batch, at most --rate keys
per second, nothing kept per key. Only read commands unless --fix-ttl.
Exit status: 0 done, 1 on failure, interruption, or (with
--fail-on-immortal) immortal keys found, 2 for bad input before any command.

Flags:
%s`, fs.FlagUsages())
	}
	return fs
}

// runAudit is `rlbench audit`.
func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o auditOptions
	fs := newAuditFlagSet(&o, stderr)
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "rlbench audit: %v\n", err)
		return exitUsage
	}
	if err := o.check(fs); err != nil {
		fmt.Fprintf(stderr, "rlbench audit: %v (see rlbench audit --help)\n", err)
		return exitUsage
	}
	var jsonFile *os.File
	if o.jsonPath != "" && o.jsonPath != "-" {
		// Opened now, not truncated: a path that cannot be written is bad
		// input, found before any command.
		_, statErr := os.Stat(o.jsonPath)
		f, err := os.OpenFile(o.jsonPath, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "rlbench audit: --json: %v\n", err)
			return exitUsage
		}
		jsonFile = f
		defer jsonFile.Close()
		if os.IsNotExist(statErr) {
			defer func() {
				if jsonFile != nil { // not written: remove what was created
					os.Remove(o.jsonPath)
				}
			}()
		}
	}
	// go-redis logs each failed dial; the error below says it once.
	redis.SetLogger(silentLogger{})
	nodes, closeNodes, err := o.target.nodes(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "rlbench audit: %v\n", err)
		return exitUsage
	}
	defer closeNodes()
	opts := o.opts
	opts.Sizes = true
	var line *progressLine
	if !o.quiet && isTerminal(stdout) {
		line = &progressLine{w: stdout}
		opts.Progress = line.show
	}
	targets := make([]audit.Node, len(nodes))
	for i, n := range nodes {
		targets[i] = n
	}
	rep, err := audit.Scan(ctx, targets, opts)
	line.clear()
	f := jsonFile
	jsonFile = nil // written (or reported) by finish
	return o.finish(rep, err, f, stdout, stderr)
}

// finish prints and writes the report, and returns the exit status.
func (o *auditOptions) finish(rep audit.Report, err error, jsonFile *os.File, stdout, stderr io.Writer) int {
	code := exitOK
	out := audit.Text(rep)
	if o.jsonPath == "-" {
		out = audit.JSON(rep)
	}
	if werr := out(stdout); werr != nil {
		fmt.Fprintf(stderr, "rlbench audit: write: %v\n", werr)
		code = exitFailure
	}
	if jsonFile != nil {
		werr := jsonFile.Truncate(0)
		if werr == nil {
			werr = audit.JSON(rep)(jsonFile)
		}
		if werr == nil {
			werr = jsonFile.Close()
		}
		if werr != nil {
			fmt.Fprintf(stderr, "rlbench audit: --json: %v\n", werr)
			code = exitFailure
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "rlbench audit: interrupted; the figures above are what it saw")
		return exitFailure
	case err != nil:
		fmt.Fprintf(stderr, "rlbench audit: %v\n", err)
		return exitFailure
	case o.failOnImmortal && rep.Immortal > 0:
		fmt.Fprintf(stderr, "rlbench audit: %d immortal keys found (--fail-on-immortal)\n", rep.Immortal)
		return exitFailure
	}
	return code
}

// check validates every flag before any connection.
func (o *auditOptions) check(fs *pflag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if !fs.Changed("match") || o.opts.Match == "" {
		return errors.New("--match is required (e.g. --match 'ratelimit:*'; '*' for every key)")
	}
	if err := o.target.check(fs); err != nil {
		return err
	}
	var err error
	if o.opts.MaxTTL, err = parseSeconds(o.maxTTL); err != nil {
		return fmt.Errorf("--max-ttl: %w", err)
	}
	if o.opts.FixTTL, err = parseSeconds(o.fixTTL); err != nil {
		return fmt.Errorf("--fix-ttl: %w", err)
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

// silentLogger drops go-redis' log lines.
type silentLogger struct{}

func (silentLogger) Printf(context.Context, string, ...any) {}

// runAuditCommand is runAudit in the command table's form.
func runAuditCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	switch code := runAudit(ctx, args, stdout, stderr); code {
	case exitOK:
		return nil
	case exitUsage:
		return badInput(errReported)
	default:
		return errReported
	}
}

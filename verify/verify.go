// Package verify checks, against a real Redis, the guarantees each
// rate-limiter strategy documents, in the spirit of the second seed's
// checklist: first request, repeated requests, expiry, a window that traffic
// never extends, wrong-type keys, concurrent clients, a client that dies at
// each gap between its round trips, a key that expires between a read and a
// write, healing a counter that lost its TTL, NOSCRIPT after SCRIPT FLUSH,
// and a server restart.
//
// Run fills a Matrix: one Row per strategy x client, one Cell per Check.
// Each cell holds what was seen (pass, FAIL, leaks, unsupported, n/a, or
// not-run when Run was interrupted) and one line saying why. What each
// strategy should show is derived from its documented properties
// (strategies.Info: Atomic, Heals, FixedWindow, MinRedis, EVALSHA...) by
// Expected, and Matrix.AsDocumented says
// whether every cell ran and is what its strategy documents. Text and JSON
// report a Matrix.
//
// Each check is one file, check_<name>.go, that registers its name, its
// one-line doc, whether it acts on the whole server, its run function and
// its expected outcome in one declaration; a new check is a new file.
//
// Every key Run writes starts with Config.Prefix, and Run deletes them at
// the end. Two checks act on the whole server and so run only against a
// private server that rlbench manages: "noscript" (SCRIPT FLUSH) and
// "restart"; on any other target they are n/a.
package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/plan"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/topology"
	"github.com/rlbench/rlbench/usercode"

	// The published limiters and the models of deployed ones register
	// their strategies, which verify checks too (as the load run does).
	_ "github.com/rlbench/rlbench/strategies/deployed"
	_ "github.com/rlbench/rlbench/strategies/published"
)

// Defaults of Config.
const (
	// DefaultLimit is the requests allowed per key per window in every check.
	DefaultLimit = 5
	// DefaultWindow is the window, in whole seconds, of the checks that wait
	// for a window to end. It is 2, not 1: naive sets its expiry with
	// EXAT now+window in whole seconds, so a 1-second window can end a
	// millisecond after it starts.
	DefaultWindow = 2
	// DefaultWorkers is the number of concurrent workers of the
	// "concurrent" check.
	DefaultWorkers = 50
)

// Sentinel errors returned, wrapped in a *UsageError, by Run.
var (
	// ErrInvalidWindow is returned for a window below 2 seconds.
	ErrInvalidWindow = errors.New("window must be a whole number of seconds >= 2")
	// ErrInvalidWorkers is returned for fewer than 2 concurrent workers.
	ErrInvalidWorkers = errors.New("workers must be >= 2")
	// ErrInvalidScriptTimeout is returned for a negative script timeout.
	ErrInvalidScriptTimeout = errors.New("script timeout must be > 0")
	// ErrInvalidDB is returned for a negative database number.
	ErrInvalidDB = errors.New("db must be >= 0")
	// ErrTLSWithoutAddr is returned for TLS settings on a private target.
	ErrTLSWithoutAddr = errors.New("TLS needs the address of an existing server: the private server speaks plain TCP")
)

// Config selects what Run checks and against which server. Its zero value
// checks every strategy on every client against a private redis-server.
type Config struct {
	// Strategies are strategy names (see strategies.Names), or "all"; nil
	// means all.
	Strategies []string
	// Clients are client names (see clients.Names), or "all"; nil means all.
	Clients []string
	// Registry holds the strategies that Strategies names: the built-in
	// ones, and the invocation's user strategies; nil means the built-in
	// ones only.
	Registry *strategies.Registry
	// Limit is the requests allowed per key per window in every check; 0
	// means DefaultLimit.
	Limit int64
	// Window is the window of the checks that wait for one to end, in
	// whole seconds >= 2; 0 means DefaultWindow.
	Window int64
	// Workers is the number of concurrent workers of the "concurrent"
	// check, each sending 3 requests to one key; 0 means DefaultWorkers.
	Workers int
	// Prefix starts every key Run writes; "" means "rlbench-verify:<id>:"
	// with a fresh id. Run deletes the keys under it at the end.
	Prefix string
	// ScriptTimeout is how long a user strategy's script or function may
	// block the server before its watchdog sends SCRIPT KILL (FUNCTION
	// KILL) and Run fails, as in the load run; 0 means
	// usercode.DefaultScriptTimeout.
	ScriptTimeout time.Duration

	// Target is the target to check, of any kind the load run takes
	// (topology.Spec: an existing server at Addr, a private one of
	// RedisServer, a Redis Cluster, a private one, a master that Sentinel
	// manages, a private Sentinel set-up), logged in to with its Login.
	// Its zero value is a private redis-server on PATH, which Run starts
	// and stops at the end, and restarts for the restart check. The
	// server-wide checks need a private single server: on any other
	// target they are n/a.
	Target topology.Spec

	// Log receives a line when the checks start and when each phase ends;
	// nil discards them.
	Log io.Writer

	// plan is the rows, strategies x clients (plan.Build, set by
	// validate).
	plan *plan.Plan
}

// UsageError is bad input, as in rlbench.Run: the Config field at fault
// and what it accepts. Nothing has been written to Redis when Run returns one.
type UsageError = topology.UsageError

func usage(field string, err error) error { return &UsageError{Field: field, Err: err} }

// withDefaults returns c with defaults applied and a prefix chosen.
func (c Config) withDefaults() Config {
	if len(c.Strategies) == 0 {
		c.Strategies = []string{"all"}
	}
	if len(c.Clients) == 0 {
		c.Clients = []string{"all"}
	}
	if c.Limit == 0 {
		c.Limit = DefaultLimit
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Prefix == "" {
		c.Prefix = keyspace.NewVerifyPrefix()
	}
	if c.ScriptTimeout == 0 {
		c.ScriptTimeout = usercode.DefaultScriptTimeout
	}
	return c
}

// validate checks everything that can be checked without a server, and
// builds the rows' plan (plan.Build, as the load run does: "all" leaves
// out a client that does not support the target's topology, redigo on a
// cluster or through Sentinel, and one named is bad input of Clients),
// with "all" expanded in the strategy and client lists.
func (c *Config) validate() error {
	spec := c.spec()
	spec.Label = "" // its errors name no target: verify has one
	p, err := plan.Build(plan.Settings{Strategies: c.Strategies, Clients: c.Clients, Registry: c.Registry, Targets: []topology.Spec{spec}, Matrix: true})
	if err != nil {
		return err
	}
	c.plan, c.Strategies, c.Clients = p, p.Strategies, p.Clients
	return c.validateTarget()
}

// validateTarget checks the target's fields and the login.
func (c *Config) validateTarget() error {
	switch {
	case c.Limit < 1:
		return usage("Limit", fmt.Errorf("%w, got %d", strategies.ErrInvalidLimit, c.Limit))
	case c.Window < 2:
		return usage("Window", fmt.Errorf("%w, got %d", ErrInvalidWindow, c.Window))
	case c.Workers < 2:
		return usage("Workers", fmt.Errorf("%w, got %d", ErrInvalidWorkers, c.Workers))
	case c.ScriptTimeout < 0:
		return usage("ScriptTimeout", fmt.Errorf("%w, got %s", ErrInvalidScriptTimeout, c.ScriptTimeout))
	case c.Target.Login.DB < 0:
		return usage("Target.Login.DB", fmt.Errorf("%w, got %d", ErrInvalidDB, c.Target.Login.DB))
	case c.Target.Login.TLS != nil && c.Target.Private():
		return usage("Target.Login.TLS", ErrTLSWithoutAddr)
	}
	return fieldOf(c.spec().Validate())
}

// Run validates cfg, finds or starts the server, and runs every Check for
// every strategy x client. Rows run in parallel, each on its own keys,
// except for the checks that act on the whole server ("noscript",
// "restart"), which run one row at a time after all the others. At the end
// Run deletes every key under the prefix.
//
// Bad input, an unreachable Target.Addr, a login or TLS handshake it
// refuses (connection.Check), a server that the load run's pre-flight
// refuses (a replica, one at maxmemory, a user who may not write:
// topology.Preflight) and a missing redis-server are *UsageError, returned
// before anything is written. A check that cannot do
// its work (a lost connection, say) is a FAIL cell, not an error. When ctx
// ends early, the checks it stopped and those that had not started are
// NotRun cells, not FAIL, and Run returns ctx's error beside the matrix;
// it also returns an error when the clean-up fails.
func Run(ctx context.Context, cfg Config) (*Matrix, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Log
	if log == nil {
		log = io.Discard
	}
	t, err := openTarget(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer t.Close() // and the claim on the prefix, held while verify writes
	// The checks' own reads and seeds, through go-redis: a cluster client
	// on a cluster, one that follows the master that Sentinel names.
	observer, err := t.NewAdmin(connection.Admin{PoolSize: 32})
	if err != nil {
		return nil, usage("Target.Login.TLS", err) // topology.Open has read the files already
	}
	defer observer.Close()
	nodes, err := t.Nodes(ctx) // the masters, which the checks' SCANs walk
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	server := serverOf(t)

	m := &Matrix{
		Tool:    "rlbench verify",
		Started: time.Now().UTC(),
		Server:  server,
		Prefix:  cfg.Prefix,
		Limit:   cfg.Limit,
		Window:  cfg.Window,
		Workers: cfg.Workers,
		Checks:  checkNames(),
	}
	var rows []*row
	for _, pc := range cfg.plan.Cells(0) {
		r := newRow(cfg, pc.Info, pc.Client, server, t, observer)
		r.nodes = nodes
		rows = append(rows, r)
	}
	watch, err := watchUserCode(ctx, cfg, t)
	if err != nil {
		return nil, err
	}
	describe := t.Describe()
	if !t.Spec.IsCluster() && !t.Spec.IsSentinel() {
		describe = describeServer(server)
	}
	fmt.Fprintf(log, "rlbench verify: %s; prefix %q; %d rows x %d checks, limit %d, window %ds\n",
		describe, cfg.Prefix, len(rows), len(allChecks), cfg.Limit, cfg.Window)
	runRows(ctx, rows, log, watch)
	// No script of a user strategy may be left running: the libraries'
	// deletion and the clean-up below would meet a BUSY server, and so
	// would every other client of it once verify has exited.
	watchErr := watch.settle()

	m.addRows(rows, log)
	m.ElapsedS = time.Since(m.Started).Seconds()

	// The clean-up runs even after an interrupt: it is short, and the
	// user's server should not keep the checks' keys.
	for _, n := range nodes {
		if _, err := audit.Cleanup(context.WithoutCancel(ctx), n, cfg.Prefix); err != nil {
			return m, errors.Join(watchErr, fmt.Errorf("verify: %w", err))
		}
	}
	if err := ctx.Err(); err != nil {
		return m, errors.Join(watchErr, fmt.Errorf("verify: %w", err))
	}
	return m, watchErr
}

// addRows adds the rows that ran to m, and logs what each row says of
// the libraries it loaded (Row.Libraries).
func (m *Matrix) addRows(rows []*row, log io.Writer) {
	for _, r := range rows {
		m.Rows = append(m.Rows, Row{
			Strategy:  r.info.Name,
			Client:    r.clientName,
			Info:      r.info,
			Cells:     r.cells,
			Libraries: r.libraries,
		})
		for _, l := range r.libraries {
			fmt.Fprintf(log, "rlbench verify: %s/%s: %s\n", r.info.Name, r.clientName, l)
		}
	}
}

// runRows runs the rows' checks in two phases and logs the end of each:
// first the checks that touch only their own keys, rows in parallel; then
// the checks that act on the whole server, one row at a time. The rows of
// a user strategy run under its watchdog's context.
func runRows(ctx context.Context, rows []*row, log io.Writer, watch *watches) {
	start := time.Now()
	var workers sync.WaitGroup
	for _, r := range rows {
		workers.Go(func() { r.run(watch.of(ctx, r.info.Name), false) })
	}
	workers.Wait()
	for _, r := range rows {
		if r.shared != nil {
			r.closeClient(r.shared)
			r.shared = nil
		}
	}
	fmt.Fprintf(log, "rlbench verify: per-key checks done in %s\n", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	for _, r := range rows {
		r.run(watch.of(ctx, r.info.Name), true)
	}
	fmt.Fprintf(log, "rlbench verify: server-wide checks done in %s\n", time.Since(start).Round(time.Millisecond))
}

func describeServer(s Server) string {
	if s.Managed {
		return fmt.Sprintf("private %s %s on %s, no persistence", s.Name, s.Version, s.Addr)
	}
	return fmt.Sprintf("%s %s at %s", s.Name, s.Version, s.Addr)
}

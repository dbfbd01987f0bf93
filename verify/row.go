package verify

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/serverinfo"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/topology"
)

// row is one strategy x client while its checks run.
type row struct {
	cfg        Config
	info       strategies.Info
	clientName string // the client library, e.g. "rueidis"
	server     Server
	// target is the target the row's clients connect to (nil in tests
	// of a row that never connects).
	target   *topology.Target
	observer redis.UniversalClient // independent reads and seeds, through go-redis
	nodes    []*redis.Client       // the masters, for the checks' SCANs
	prefix   string                // <Prefix><strategy>:<client>:
	cells    []Cell                // one per allChecks
	scripts  int64                 // EvalInts calls seen by the per-key checks
	// shared is the per-key checks' client, closed by runRows once every
	// row's are done: a library one row's client loaded and deletes is
	// not deleted under another row's checks.
	shared *countingClient
	// libraries are the Functions libraries the row's clients were given
	// and what became of them (closeClient).
	libraries []results.Library
}

// newRow returns the row of strategy info x the client named clientName
// on t (described by server), its cells not run yet.
func newRow(cfg Config, info strategies.Info, clientName string, server Server, t *topology.Target, observer redis.UniversalClient) *row {
	r := &row{
		cfg:        cfg,
		info:       info,
		clientName: clientName,
		server:     server,
		target:     t,
		observer:   observer,
		prefix:     keyspace.Cell(cfg.Prefix, info.Name, clientName),
		cells:      make([]Cell, len(allChecks)),
	}
	for i, c := range allChecks {
		r.cells[i] = Cell{Check: c.Name, Outcome: NotRun, Note: "not started"}
	}
	return r
}

// unsupported says why the server or the client cannot run the row's
// strategy, or "" when they can.
func (r *row) unsupported() string {
	if !serverinfo.VersionAtLeast(r.server.RedisVersion, r.info.MinRedis) {
		return fmt.Sprintf("%s needs Redis >= %s; server is %s %s", r.info.Name, r.info.MinRedis, r.server.Name, r.server.Version)
	}
	if !r.info.Supports(r.clientName) {
		return fmt.Sprintf("%s runs only on %s", r.info.Name, joinNames(r.info.Clients))
	}
	return ""
}

// privateServer is the private single server the row runs on, which the
// server-wide checks restart and flush; nil on any other target.
func (r *row) privateServer() *redisserver.Server {
	if !r.server.Managed {
		return nil
	}
	return r.target.PrivateServer()
}

// sentinel is the private Sentinel set-up with relays the row runs on
// (its clients follow the master the sentinels name), which the
// split-brain check cuts; nil elsewhere.
func (r *row) sentinel() *redisserver.Sentinel {
	if !r.server.Sentinel {
		return nil
	}
	return r.target.ManagedSentinel()
}

// run runs the row's per-key checks, or its server-wide ones. The per-key
// checks share one client; each server-wide check opens its own.
func (r *row) run(ctx context.Context, serverWide bool) {
	if note := r.unsupported(); note != "" {
		r.fill(serverWide, Cell{Outcome: Unsupported, Note: note})
		return
	}
	if err := ctx.Err(); err != nil {
		r.fill(serverWide, notStarted(err))
		return
	}
	var shared *countingClient
	if !serverWide {
		var err error
		if shared, err = r.connect(ctx); err != nil {
			r.fill(false, interrupted(ctx, failf("%v", err)))
			return
		}
		defer func() {
			r.scripts = shared.scripts.Load()
			r.shared = shared
		}()
	}
	for i, c := range allChecks {
		if c.ServerWide == serverWide {
			cell := r.runCheck(ctx, c, shared)
			cell.Check = c.Name
			r.cells[i] = cell
		}
	}
}

// runCheck runs one check: it asks whether the check applies, builds the
// trial (the shared prologue of every check), and runs it; a try whose
// reading came too late to judge (Cell.late) is run again on fresh keys,
// up to lateTries in all. A check that ctx ends before or while it runs
// is not run, not failed.
func (r *row) runCheck(ctx context.Context, c checkDef, shared *countingClient) Cell {
	if err := ctx.Err(); err != nil {
		return notStarted(err)
	}
	if c.notApplicable != nil {
		if reason := c.notApplicable(r); reason != "" {
			return Cell{Outcome: NotApplicable, Note: reason}
		}
	}
	for try := 1; ; try++ {
		cell := r.runTrial(ctx, c, shared, try)
		late := cell.late
		cell.late, cell.noKey = false, false
		switch {
		case !late && try > 1:
			cell.Note = strings.TrimPrefix(cell.Note+"; ", "; ") + fmt.Sprintf("on try %d: the %d before read too late to judge", try, try-1)
			return interrupted(ctx, cell)
		case !late || ctx.Err() != nil:
			return interrupted(ctx, cell)
		case try == lateTries:
			cell.Note += fmt.Sprintf(" (each of %d tries read too late to judge: the machine is too slow for the %ds window)", lateTries, cmp.Or(c.window, r.cfg.Window))
			cell.TooLate = true
			return cell
		}
	}
}

// lateTries is how many times runCheck runs a check whose readings come
// too late to judge (Cell.late), each on fresh keys, before it fails.
const lateTries = 3

// runTrial builds the trial of check c's try (the shared prologue of
// every check) and runs it.
func (r *row) runTrial(ctx context.Context, c checkDef, shared *countingClient, try int) Cell {
	t, err := r.newTrial(ctx, c, shared)
	if err != nil {
		return failf("%v", err)
	}
	defer t.close()
	if try > 1 {
		t.check = fmt.Sprintf("%s~%d", c.Name, try) // fresh keys
	}
	return c.run(ctx, t)
}

// fill sets every per-key (or every server-wide) cell to cell.
func (r *row) fill(serverWide bool, cell Cell) {
	for i, c := range allChecks {
		if c.ServerWide == serverWide {
			cell.Check = c.Name
			r.cells[i] = cell
		}
	}
}

// notStarted is the cell of a check that ctx ended before it started.
func notStarted(err error) Cell {
	return Cell{Outcome: NotRun, Note: "interrupted before it started: " + err.Error()}
}

// interrupted returns cell, or, when cell is a FAIL and ctx has ended, a
// not-run cell: a check cut short did not fail, it did not finish.
func interrupted(ctx context.Context, cell Cell) Cell {
	if cell.Outcome != Fail || ctx.Err() == nil {
		return cell
	}
	return Cell{Outcome: NotRun, Note: "interrupted while it ran: " + cell.Note}
}

// connect opens a client and prepares the strategy if it needs preparing.
func (r *row) connect(ctx context.Context) (*countingClient, error) {
	return r.connectTo(ctx, "", 0)
}

// connectTo is connect through a proxy at addr in front of the server
// ("": straight to the target), with the client's retries
// (clients.Options.Retries). Through a proxy, the client is a plain one to
// the server behind it (a Sentinel set-up's master).
func (r *row) connectTo(ctx context.Context, addr string, retries int) (*countingClient, error) {
	o := r.target.ClientOptions(clients.Options{})
	var err error
	if o.TLS, err = r.target.Login.TLS.Config(); err != nil { // a *tls.Config of its own
		return nil, fmt.Errorf("connect: %w", err)
	}
	if addr != "" {
		if o.TLS != nil && o.TLS.ServerName == "" {
			o.TLS.ServerName = proxiedServerName(r.server.Addr)
		}
		o.Addr, o.Cluster, o.Sentinel = addr, nil, connection.Sentinel{}
	}
	o.Workers, o.Retries = r.cfg.Workers, retries
	adapter, err := clients.New(r.clientName, o)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	client := &countingClient{Conn: adapter}
	if err := r.prepare(ctx, client); err != nil {
		r.closeClient(client)
		return nil, err
	}
	return client, nil
}

// closeClient deletes the libraries of Redis Functions that c loaded
// (clients.Conn.DeleteLibraries: not those there before), even after an
// interrupt, records them in the row, and closes c.
func (r *row) closeClient(c *countingClient) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	libs, err := c.DeleteLibraries(ctx)
	for _, l := range libs {
		lib := results.Library{Name: l.Name, Loaded: l.Loaded, Reloads: l.Reloads, Deleted: l.Deleted}
		if l.Loaded && !l.Deleted && err != nil {
			lib.DeleteError = err.Error()
		}
		r.libraries = results.AddLibraries(r.libraries, []results.Library{lib})
	}
}

// prepare calls Prepare when the strategy is a strategies.Preparer.
func (r *row) prepare(ctx context.Context, client strategies.Client) error {
	strategy, err := r.strategy(r.cfg.Window)
	if err != nil {
		return err
	}
	if p, ok := strategy.(strategies.Preparer); ok {
		if err := p.Prepare(ctx, client); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
	}
	return nil
}

// strategy builds the row's strategy with the row's limit and window seconds.
func (r *row) strategy(window int64) (strategies.Strategy, error) {
	return r.info.Build(strategies.Config{Limit: r.cfg.Limit, Window: window})
}

// trial is one check's run on one row: what every check starts with.
type trial struct {
	*row
	// check is the check's name, and the try's after the first
	// ("first~2"); every key of the trial is under <row prefix><check>:.
	check string
	// window is the strategy's window, in seconds.
	window int64
	// strategy is the row's strategy, built with window.
	strategy strategies.Strategy
	// client is the row's shared client for a per-key check, or a fresh
	// one, prepared, for a server-wide check.
	client *countingClient
	// ownClient is true when client is the trial's own, closed with it.
	ownClient bool
	// decided is when the trial's last decision that fresh keys or a
	// sequence judge by was sent (allowedFresh, sequence); zero before.
	decided time.Time
}

// newTrial builds the strategy with the check's window and, for a
// server-wide check, a fresh client: an earlier row's restart may have
// emptied the server, so it is prepared again.
func (r *row) newTrial(ctx context.Context, c checkDef, shared *countingClient) (*trial, error) {
	t := &trial{row: r, check: c.Name, window: c.window, client: shared}
	if t.window == 0 {
		t.window = r.cfg.Window
	}
	var err error
	if t.strategy, err = r.strategy(t.window); err != nil {
		return nil, err
	}
	if c.ServerWide {
		if t.client, err = r.connect(ctx); err != nil {
			return nil, err
		}
		t.ownClient = true
	}
	return t, nil
}

// close closes the trial's own client.
func (t *trial) close() {
	if t.ownClient {
		t.row.closeClient(t.client)
	}
}

// keyPrefix is the prefix of every key of the trial.
func (t *trial) keyPrefix() string { return t.prefix + t.check + ":" }

// key names a key of the trial: its prefix, then name in a hash tag.
func (t *trial) key(name string) string { return t.keyPrefix() + "{" + name + "}" }

// countingClient is the row's client, counting the calls that tell what
// a strategy really sends.
type countingClient struct {
	clients.Conn
	scripts       atomic.Int64 // EvalInts calls
	functionLoads atomic.Int64 // FunctionLoad calls
}

// Unwrap returns the row's adapter, in which the published strategies
// find the go-redis client of a go-redis row (clients.GoRedisConn).
func (c *countingClient) Unwrap() strategies.Client { return c.Conn }

func (c *countingClient) EvalInts(ctx context.Context, s *strategies.Script, keys []string, args strategies.Args) ([]int64, error) {
	c.scripts.Add(1)
	return c.Conn.EvalInts(ctx, s, keys, args)
}

func (c *countingClient) FunctionLoad(ctx context.Context, code string) error {
	c.functionLoads.Add(1)
	return c.Conn.FunctionLoad(ctx, code)
}

// joinNames lists names in prose: "a", "a and b", "a, b and c".
func joinNames(names []string) string {
	switch len(names) {
	case 0:
		return "no client"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

package rlbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/rlbench/rlbench/admission"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/failover"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/netproxy"
	"github.com/rlbench/rlbench/plan"
	"github.com/rlbench/rlbench/probe"
	"github.com/rlbench/rlbench/redirects"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/samplers"
	"github.com/rlbench/rlbench/saturation"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/topology"
	"github.com/rlbench/rlbench/usercode"
	"github.com/rlbench/rlbench/workload"
)

// cell is one target x strategy x client of a run, with the phases that
// make its results.Run: connect, warm up, measure, and audit and clean up.
type cell struct {
	cfg    Config
	target *topology.Target
	// strategy and client are the registered names; info is the
	// strategy's, from the plan's cell, and registry the run's
	// strategies, which hold it.
	strategy, client string
	info             strategies.Info
	registry         *strategies.Registry
	// runPrefix is the run's key prefix on this target; prefix is the
	// cell's own, under it.
	runPrefix, prefix string
	// label names the cell in log lines: "lua/go-redis", after the
	// target's label when the run has several targets.
	label string
	impl  strategies.Strategy
	conn  clients.Conn
	// guard confines a user strategy's code (package usercode); nil otherwise.
	guard *usercode.Guard
	// proxy is what the client's connections go through when a network
	// fault is asked for (faults.StartProxy); nil otherwise.
	proxy *netproxy.Proxy
	// live receives the measured load's figures as it runs; nil: none.
	live LiveMetrics
	// shape is what a user strategy's first decisions showed of its
	// counter (checkUserStrategy); the zero value for a built-in one.
	shape userShape
	// recorded are the libraries recorded under the run's prefix before
	// their FUNCTION LOAD (topology.RecordObject), under recordedMu: the
	// records of those that did not load go at the cell's end.
	recordedMu sync.Mutex
	recorded   []string
}

// newCell returns the cell pc of the run's plan, on t; registry holds
// the run's strategies.
func newCell(cfg Config, t *topology.Target, registry *strategies.Registry, pc plan.Cell) (*cell, error) {
	impl, err := pc.Info.Build(strategies.Config{Limit: cfg.Limit, Window: cfg.Window, Fields: cfg.Fields})
	if err != nil {
		return nil, usage("Strategies", err)
	}
	label := pc.Info.Name + "/" + pc.Client
	if len(cfg.Targets) > 1 {
		label = t.Spec.Label + ": " + label
	}
	return &cell{
		cfg: cfg, target: t, strategy: pc.Info.Name, client: pc.Client, info: pc.Info, registry: registry,
		runPrefix: pc.RunPrefix, prefix: pc.Prefix,
		label: label, impl: impl,
	}, nil
}

// measurement is what the measured load of a cell gave, beside the
// recorder's histograms.
type measurement struct {
	startedAt time.Time
	load      workload.Result
	// err is why the load stopped early; nil or context.Canceled after an
	// interrupt.
	err    error
	events []faults.Event
	// probes are the cell's measurements (cell.probes), saturation among
	// them: made before the client connects, it also says whether a server
	// restarted under the cell.
	probes     *probe.List
	saturation *saturation.Probe
	// fallbacksBefore is the client's NOSCRIPT fallbacks when the measured
	// load started: the warm-up's, which the run's figure leaves out.
	fallbacksBefore int64
}

// run runs the cell: its result, and an error when the cell could not be
// measured or audited. The result is returned with the error whenever it
// holds figures that explain it. A user strategy's cell runs confined
// (package usercode, Confine).
func (c *cell) run(ctx context.Context, log, progress io.Writer, abort context.Context) (results.Run, error) {
	ctx, guard, err := usercode.Confine(ctx, log, usercode.Cell{
		Strategy: c.strategy, Info: c.info, Registry: c.registry, Label: c.label, Prefix: c.prefix, WarmupPrefix: c.warmupPrefix(), RunPrefix: c.runPrefix,
		ScriptTimeout: c.cfg.ScriptTimeout, Faults: c.cfg.Faults, Target: c.target,
	})
	if err != nil {
		return results.Run{}, fmt.Errorf("%s: %w", c.label, err)
	}
	c.guard = guard
	run, err := c.load(ctx, log, progress, abort)
	err = guard.Close(abort, c.label, err)
	if run.Strategy != "" {
		run.UserCodeGuard = guard.Kind()
	}
	return run, err
}

// load connects, warms up, measures, audits and cleans up.
func (c *cell) load(ctx context.Context, log, progress io.Writer, abort context.Context) (run results.Run, err error) {
	// Before the client connects, so that its connections are counted.
	m := measurement{saturation: saturation.NewProbe(ctx, c.target.Sample)}
	defer func() { c.proxy.Close() }() // after the client's connections
	if err := c.connect(ctx, log); err != nil {
		return results.Run{}, err
	}
	defer c.conn.Close()
	// Last, after the audit: the libraries the client loaded go, even
	// after an interrupt; only abort stops it.
	defer func() { run.Libraries = c.deleteLibraries(abort, log) }()
	if err := c.warmUp(ctx, abort); errors.Is(err, topology.ErrClaimLost) {
		return results.Run{}, err // it names the cell
	} else if err != nil {
		return results.Run{}, fmt.Errorf("%s: warm-up: %w", c.label, err)
	}
	if err := c.awaitStart(ctx, log); err != nil {
		return results.Run{}, err
	}
	var rec results.Recorder
	c.measure(ctx, progress, &rec, &m)
	// A user's script may still run on the server after the load (a
	// decision's read timeout): the audit and the library's deletion wait
	// for it (the guard's close reports the watchdog's error).
	_ = c.guard.Settle(abort)
	run = c.result(&rec, &m)
	// A restart's run_id is the more precise reason of the two: read first.
	wiped := c.countersWiped(abort, &m, &run)
	if err := c.claimHeld(abort); err != nil {
		run.Audit = results.Audit{Error: "not audited, no key deleted: " + err.Error()}
		if wiped != nil {
			err = errors.Join(fmt.Errorf("%s: %w", c.label, wiped), err)
		}
		return run, err
	}
	if err := c.auditAndCleanUp(abort, &run); err != nil {
		return run, fmt.Errorf("%s: %w", c.label, err)
	}
	if m.err != nil && !errors.Is(m.err, context.Canceled) {
		return run, fmt.Errorf("%s: %w", c.label, m.err)
	}
	if wiped != nil {
		return run, fmt.Errorf("%s: %w", c.label, wiped)
	}
	return run, nil
}

// countersWiped returns failover.ErrServerRestarted or ErrCountersWiped,
// wrapped, when the cell's counters were wiped under it and none of its
// faults explains it, and says so in run's lost increments (failover.Wiped).
func (c *cell) countersWiped(ctx context.Context, m *measurement, run *results.Run) error {
	return failover.Wiped(c.cfg.Faults, m.saturation.Restarted(ctx), run.LostIncrements)
}

// connect connects the client under test and prepares the strategy on it.
func (c *cell) connect(ctx context.Context, log io.Writer) error {
	o := c.target.ClientOptions(clients.Options{
		Workers: c.cfg.Workload.Workers, FlushDelay: c.cfg.FlushDelay, ClientName: topology.ClientName(c.prefix), Connections: c.cfg.Connections,
		Retries: c.cfg.Retries, DialTimeout: c.cfg.DialTimeout, ReadTimeout: c.cfg.ReadTimeout, WriteTimeout: c.cfg.WriteTimeout,
	})
	c.guard.Login(&o)
	o.BeforeLoad = func(ctx context.Context, name, code string) error {
		// Recorded first: a run killed from here on leaves a record of
		// the library under its prefix, by which rlbench cleanup finds it.
		c.recordedMu.Lock()
		c.recorded = append(c.recorded, name)
		c.recordedMu.Unlock()
		return c.target.RecordObject(ctx, c.runPrefix, keyspace.ObjectLibrary, name, topology.CodeDigest(code))
	}
	var err error
	if c.proxy, o.Addr, o.TLS, err = faults.StartProxy(c.cfg.Faults, o.Addr, o.TLS); err != nil {
		return fmt.Errorf("%s: %w", c.label, err)
	}
	conn, err := clients.New(c.client, o)
	if err != nil {
		return err
	}
	c.conn = conn
	fmt.Fprintf(log, "rlbench: running %s (%s)\n", c.label, conn.Options())
	// A closed loop keeps every worker's connection busy; an open loop
	// opens what its rate needs as it goes (--workers is its ceiling).
	conns := 1
	if c.cfg.Workload.Rate == 0 {
		conns = c.cfg.Workload.Workers
	}
	if err := conn.Open(ctx, conns); err != nil {
		conn.Close()
		return fmt.Errorf("%s: connect: %w", c.label, err)
	}
	// A failure from here leaves no library the client loaded.
	fail := func(err error) error {
		c.deleteLibraries(context.WithoutCancel(ctx), log)
		conn.Close()
		return fmt.Errorf("%s: %w", c.label, err)
	}
	if p, ok := c.impl.(strategies.Preparer); ok {
		if err := p.Prepare(ctx, conn); err != nil {
			return fail(fmt.Errorf("prepare: %w", err))
		}
	}
	if err := c.checkUserStrategy(ctx); err != nil {
		return fail(err)
	}
	return nil
}

// deleteLibraries deletes the libraries of Redis Functions that the cell's
// client loaded (clients.Conn.DeleteLibraries), says on log what became of
// each library it was given, and returns that; nil when there was none.
func (c *cell) deleteLibraries(ctx context.Context, log io.Writer) []results.Library {
	libs, err := c.conn.DeleteLibraries(ctx)
	c.recordedMu.Lock()
	for _, name := range c.recorded {
		if !slices.ContainsFunc(libs, func(l clients.Library) bool { return l.Name == name }) {
			// Recorded, then not loaded (FUNCTION LOAD failed): nothing
			// of it is on the server.
			_ = c.target.ForgetObject(ctx, c.runPrefix, keyspace.ObjectLibrary, name)
		}
	}
	c.recordedMu.Unlock()
	if len(libs) == 0 {
		return nil
	}
	out := make([]results.Library, len(libs))
	for i, l := range libs {
		out[i] = results.Library{Name: l.Name, Loaded: l.Loaded, Reloads: l.Reloads, Deleted: l.Deleted}
		if l.Loaded && !l.Deleted && err != nil {
			out[i].DeleteError = err.Error()
		}
		if l.Deleted || !l.Loaded {
			// Gone, or never the client's: its record goes (one left
			// names a library that rlbench cleanup checks by its code).
			_ = c.target.ForgetObject(ctx, c.runPrefix, keyspace.ObjectLibrary, l.Name)
		}
		fmt.Fprintf(log, "rlbench: %s: %s\n", c.label, out[i])
	}
	return out
}

// workload is the cell's workload: the run's, on the cell's keys.
func (c *cell) workload() workload.Config {
	wl := c.cfg.Workload
	wl.Prefix = c.prefix
	return wl
}

// warmUp runs the cell's load for Config.Warmup, unrecorded, on keys under
// a prefix of its own beside the cell's, and deletes them: the measured
// load starts with warm connections and a loaded script, and with no
// counters.
func (c *cell) warmUp(ctx, abort context.Context) error {
	if c.cfg.Warmup <= 0 {
		return nil
	}
	wl := c.cfg.Workload
	wl.Prefix = c.warmupPrefix()
	wl.Workers = workload.WarmupWorkers(wl) // a shape's start, not its top
	wl.Duration, wl.Requests, wl.CrashRate, wl.RacePause, wl.Stages = c.cfg.Warmup, 0, 0, 0, nil
	var rec results.Recorder
	_, runErr := workload.Run(ctx, wl, c.impl, c.conn, &rec, nil)
	if err := c.claimHeld(abort); err != nil {
		return err
	}
	// Deleted even after an interrupt: a non-atomic strategy's warm-up
	// keys can be immortal.
	err := c.aborted(abort, c.target.Cleanup(abort, wl.Prefix))
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	return err
}

// warmupPrefix is the prefix of the cell's warm-up keys.
func (c *cell) warmupPrefix() string { return keyspace.WarmupCell(c.runPrefix, c.strategy, c.client) }

// awaitStart waits until Config.StartAt, when it is still ahead (for the
// first cell of a run; the later ones start after it).
func (c *cell) awaitStart(ctx context.Context, log io.Writer) error {
	wait := time.Until(c.cfg.StartAt)
	if c.cfg.StartAt.IsZero() || wait <= 0 {
		return nil
	}
	fmt.Fprintf(log, "rlbench: %s waits %s, until %s, to start\n", c.label, wait.Round(time.Millisecond), c.cfg.StartAt.Format(time.RFC3339Nano))
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// measure runs the measured load into rec, with the faults and the cell's
// probes around it, and fills m.
func (c *cell) measure(ctx context.Context, progress io.Writer, rec *results.Recorder, m *measurement) {
	ft := c.target.FaultSubject(c.prefix, c.cfg.AllowServerWideFaults)
	ft.Proxy = c.proxy
	m.probes = c.probes(progress, rec, &ft, m.saturation)
	m.probes.Start(ctx)
	stopFaults := faults.ScheduleNotify(ctx, c.cfg.Faults, ft, m.probes.Fault)
	m.fallbacksBefore = c.conn.Fallbacks()
	m.startedAt = time.Now()
	m.load, m.err = workload.Run(ctx, c.workload(), c.impl, c.conn, rec, m.probes)
	m.events = stopFaults()
	m.probes.Stop(ctx, m.startedAt)
}

// probes are the cell's measurements besides its recorder, each a probe
// of its own package: the one registration of each. They start in this
// order and stop in the reverse one: the failover watch reads the
// counters last, once the servers' readings after the load are taken.
// The watch wraps ft's failover faults: call it before the faults start.
func (c *cell) probes(progress io.Writer, rec *results.Recorder, ft *faults.Subject, sat *saturation.Probe) *probe.List {
	t, wl, info := c.target, c.workload(), c.measuredInfo()
	list := probe.NewList()
	if watch := failover.New(ft, failover.Options{ // nil for a cell that neither counts increments nor fails over
		Strategy: info, Increments: c.shape.increments, Admin: t.Admin, Server: t.Server.Addr, Prefix: wl.Prefix, Keys: wl.Keys,
		Limit: c.cfg.Limit, Window: c.cfg.Window, Fallbacks: c.conn.Fallbacks,
		Managed: t.ManagedSentinel(), Faults: c.cfg.Faults,
	}); watch != nil {
		list.Add(watch)
	}
	audits := samplers.NewPeriodicAudit(t, wl.Prefix, c.cfg.Window, c.cfg.AuditEvery, c.fieldAudit())
	list.Add(redirects.NewProbe(t.Redirects))
	list.Add(sat)
	list.Add(audits)
	list.Add(samplers.NewMonitor(progress, c.label, rec, audits.Latest(), wl.LabelSeries))
	if c.live != nil {
		list.Add(c.live.Probe(t.Spec.Label, c.strategy, c.client, rec, audits.Latest()))
	}
	list.Add(admission.NewProbe(info, wl.Keys, c.cfg.Limit, c.cfg.Window, c.cfg.Faults))
	return list
}

// measuredInfo is the Info the cell's figures read of its strategy: the
// registered one, but for a user strategy whose counts are not ranks
// (userShape.ranked), which no figure may read as a fixed window's.
func (c *cell) measuredInfo() strategies.Info {
	info := c.info
	if info.Source != "" && !c.shape.ranked {
		info.FixedWindow = false
	}
	return info
}

// result is the cell's results.Run, before the audit.
func (c *cell) result(rec *results.Recorder, m *measurement) results.Run {
	run := results.NewRun(rec, m.load.Elapsed)
	run.StartedAt = m.startedAt.UTC()
	run.Incomplete = m.err != nil // the load was cut short
	m.load.Report(&run)
	run.Target, run.Server = c.target.Spec.Label, &c.target.Server
	run.Strategy, run.Client, run.ClientOptions, run.Workers = c.strategy, c.client, c.conn.Options(), c.cfg.Workload.Workers
	info := c.info
	run.ImmortalKeysLeak = !info.FixedWindow || info.Heals
	run.ImmortalByDesign = info.NoTTL
	run.Environment = results.EnvironmentOf(clients.Modules[c.client], clients.Version(c.client))
	run.ScriptFallbacks = c.conn.Fallbacks() - m.fallbacksBefore
	run.OnError, run.Admitted = c.cfg.OnError, run.Allowed
	if c.cfg.OnError == "open" {
		// A simulated crash served no one: it is not admitted.
		run.Admitted += run.Errors - run.ErrorKinds[results.KindCrashed]
	}
	run.Faults = m.events
	m.probes.Report(&run)
	return run
}

// auditAndCleanUp audits the cell's keys into run and, unless KeepKeys,
// deletes them in the same pass, under abort rather than the run's context: both run even
// after an interrupt, since they are short and the user's keys should not
// outlive the run; only abort (a second interrupt) stops them.
func (c *cell) auditAndCleanUp(abort context.Context, run *results.Run) error {
	opts := topology.KeyAudit(c.prefix, c.maxTTL(), !c.cfg.KeepKeys, c.fieldAudit())
	info := c.info
	if info.Stamp != "" && info.Stamp != strategies.StampHashed && !info.StampHidden && info.WindowEnd == nil {
		// The window is the name's last number (strategies.Info.Stamp).
		opts.WindowStamp, opts.Window = info.Stamp, time.Duration(c.cfg.Window)*time.Second
	}
	rep, err := c.target.Scan(abort, opts)
	if err != nil {
		err = c.aborted(abort, err)
		run.Audit = results.Audit{Error: err.Error()}
		return fmt.Errorf("%w: %w", ErrAuditFailed, err)
	}
	run.Audit = rep.Result()
	run.Audit.Stamp = info.Stamp
	if perNode := c.target.PerNode(rep); perNode != nil {
		run.AuditPerNode = make(map[string]results.Audit, len(perNode))
		for _, n := range perNode {
			n.Result.Stamp = info.Stamp
			run.AuditPerNode[n.Addr] = n.Result
		}
	}
	return nil
}

// claimHeld returns nil while the run holds its claim on its prefix on
// the cell's target: lost (found so before, or now), the error says so,
// and the cell deletes nothing, since the keys under the prefix may be
// another run's now. A claim lost on another target stops the run's load
// (its context), but this target's keys are still the run's, to audit
// and delete.
func (c *cell) claimHeld(abort context.Context) error {
	if err := c.target.CheckClaim(abort); err != nil {
		return claimLost(c, err)
	}
	return nil
}

// claimLost is the error of cell c once the run's claim on its prefix is
// lost (err, wrapping topology.ErrClaimLost).
func claimLost(c *cell, err error) error {
	return fmt.Errorf("%s: %w: the run stopped its load there, audited nothing and deleted no key under %q on %s: those keys may be another run's now; run rlbench cleanup on that prefix only once no run holds it",
		c.label, err, c.runPrefix, c.target.Server.Addr)
}

// ErrAuditFailed is returned, wrapped, when a cell's audit did not
// complete: its figures are unknown (results.Audit.Error), not zero, and
// its keys were not deleted. The run stops there (ErrStopped).
var ErrAuditFailed = errors.New("the audit of the cell's keys failed")

// maxTTL is the longest TTL, in seconds, the cell's strategy gives a key
// by design (Info.MaxTTL: the window, or spring-gateway's two, and
// Info.TTLSlack); a longer one counts as "ttl>win".
func (c *cell) maxTTL() int64 { return c.info.MaxTTL(c.cfg.Window) }

// fieldAudit reports whether the cell's counters are hash fields, which its
// audit then reads field by field (audit.Options.Fields).
func (c *cell) fieldAudit() bool { return c.info.Layout == strategies.LayoutHashField }

// ErrAborted is returned, wrapped, when a second interrupt stopped the
// audit or the clean-up of a cell; the error names the keys it left.
var ErrAborted = errors.New("stopped by a second interrupt")

// aborted says which keys a cell leaves when abort stopped its audit or
// clean-up with err; otherwise it returns err as it is.
func (c *cell) aborted(abort context.Context, err error) error {
	if err == nil || abort.Err() == nil {
		return err
	}
	if left := c.keysLeft(); left != "" {
		return fmt.Errorf("%w: %s", ErrAborted, left)
	}
	return ErrAborted
}

// keysLeft says which keys a cell that did not finish its clean-up may
// leave, and how to remove them; "" on a private server, whose keys go
// with it when the run stops it.
func (c *cell) keysLeft() string {
	if c.target.Spec.Private() {
		return ""
	}
	return fmt.Sprintf("keys under %q may remain on %s (remove them with: rlbench cleanup --prefix '%s' and the same target flags)",
		c.runPrefix, c.target.Server.Addr, c.runPrefix)
}

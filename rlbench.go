// Package rlbench runs rate-limiter counter strategies under load against a
// real Redis and reports latency, throughput, admissions and the immortal
// keys (counters left with no TTL) each strategy leaves behind.
//
// The command in cmd/rlbench is a thin layer over Run: it parses flags into
// a Config and prints the Report.
package rlbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/admission"
	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/redirects"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/saturation"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/workload"
)

// Config is one invocation of rlbench: which strategies on which clients,
// the workload, and the target server. Its zero value runs every default
// against a private redis-server.
type Config struct {
	// Strategies are strategy names (see strategies.Names), or "all"; nil
	// means "lua".
	Strategies []string `json:"strategies"`
	// Clients are client names (see clients.Names), or "all"; nil means
	// "go-redis".
	Clients []string `json:"client_libs"`
	// Limit is the number of requests allowed per key per window; 0 means strategies.DefaultLimit.
	Limit int64 `json:"limit"`
	// Window is the counter's lifetime, in whole seconds; 0 means strategies.DefaultWindow.
	Window int64 `json:"window_s"`
	// Workload is the load each strategy x client cell runs. An empty
	// Prefix means "rlbench:<run-id>:" with a fresh random run id.
	Workload workload.Config `json:"workload"`

	// Targets are the servers every strategy x client cell runs against,
	// one after another. Empty means one target: Addr, or a private
	// RedisServer when Addr is "".
	Targets []TargetSpec `json:"targets,omitempty"`
	// Addr targets an existing server (host:port); "" starts a private one.
	// A shorthand for one target; not with Targets.
	Addr string `json:"addr,omitempty"`
	// Password authenticates against every existing server; never written
	// to reports.
	Password string `json:"-"`
	// DB is the database number used on every existing server.
	DB int `json:"db"`
	// RedisServer is the binary started when Addr is ""; "" means
	// redis-server on PATH. A shorthand for one target; not with Targets.
	RedisServer string `json:"redis_server,omitempty"`
	// AuditEvery audits the cell's keys this often during the load, for the
	// immortal count in the per-second series; 0 means only at the end.
	AuditEvery time.Duration `json:"audit_every_ns"`
	// Warmup runs each cell's load this long, unrecorded and on keys of its
	// own, before the measured load; 0 means none.
	Warmup time.Duration `json:"warmup_ns"`

	// FlushDelay is rueidis' MaxFlushDelay (see clients.Options); 0 means
	// rueidis' default, no delay.
	FlushDelay time.Duration `json:"rueidis_flush_delay_ns"`
	// KeepKeys leaves each run's keys in Redis after the audit instead of
	// deleting them.
	KeepKeys bool `json:"keep_keys"`
	// OnError is the outage policy for a decision that failed: "open"
	// admits the request, "closed" rejects it; "" means DefaultOnError.
	OnError string `json:"on_error"`
	// Faults are injected into every cell's load at their times.
	Faults []faults.Fault `json:"faults,omitempty"`
}

// TargetSpec names one server of a run: an existing one at Addr, or a
// private one started from RedisServer; or a Redis Cluster: an existing one
// reached through the nodes in Cluster, or a private one of the size
// ManagedCluster gives. At most one of Addr, Cluster and ManagedCluster.
type TargetSpec struct {
	// Label names the target in reports; "" means its address or binary.
	Label string `json:"label"`
	// Addr is host:port of an existing server; "" starts a private one.
	Addr string `json:"addr,omitempty"`
	// RedisServer is the binary of the private server (or of every node
	// of a managed cluster); "" means redis-server on PATH.
	RedisServer string `json:"redis_server,omitempty"`
	// Cluster is host:port of one or more nodes of an existing Redis
	// Cluster; the clients discover the rest.
	Cluster []string `json:"cluster,omitempty"`
	// ManagedCluster is "N" or "NxR": rlbench starts N private masters with
	// R replicas each (redisserver.ParseClusterSize), forms the cluster,
	// and stops it at the end.
	ManagedCluster string `json:"managed_cluster,omitempty"`
}

// managedWithReplicas reports whether t is a private cluster whose masters
// have replicas, which the failover fault needs.
func managedWithReplicas(t TargetSpec) bool {
	if t.ManagedCluster == "" {
		return false
	}
	_, replicas, err := redisserver.ParseClusterSize(t.ManagedCluster)
	return err == nil && replicas > 0
}

// isCluster reports whether t names a Redis Cluster.
func (t TargetSpec) isCluster() bool { return len(t.Cluster) > 0 || t.ManagedCluster != "" }

// ParseTarget reads "[LABEL=]VALUE", as --addr and --redis-server take it.
func ParseTarget(s string, private bool) TargetSpec {
	label, value, ok := strings.Cut(s, "=")
	if !ok {
		label, value = "", s
	}
	if private {
		return TargetSpec{Label: label, RedisServer: value}
	}
	return TargetSpec{Label: label, Addr: value}
}

// DefaultWarmup is the command line's warm-up before each cell.
const DefaultWarmup = time.Second

// DefaultOnError is the outage policy when none is given: fail open, as
// most rate limiters do, so that a Redis outage does not reject everyone.
const DefaultOnError = "open"

// OnErrorPolicies lists the accepted outage policies.
var OnErrorPolicies = []string{"open", "closed"}

// UsageError is bad input: a Config field with a value rlbench does not
// accept, or a target it cannot use. Nothing has been written to Redis when
// Run returns one.
type UsageError struct {
	// Field is the Config field at fault, as a Go selector path from the
	// Config: "Window", "Workload.Clients", "Targets.Addr".
	Field string
	// Err says what was wrong and what is accepted.
	Err error
}

func (e *UsageError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usage(field string, err error) error { return &UsageError{Field: field, Err: err} }

// withDefaults returns c with defaults applied and a run prefix chosen.
func (c Config) withDefaults() Config {
	if len(c.Strategies) == 0 {
		c.Strategies = []string{"lua"}
	}
	if len(c.Clients) == 0 {
		c.Clients = clients.Names[:1]
	}
	sc := strategies.Config{Limit: c.Limit, Window: c.Window}.WithDefaults()
	c.Limit, c.Window = sc.Limit, sc.Window
	if c.OnError == "" {
		c.OnError = DefaultOnError
	}
	if len(c.Targets) == 0 {
		c.Targets = []TargetSpec{{Addr: c.Addr, RedisServer: c.RedisServer}}
	}
	c.Targets = labelTargets(c.Targets)
	if c.Workload.Prefix == "" {
		c.Workload.Prefix = audit.NewPrefix("rlbench")
	}
	c.Workload = c.Workload.WithDefaults()
	return c
}

// validate checks everything that can be checked without a server, and
// expands "all" in the strategy and client lists.
func (c *Config) validate() error {
	var err error
	if c.Strategies, err = strategies.Select(c.Strategies); err != nil {
		return usage("Strategies", err)
	}
	if c.Clients, err = clients.Select(c.Clients); err != nil {
		return usage("Clients", err)
	}
	if c.Limit < 1 {
		return usage("Limit", fmt.Errorf("%w, got %d", strategies.ErrInvalidLimit, c.Limit))
	}
	if c.Window < 1 {
		return usage("Window", fmt.Errorf("%w, got %d", strategies.ErrInvalidWindow, c.Window))
	}
	if err := c.Workload.Validate(); err != nil {
		return usage(workloadField(err), err)
	}
	if c.DB < 0 {
		return usage("DB", fmt.Errorf("db must be >= 0, got %d", c.DB))
	}
	if !slices.Contains(OnErrorPolicies, c.OnError) {
		return usage("OnError", fmt.Errorf("unknown policy %q (accepted: %s)", c.OnError, strings.Join(OnErrorPolicies, ", ")))
	}
	if c.FlushDelay < 0 {
		return usage("FlushDelay", fmt.Errorf("flush delay must be >= 0, got %s", c.FlushDelay))
	}
	if c.AuditEvery < 0 {
		return usage("AuditEvery", fmt.Errorf("audit period must be >= 0, got %s", c.AuditEvery))
	}
	if c.Warmup < 0 {
		return usage("Warmup", fmt.Errorf("warm-up must be >= 0, got %s", c.Warmup))
	}
	for _, t := range c.Targets {
		if t.Addr != "" && t.isCluster() || len(t.Cluster) > 0 && t.ManagedCluster != "" {
			return usage("Targets.Cluster", fmt.Errorf("%s: give one of --addr, --cluster and --managed-cluster", t.Label))
		}
		if t.ManagedCluster != "" {
			if _, _, err := redisserver.ParseClusterSize(t.ManagedCluster); err != nil {
				return usage("Targets.ManagedCluster", err)
			}
		}
		if t.isCluster() && c.DB != 0 {
			return usage("DB", fmt.Errorf("%s: %w", t.Label, clients.ErrClusterDB))
		}
		for _, f := range c.Faults {
			clusterFault := f.Kind == faults.Failover || f.Kind == faults.Reshard
			if t.isCluster() && !clusterFault {
				return usage("Faults", fmt.Errorf("%s: %s: only failover and reshard are supported on a cluster", t.Label, f))
			}
			if f.Kind == faults.Failover && !managedWithReplicas(t) {
				return usage("Faults", fmt.Errorf("%s: %s needs a private cluster with replicas (--managed-cluster NxR)", t.Label, f))
			}
			if f.Kind == faults.Reshard && t.ManagedCluster == "" {
				return usage("Faults", fmt.Errorf("%s: %s needs a private cluster (--managed-cluster N): it moves a slot, keys outside the run's prefix included", t.Label, f))
			}
		}
	}
	for _, f := range c.Faults {
		if f.Kind == faults.Restart && slices.ContainsFunc(c.Targets, func(t TargetSpec) bool { return t.Addr != "" }) {
			return usage("Faults", fmt.Errorf("%s needs private servers that rlbench starts; leave out --addr", f))
		}
		if d := c.Workload.Duration; d > 0 && f.At >= d {
			return usage("Faults", fmt.Errorf("%s is at or after the end of the run (--duration %s)", f, d))
		}
		// A stall or a reshard's hold outlasting the load would hold up
		// the end of the cell, and take the after-load readings late.
		if d := c.Workload.Duration; d > 0 && f.Arg > 0 && f.At+f.Arg >= d {
			return usage("Faults", fmt.Errorf("%s does not end before the run does (--duration %s)", f, d))
		}
	}
	return nil
}

// workloadField names the Workload field behind a workload validation error.
func workloadField(err error) string {
	switch {
	case errors.Is(err, workload.ErrInvalidClients):
		return "Workload.Clients"
	case errors.Is(err, workload.ErrInvalidKeys):
		return "Workload.Keys"
	case errors.Is(err, workload.ErrInvalidKeyDist):
		return "Workload.KeyDist"
	case errors.Is(err, workload.ErrInvalidRequests):
		return "Workload.Requests"
	case errors.Is(err, workload.ErrEmptyPrefix):
		return "Workload.Prefix"
	case errors.Is(err, workload.ErrInvalidCrash):
		return "Workload.CrashRate"
	case errors.Is(err, workload.ErrInvalidPause):
		return "Workload.RacePause"
	case errors.Is(err, workload.ErrInvalidRate):
		return "Workload.Rate"
	}
	return "Workload.Duration"
}

// labelTargets gives every target a label, unique in the run: its own, or
// its address, or its binary's name, with "#2", "#3" ... after repeats.
func labelTargets(ts []TargetSpec) []TargetSpec {
	out := slices.Clone(ts)
	seen := map[string]int{}
	for i := range out {
		t := &out[i]
		if t.Label == "" {
			switch {
			case t.Addr != "":
				t.Label = t.Addr
			case len(t.Cluster) > 0:
				t.Label = "cluster " + t.Cluster[0]
			case t.ManagedCluster != "":
				t.Label = "cluster " + t.ManagedCluster
			case t.RedisServer != "":
				t.Label = filepath.Base(t.RedisServer)
			default:
				t.Label = redisserver.DefaultBinary
			}
		}
		seen[t.Label]++
		if n := seen[t.Label]; n > 1 {
			t.Label += "#" + strconv.Itoa(n)
		}
	}
	return out
}

// DefaultFlushDelay is the rueidis MaxFlushDelay the rlbench command uses
// unless --rueidis-flush-delay is given (in Config, FlushDelay 0 means none),
// for the workload wl: 20 µs in a closed loop of at least 100
// workers, where it lets rueidis gather a batch per write (as
// redis-benchmark -P does) and costs no latency; none otherwise. With few
// workers each write waits for company that does not come, and in an open
// loop (Rate > 0) requests may be sparse whatever the workers, so the wait
// would show in every latency.
//
// Measured with rlbench --strategy lua --client rueidis --keys 100000
// against a local server, GOMAXPROCS=1, two runs each of 0 and 20us: at 10
// workers 92,747-95,876/s became 53,168-56,700/s (p50 100 -> 190 µs); at 20,
// 153,780-156,060 became 89,133-89,669; at 50 it was even (200,255-207,353
// against 206,957-210,447); at 100, 208,801-214,249 became 227,177-233,040;
// at 200, 205,935-222,113 became 247,169-253,106; at 500, 213,780-220,308
// became 225,403-250,169, with p99 lower from 100 workers up.
func DefaultFlushDelay(wl workload.Config) time.Duration {
	if wl.Rate == 0 && wl.WithDefaults().Clients >= flushDelayWorkers {
		return 20 * time.Microsecond
	}
	return 0
}

// flushDelayWorkers is the fewest closed-loop workers for which
// DefaultFlushDelay is not 0.
const flushDelayWorkers = 100

// DefaultProcs is how many CPUs the rlbench command's Go runtime uses
// (GOMAXPROCS) unless --procs or $GOMAXPROCS says otherwise, for cfg when
// the runtime's own default is ncpu (the CPUs, or a container's quota): all but one when
// a target runs on this machine, so that redis-server's main thread keeps a
// CPU of its own instead of being preempted by the load generator; else all
// of them. A target runs here when rlbench starts it (a private server or
// cluster) or when its address is a loopback one.
//
// On the project's 2-core machine, GOMAXPROCS=1 against a local server was
// faster in every cell of 10, 50 and 500 workers on both clients: with 500
// workers go-redis went from 94,798-97,478/s to 97,312-102,164/s and
// rueidis from 180,520-188,814/s to 206,925-210,124/s (lua, 100,000 keys,
// 5 s each, two rounds alternating GOMAXPROCS=2 and 1).
func DefaultProcs(cfg Config, ncpu int) int {
	if ncpu > 1 && slices.ContainsFunc(cfg.withDefaults().Targets, TargetSpec.local) {
		return ncpu - 1
	}
	return max(ncpu, 1)
}

// local reports whether t runs on this machine: a private server or
// cluster, or one whose (first) address is a loopback one.
func (t TargetSpec) local() bool {
	addr := t.Addr
	if len(t.Cluster) > 0 {
		addr = t.Cluster[0]
	}
	if addr == "" {
		return true // private
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Options says where Run writes while it works. Its zero value is silent.
type Options struct {
	// Log receives the header (which server, which version) and one line
	// when each cell starts; nil discards them.
	Log io.Writer
	// Progress receives a live one-line display, rewritten each second with
	// a carriage return; nil means none.
	Progress io.Writer
	// Abort, once done, stops what Run still does after ctx is done: the
	// audit and the clean-up of the cell that was interrupted (a second
	// interrupt). Run then says which keys it left. nil means never.
	Abort context.Context
}

// Run validates cfg, finds or starts the server, checks that it can run
// every strategy, then runs each strategy x client cell in turn: the load,
// the audit of the cell's keys, and (unless KeepKeys) their deletion.
//
// Bad input, an unreachable server and a strategy the server cannot run are
// *UsageError, returned before anything is written to Redis.
func Run(ctx context.Context, cfg Config, opts Options) (*results.Report, error) {
	if len(cfg.Targets) > 0 && (cfg.Addr != "" || cfg.RedisServer != "") {
		return nil, usage("Targets.Addr", errors.New("give Targets, or Addr and RedisServer, not both"))
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}

	// Every target is opened and checked before the first write: bad input
	// on any of them is found before anything touches Redis.
	var targets []*runTarget
	defer func() {
		for _, t := range targets {
			t.close()
		}
	}()
	for _, spec := range cfg.Targets {
		t, err := openRunTarget(ctx, cfg, spec)
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
	}

	rep := &results.Report{
		Tool:    "rlbench",
		Started: time.Now().UTC(),
		Server:  targets[0].server,
		Config:  cfg,
	}
	for _, t := range targets {
		fmt.Fprintf(log, "rlbench: target %s: %s\n", t.spec.Label, describeTarget(t.server, t.spec))
	}
	fmt.Fprintf(log, "rlbench: prefix %q, %d clients, %d keys (%s), limit %d per %ds window\n",
		cfg.Workload.Prefix, cfg.Workload.Clients, cfg.Workload.Keys, cfg.Workload.KeyDist, cfg.Limit, cfg.Window)

	// The order is documented: targets, then strategies, then clients.
	for i, t := range targets {
		runPrefix := cfg.Workload.Prefix
		if len(targets) > 1 {
			// Two labels may name one server: cells never share keys.
			runPrefix += "t" + strconv.Itoa(i+1) + ":"
		}
		for _, sname := range cfg.Strategies {
			for _, cname := range cfg.Clients {
				run, err := runCell(ctx, cfg, t, runPrefix, sname, cname, log, opts.Progress)
				if run.Strategy != "" {
					// Its figures explain a failure: keep them.
					rep.Runs = append(rep.Runs, run)
				}
				if err != nil {
					return rep, err
				}
				if ctx.Err() != nil {
					return rep, ctx.Err()
				}
			}
		}
	}
	return rep, ctx.Err()
}

// runTarget is one opened target of a run.
type runTarget struct {
	spec   TargetSpec
	target *redisserver.Target
	server results.Server
	// observer is the run's own connection to a single server, for audits,
	// faults and self-checks; nil on a cluster, where those go to every
	// master (serverNodes, masters).
	observer *redis.Client
	// On a cluster: the seed nodes the clients connect to, the observer of
	// the whole cluster (audits go to each of its masters), and the
	// private cluster when rlbench started it.
	clusterAddrs    []string
	clusterObserver *redis.ClusterClient
	managed         *redisserver.Cluster
}

func (t *runTarget) close() {
	if t.observer != nil {
		t.observer.Close()
	}
	t.target.Close()
	if t.clusterObserver != nil {
		t.clusterObserver.Close()
	}
	if t.managed != nil {
		t.managed.Close()
	}
}

// openRunTarget opens spec and checks that every strategy and the go-redis
// pool fit it.
func openRunTarget(ctx context.Context, cfg Config, spec TargetSpec) (*runTarget, error) {
	if spec.isCluster() {
		return openClusterTarget(ctx, cfg, spec)
	}
	tgt, err := openTarget(ctx, cfg, spec)
	if err != nil {
		return nil, err
	}
	t := &runTarget{
		spec:     spec,
		target:   tgt,
		server:   results.Server{Addr: tgt.Addr, Name: tgt.Info.Name, Version: tgt.Info.Version, Managed: tgt.Private != nil},
		observer: redisserver.NewObserver(tgt.Addr, cfg.Password, cfg.DB, 4),
	}
	if err := t.observer.Ping(ctx).Err(); err != nil {
		t.close()
		return nil, usage("DB", fmt.Errorf("%s: select %d: %w", spec.Label, cfg.DB, err))
	}
	return t.checked(ctx, cfg)
}

// checked returns t once every strategy and the go-redis pool are found to
// fit it; otherwise it closes t.
func (t *runTarget) checked(ctx context.Context, cfg Config) (*runTarget, error) {
	err := checkSupport(cfg.Strategies, t.target.Info)
	if err == nil {
		var nodes []*redis.Client
		if nodes, err = t.serverNodes(ctx); err == nil {
			err = checkConnections(ctx, nodes, cfg)
		}
	}
	if err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// openClusterTarget is openRunTarget for a cluster: it starts the managed
// cluster or probes the first seed node, and checks as openRunTarget does,
// against every master (the go-redis pool is per node).
func openClusterTarget(ctx context.Context, cfg Config, spec TargetSpec) (*runTarget, error) {
	t := &runTarget{spec: spec, clusterAddrs: spec.Cluster}
	field := "Targets.Cluster"
	if spec.ManagedCluster != "" {
		field = "Targets.ManagedCluster"
		masters, replicas, _ := redisserver.ParseClusterSize(spec.ManagedCluster)
		c, err := redisserver.StartCluster(ctx, redisserver.ClusterOptions{
			Masters: masters, Replicas: replicas, Binary: spec.RedisServer,
			Args: []string{"--maxclients", "20000"},
		})
		if err != nil {
			return nil, usage(field, fmt.Errorf("%s: %w", spec.Label, err))
		}
		t.managed, t.clusterAddrs = c, c.Addrs()
	}
	pctx, cancel := context.WithTimeout(ctx, redisserver.ProbeTimeout)
	defer cancel()
	info, err := redisserver.Probe(pctx, t.clusterAddrs[0], cfg.Password, 0)
	if err != nil {
		if t.managed != nil {
			t.managed.Close()
		}
		return nil, usage(field, fmt.Errorf("%s: %w (is a Redis Cluster node listening there?)", spec.Label, err))
	}
	t.target = &redisserver.Target{Addr: t.clusterAddrs[0], Info: info}
	t.server = results.Server{Addr: strings.Join(t.clusterAddrs, ","), Name: info.Name, Version: info.Version, Managed: t.managed != nil}
	t.clusterObserver = redisserver.NewClusterObserver(t.clusterAddrs, cfg.Password, 4)
	if _, err := t.masters(ctx); err != nil {
		t.close()
		return nil, usage(field, fmt.Errorf("%s: %w", spec.Label, err))
	}
	return t.checked(ctx, cfg)
}

// masters returns a client to each master of the cluster as the cluster
// observer sees it now, ordered by address; an error if there is none.
func (t *runTarget) masters(ctx context.Context) ([]*redis.Client, error) {
	var mu sync.Mutex
	var nodes []*redis.Client
	err := t.clusterObserver.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		nodes = append(nodes, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cluster masters: %w", err)
	}
	if len(nodes) == 0 {
		return nil, errors.New("cluster masters: none")
	}
	slices.SortFunc(nodes, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
	return nodes, nil
}

// serverNodes returns a client to each node whose CPU and connections the
// self-checks read: the one server, or every master of a cluster (each runs
// its commands on its own main thread, and the go-redis pool is per node).
func (t *runTarget) serverNodes(ctx context.Context) ([]*redis.Client, error) {
	if t.clusterObserver == nil {
		return []*redis.Client{t.observer}, nil
	}
	return t.masters(ctx)
}

// serverSamples is one saturation.Sample per server node, by address.
type serverSamples struct {
	addrs   []string
	samples []saturation.Sample
}

// sample takes a saturation sample on every server node.
func (t *runTarget) sample(ctx context.Context) (serverSamples, error) {
	nodes, err := t.serverNodes(ctx)
	if err != nil {
		return serverSamples{}, err
	}
	var s serverSamples
	for _, n := range nodes {
		x, err := saturation.Take(ctx, n)
		if err != nil {
			return serverSamples{}, fmt.Errorf("%s: %w", n.Options().Addr, err)
		}
		s.addrs = append(s.addrs, n.Options().Addr)
		s.samples = append(s.samples, x)
	}
	return s, nil
}

// audit audits the keys under prefix: on the one server, or on every
// master of a cluster, with the result per master.
func (t *runTarget) audit(ctx context.Context, prefix string, window int64) (audit.Result, []audit.NodeResult, error) {
	if t.clusterObserver == nil {
		res, err := audit.Run(ctx, t.observer, prefix, window)
		return res, nil, err
	}
	nodes, err := t.masters(ctx)
	if err != nil {
		return audit.Result{}, nil, fmt.Errorf("audit: %w", err)
	}
	return audit.RunNodes(ctx, nodes, prefix, window)
}

// redirects reads the cluster's redirection and cluster-error counters on
// every node (package redirects); nil for a single server, for a server
// without INFO errorstats, and when a node could not be read.
func (t *runTarget) redirects(ctx context.Context) redirects.Snapshot {
	if t.clusterObserver == nil || !redisserver.VersionAtLeast(t.target.Info.RedisVersion, redirects.MinRedis) {
		return nil
	}
	s, err := redirects.Take(ctx, t.clusterObserver)
	if err != nil {
		return nil
	}
	return s
}

// cleanup deletes the keys under prefix, on every master of a cluster.
func (t *runTarget) cleanup(ctx context.Context, prefix string) error {
	if t.clusterObserver == nil {
		_, err := audit.Cleanup(ctx, t.observer, prefix)
		return err
	}
	nodes, err := t.masters(ctx)
	if err != nil {
		return fmt.Errorf("audit: cleanup: %w", err)
	}
	_, err = audit.CleanupNodes(ctx, nodes, prefix)
	return err
}

// CellPrefix is the key prefix of one strategy x client cell of a run: the
// run's prefix, then the strategy and client names. Cells never share keys.
func CellPrefix(runPrefix, strategy, client string) string {
	return runPrefix + strategy + ":" + client + ":"
}

func runCell(ctx context.Context, cfg Config, t *runTarget, runPrefix, sname, cname string, log, progress io.Writer) (results.Run, error) {
	strat, err := strategies.New(sname, strategies.Config{Limit: cfg.Limit, Window: cfg.Window})
	if err != nil {
		return results.Run{}, usage("Strategies", err)
	}
	// Before the client connects, so that its connections are counted.
	connected, connectedErr := t.sample(ctx)
	wl := cfg.Workload
	wl.Prefix = CellPrefix(runPrefix, sname, cname)
	conn, err := clients.New(cname, clients.Options{Addr: t.target.Addr, Cluster: t.clusterAddrs, Password: cfg.Password, DB: cfg.DB,
		Workers: wl.Clients, FlushDelay: cfg.FlushDelay, ClientName: clientName(wl.Prefix)})
	if err != nil {
		return results.Run{}, err
	}
	defer conn.Close()

	label := sname + "/" + cname
	if len(cfg.Targets) > 1 {
		label = t.spec.Label + ": " + label
	}
	fmt.Fprintf(log, "rlbench: running %s (%s)\n", label, conn.Options())

	if p, ok := strat.(strategies.Preparer); ok {
		if err := p.Prepare(ctx, conn); err != nil {
			return results.Run{}, fmt.Errorf("%s: prepare: %w", label, err)
		}
	}

	if err := warmUp(ctx, cfg, runPrefix, sname, cname, strat, conn, t); err != nil {
		return results.Run{}, fmt.Errorf("%s: warm-up: %w", label, err)
	}
	// CPU counts from here: the measured load, not the set-up and warm-up.
	before, beforeErr := t.sample(ctx)
	redirectsBefore := t.redirects(ctx)

	var rec results.Recorder
	latestImmortal, stopAudits := periodicAudit(ctx, t, wl.Prefix, cfg.Window, cfg.AuditEvery)
	stopMonitor := monitor(progress, label, &rec, latestImmortal)
	var admin redis.Cmdable // the faults that use it are refused on a cluster
	if t.observer != nil {
		admin = t.observer
	}
	stopFaults := faults.Schedule(ctx, cfg.Faults, faults.Target{
		Admin:      admin,
		Restart:    restarter(t.target),
		ClientName: clientName(wl.Prefix),
		Failover:   t.failover(),
		Reshard:    t.reshard(wl.Prefix),
	})
	info, _ := strategies.Lookup(sname)
	adm := admission.New(info, wl.Keys, cfg.Limit, cfg.Window)
	startedAt := time.Now()
	res, runErr := workload.Run(ctx, wl, strat, conn, &rec, adm)
	events := stopFaults()
	series := stopMonitor()
	stopAudits()
	// Before the audit: its pipeline opens a connection of its own.
	after, afterErr := t.sample(context.WithoutCancel(ctx))
	redirectsAfter := t.redirects(context.WithoutCancel(ctx))

	run := results.NewRun(&rec, res.Elapsed)
	run.StartedAt = startedAt.UTC()
	run.Rate, run.AchievedRatePerS, run.RateNote = res.Rate, res.Achieved(), res.Note()
	run.ScheduleLagMS = float64(res.Lag) / float64(time.Millisecond)
	run.Target, run.Server = t.spec.Label, &t.server
	run.Strategy, run.Client, run.ClientOptions, run.Clients = sname, cname, conn.Options(), wl.Clients
	run.Environment = results.EnvironmentOf(clients.Modules[cname], clients.Version(cname))
	run.ScriptFallbacks = conn.Fallbacks()
	if redirectsBefore != nil && redirectsAfter != nil {
		run.ClusterErrors = redirects.Delta(redirectsBefore, redirectsAfter)
	}
	run.OnError, run.Admitted = cfg.OnError, run.Allowed
	if cfg.OnError == "open" {
		// A simulated crash served no one: it is not admitted.
		run.Admitted += run.Errors - run.ErrorKinds[results.KindCrashed]
	}
	run.Faults, run.PerSecond = events, series
	if connectedErr == nil && beforeErr == nil && afterErr == nil && !saturationUnknown(events) &&
		slices.Equal(connected.addrs, before.addrs) && slices.Equal(before.addrs, after.addrs) {
		sat := saturation.CompareNodes(before.samples, after.samples)
		// Connections count from before the client connected.
		sat.ConnectionsOpened = saturation.CompareNodes(connected.samples, after.samples).ConnectionsOpened
		if wl.Rate > 0 && res.Reached() {
			// The schedule, not either side, set the pace.
			sat.Verdict = ""
		}
		run.Saturation = &sat
	}
	admitted := adm.Result()
	run.OverAdmitted, run.MaxAdmittedPerWindow = admitted.OverAdmitted, admitted.MaxAdmittedPerWindow
	if admitted.Sampled() {
		run.AdmissionKeysTracked = admitted.TrackedKeys
	}

	// The audit and the clean-up run even after an interrupt: they are
	// short, and the user's keys should not outlive the run.
	bg := context.WithoutCancel(ctx)
	a, perNode, err := t.audit(bg, wl.Prefix, cfg.Window)
	if err != nil {
		return run, fmt.Errorf("%s: %w", label, err)
	}
	run.Audit = results.Audit(a)
	if perNode != nil {
		run.AuditPerNode = make(map[string]results.Audit, len(perNode))
		for _, n := range perNode {
			run.AuditPerNode[n.Addr] = results.Audit(n.Result)
		}
	}
	if !cfg.KeepKeys {
		if err := t.cleanup(bg, wl.Prefix); err != nil {
			return run, fmt.Errorf("%s: %w", label, err)
		}
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return run, fmt.Errorf("%s: %w", label, runErr)
	}
	return run, nil
}

// saturationUnknown reports whether a fault left the saturation figures
// unknown: a restart starts the server's CPU counters again from zero, and a
// failover changes which nodes are masters.
func saturationUnknown(events []faults.Event) bool {
	return slices.ContainsFunc(events, func(e faults.Event) bool {
		return e.Kind() == faults.Restart || e.Kind() == faults.Failover
	})
}

// failover returns the failover fault's action for a private cluster with
// replicas, nil otherwise: it promotes a replica of the master that serves
// slot 0 at the time.
func (t *runTarget) failover() func(context.Context) (string, error) {
	if t.managed == nil || !managedWithReplicas(t.spec) {
		return nil
	}
	return func(ctx context.Context) (string, error) {
		masters := t.managed.MasterAddrs()
		if len(masters) == 0 {
			return "", errors.New("failover: the cluster has no master")
		}
		newMaster, err := t.managed.Failover(ctx, masters[0])
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s took over from %s", newMaster, masters[0]), nil
	}
}

// reshard returns the reshard fault's action for a private cluster, nil
// otherwise: it moves the slot of the cell's first key (under prefix) to
// the next master.
func (t *runTarget) reshard(prefix string) func(context.Context, time.Duration) (string, error) {
	if t.managed == nil {
		return nil
	}
	return func(ctx context.Context, hold time.Duration) (string, error) {
		key := workload.KeyNames(prefix, 1)[0]
		slot, err := t.clusterObserver.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			return "", fmt.Errorf("reshard: cluster keyslot %s: %w", key, err)
		}
		m, err := t.managed.MoveSlot(ctx, int(slot), hold)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("slot %d moved from %s to %s with its keys (%d), migrating for %s", m.Slot, m.From, m.To, m.Keys, hold), nil
	}
}

// clientName is the CLIENT SETNAME of a cell's connections, which the
// kill-clients fault closes: unique to the cell, since its prefix is.
func clientName(cellPrefix string) string {
	return "rlbench-" + strings.Map(func(r rune) rune {
		if r <= ' ' || r > '~' {
			return '_'
		}
		return r
	}, cellPrefix)
}

// monitor samples rec once a second into a time series (counts, p50 and
// p99, and the latest immortal count from immortal, when not nil) and,
// when w is not nil, rewrites a one-line progress display on w. The
// returned function stops it, ends the line, and returns the series, whose
// last entry covers the part-second since the last tick.
func monitor(w io.Writer, label string, rec *results.Recorder, immortal func() *int64) func() []results.Second {
	done := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	var series []results.Second
	var last results.Totals
	var interval results.Interval
	sample := func(now time.Time) results.Totals {
		t, h := rec.Snapshot()
		sec := results.Second{
			T:         now.Sub(start).Seconds(),
			Decisions: t.Decisions - last.Decisions,
			Allowed:   t.Allowed - last.Allowed,
			Rejected:  t.Rejected - last.Rejected,
			Errors:    t.Errors - last.Errors,
		}
		sec.P50US, sec.P99US = interval.Next(h)
		if immortal != nil {
			sec.Immortal = immortal()
		}
		series = append(series, sec)
		return t
	}
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		lastAt := start
		for {
			select {
			case <-done:
				if t := rec.Totals(); t.Decisions > last.Decisions {
					sample(time.Now())
				}
				if w != nil {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case now := <-tick.C:
				t := sample(now)
				if w != nil {
					rate := float64(t.Decisions-last.Decisions) / now.Sub(lastAt).Seconds()
					fmt.Fprint(w, "\r\033[K"+results.Progress(label, now.Sub(start), t, rate))
				}
				last, lastAt = t, now
			}
		}
	}()
	return func() []results.Second { close(done); <-finished; return series }
}

// periodicAudit audits prefix every `every` until the returned stop
// function is called, and returns a function that gives the latest count of
// immortal keys (nil before the first audit). every <= 0 means none: both
// functions are then no-ops and the second is nil.
func periodicAudit(ctx context.Context, t *runTarget, prefix string, window int64, every time.Duration) (latest func() *int64, stop func()) {
	if every <= 0 {
		return nil, func() {}
	}
	var n atomic.Int64
	n.Store(-1)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if res, _, err := t.audit(ctx, prefix, window); err == nil {
					n.Store(res.Immortal)
				}
			}
		}
	}()
	latest = func() *int64 {
		if v := n.Load(); v >= 0 {
			return &v
		}
		return nil
	}
	return latest, func() { cancel(); <-done }
}

// openTarget finds or starts the server for cfg. A failure is bad input:
// of --addr when one was given, of --redis-server otherwise.
func openTarget(ctx context.Context, cfg Config, spec TargetSpec) (*redisserver.Target, error) {
	t, err := redisserver.Open(ctx, redisserver.TargetOptions{
		Addr: spec.Addr, Password: cfg.Password, DB: cfg.DB,
		Start: redisserver.Options{Binary: spec.RedisServer, Args: []string{"--maxclients", "20000"}},
	})
	switch {
	case err != nil && spec.Addr != "":
		return nil, usage("Targets.Addr", fmt.Errorf("%s: %w", spec.Label, err))
	case err != nil:
		return nil, usage("Targets.RedisServer", fmt.Errorf("%s: %w", spec.Label, err))
	}
	return t, nil
}

// warmUp runs the cell's load for cfg.Warmup, unrecorded, on keys under a
// prefix of its own beside the cell's, and deletes them: the measured load
// starts with warm connections and a loaded script, and with no counters.
func warmUp(ctx context.Context, cfg Config, runPrefix, sname, cname string, s strategies.Strategy, conn strategies.Client, t *runTarget) error {
	if cfg.Warmup <= 0 {
		return nil
	}
	wl := cfg.Workload
	wl.Prefix = CellPrefix(runPrefix+"warmup:", sname, cname)
	wl.Duration, wl.Requests, wl.CrashRate, wl.RacePause = cfg.Warmup, 0, 0, 0
	var rec results.Recorder
	_, runErr := workload.Run(ctx, wl, s, conn, &rec, nil)
	// Deleted even after an interrupt: a non-atomic strategy's warm-up
	// keys can be immortal.
	err := t.cleanup(context.WithoutCancel(ctx), wl.Prefix)
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	return err
}

// restarter returns the private server's Restart, or nil for --addr.
func restarter(t *redisserver.Target) func(context.Context) error {
	if t.Private == nil {
		return nil
	}
	return t.Private.Restart
}

// checkSupport refuses a strategy that the server's version cannot run.
func checkSupport(names []string, info redisserver.Info) error {
	for _, name := range names {
		s, _ := strategies.Lookup(name)
		if !redisserver.VersionAtLeast(info.RedisVersion, s.MinRedis) {
			return usage("Strategies", fmt.Errorf("%s needs Redis >= %s; the server is %s %s", name, s.MinRedis, info.Name, info.Version))
		}
	}
	return nil
}

// checkConnections refuses, before any load, a run whose go-redis pool (one
// connection per worker; rueidis shares a few among all of them) would need
// more connections than the server accepts (maxclients, less
// those in use), instead of letting it end in a storm of connection
// errors. On a cluster each master is checked, since the pool is per node.
// A server that does not answer CONFIG GET is not checked.
func checkConnections(ctx context.Context, nodes []*redis.Client, cfg Config) error {
	if !slices.Contains(cfg.Clients, "go-redis") {
		return nil
	}
	for _, admin := range nodes {
		v, err := admin.ConfigGet(ctx, "maxclients").Result()
		if err != nil {
			continue
		}
		maxClients, err := strconv.Atoi(v["maxclients"])
		if err != nil {
			continue
		}
		inUse := 0
		if info, err := admin.Info(ctx, "clients").Result(); err == nil {
			inUse, _ = strconv.Atoi(redisserver.ParseInfo(info)["connected_clients"])
		}
		free := maxClients - inUse
		if cfg.Workload.Clients <= free {
			continue
		}
		server := "the server"
		if len(nodes) > 1 {
			server = "master " + admin.Options().Addr
		}
		return usage("Workload.Clients", fmt.Errorf("go-redis opens one connection per worker: %d workers need %d connections, but %s accepts %d more (maxclients %d, %d in use); lower --clients, raise the server's maxclients, or use --client rueidis",
			cfg.Workload.Clients, cfg.Workload.Clients, server, free, maxClients, inUse))
	}
	return nil
}

func describeTarget(s results.Server, spec TargetSpec) string {
	binary := spec.RedisServer
	if spec.isCluster() {
		if s.Managed {
			return fmt.Sprintf("private Redis Cluster %s of %s %s (%s); stopped at the end", spec.ManagedCluster, s.Name, s.Version, s.Addr)
		}
		return fmt.Sprintf("Redis Cluster of %s %s via %s", s.Name, s.Version, s.Addr)
	}
	if s.Managed {
		if binary == "" {
			binary = redisserver.DefaultBinary
		}
		return fmt.Sprintf("private %s %s (%s) on %s, no persistence; stopped at the end", s.Name, s.Version, binary, s.Addr)
	}
	return fmt.Sprintf("%s %s at %s", s.Name, s.Version, s.Addr)
}

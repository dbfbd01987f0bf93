package rlbench

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/redisserver"
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
	// Window is the counter's lifetime, in whole seconds; 0 means
	// strategies.DefaultWindow. At most MaxWindow.
	Window int64 `json:"window_s"`
	// Fields is the number of fields of each key's hash that a hash-field
	// strategy spreads the key's requests over (strategies.Config.Fields);
	// 0 means strategies.DefaultFields. Other strategies ignore it.
	Fields int `json:"fields,omitempty"`
	// Workload is the load each strategy x client cell runs. An empty
	// Prefix means "rlbench:<run-id>:", with RunID.
	Workload workload.Config `json:"workload"`
	// RunID names the run in its claim on the prefix (a second run on the
	// prefix is refused, naming it) and in the default prefix; "" means a
	// fresh one (audit.NewRunID).
	RunID string `json:"run_id,omitempty"`

	// Targets are the servers every strategy x client cell runs against,
	// one after another. Empty means one target: Addr, or a private
	// RedisServer when Addr is "".
	Targets []TargetSpec `json:"targets,omitempty"`
	// Addr targets an existing server (host:port); "" starts a private one.
	// A shorthand for one target; not with Targets.
	Addr string `json:"addr,omitempty"`
	// Username is the ACL user of every existing server; "" means the
	// default user.
	Username string `json:"user,omitempty"`
	// Password authenticates against every existing server; never written
	// to reports.
	Password string `json:"-"`
	// DB is the database number used on every existing server.
	DB int `json:"db"`
	// TLS, when not nil, makes every connection to an existing server use
	// TLS with these files (--tls, --cacert, --cert, --key, --insecure,
	// --sni); nil means plain TCP. A target named by a URL has its own.
	TLS *connection.TLSFiles `json:"-"`
	// PrivateTLS starts each private server with TLS only, with a
	// certificate from a throwaway CA that rlbench generates and trusts:
	// the cost of TLS, measured.
	PrivateTLS bool `json:"private_tls,omitempty"`
	// RedisServer is the binary started when Addr is ""; "" means
	// redis-server on PATH. A shorthand for one target; not with Targets.
	RedisServer string `json:"redis_server,omitempty"`
	// AuditEvery audits the cell's keys this often during the load, for the
	// immortal count in the per-second series; 0 means only at the end.
	AuditEvery time.Duration `json:"audit_every_ns"`
	// Warmup runs each cell's load this long, unrecorded and on keys of its
	// own, before the measured load; 0 means none.
	Warmup time.Duration `json:"warmup_ns"`
	// ScriptTimeout is how long a user strategy's script or function may
	// run before rlbench sends SCRIPT KILL (FUNCTION KILL) and fails the
	// run; 0 means DefaultScriptTimeout. The server cannot be asked before
	// its own busy-reply-threshold (lua-time-limit, 5 s by default).
	ScriptTimeout time.Duration `json:"script_timeout_ns,omitempty"`

	// FlushDelay is rueidis' MaxFlushDelay (see clients.Options); 0 means
	// rueidis' default, no delay.
	FlushDelay time.Duration `json:"rueidis_flush_delay_ns"`
	// Retries is how many times the clients under test send a command
	// again after a network error (clients.Options.Retries: go-redis
	// MaxRetries; rueidis retries read-only commands only); 0 means none.
	Retries int `json:"retries,omitempty"`
	// DialTimeout, ReadTimeout and WriteTimeout are the clients' timeouts
	// (clients.Options); 0 means each client's default. rueidis has one
	// for reads and writes: both set must be equal.
	DialTimeout  time.Duration `json:"dial_timeout_ns,omitempty"`
	ReadTimeout  time.Duration `json:"read_timeout_ns,omitempty"`
	WriteTimeout time.Duration `json:"write_timeout_ns,omitempty"`
	// KeepKeys leaves each run's keys in Redis after the audit instead of
	// deleting them.
	KeepKeys bool `json:"keep_keys"`
	// OnError is the outage policy for a decision that failed: "open"
	// admits the request, "closed" rejects it; "" means DefaultOnError.
	OnError string `json:"on_error"`
	// Faults are injected into every cell's load at their times.
	Faults []faults.Fault `json:"faults,omitempty"`
	// MinReplicas is min-replicas-to-write on every data node of each
	// private Sentinel set-up (redisserver.SentinelOptions.MinReplicas): a
	// master refuses writes unless that many replicas have acknowledged it
	// within MinReplicasMaxLag. 0 means none; only with managed Sentinel
	// targets, and at most their replicas.
	MinReplicas int `json:"min_replicas,omitempty"`
	// MinReplicasMaxLag is min-replicas-max-lag, in seconds, with
	// MinReplicas; 0 means redisserver.DefaultMinReplicasMaxLag.
	MinReplicasMaxLag int `json:"min_replicas_max_lag_s,omitempty"`
	// Scripts registers user strategies from Lua scripts, each "NAME=FILE"
	// (strategies.RegisterScript); with no Strategies, they are the ones run.
	Scripts []string `json:"scripts,omitempty"`
	// Functions registers user strategies from Redis Functions libraries,
	// each "NAME=FILE" (strategies.RegisterFunction); with no Strategies,
	// they are run, after Scripts.
	Functions []string `json:"functions,omitempty"`
	// Sequences registers user strategies written as the commands they
	// send, each "NAME=SPEC" (strategies.RegisterSequence); with no
	// Strategies, they are run, after Functions.
	Sequences []string `json:"sequences,omitempty"`
	// StartAt, when not zero, is the instant the first cell's measured load
	// starts (after its warm-up): several generators given one StartAt load
	// the server together. It must be in the future when Run starts.
	StartAt time.Time `json:"start_at,omitzero"`
	// AllowServerWideFaults lets the faults that act on the whole server
	// (faults.ServerWide: a stall pauses every client, a script flush
	// empties every tenant's cache) run on a server rlbench did not start.
	AllowServerWideFaults bool `json:"allow_server_wide_faults,omitempty"`

	// optional are the strategies that "all" brought in and that were not
	// named too (set by validate): a target that cannot run one leaves it
	// out (target.leaveOut) rather than refusing the run.
	optional []string
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
	// Sentinel, when not nil, is a master that Sentinel manages: the
	// clients ask its sentinels where it is, and follow it across
	// failovers.
	Sentinel *connection.Sentinel `json:"-"`
	// ManagedSentinel is "R": rlbench starts a private master with R
	// replicas and three sentinels, and stops them at the end.
	ManagedSentinel string `json:"managed_sentinel,omitempty"`
	// Login, when not nil, is how to log in to this target (from its
	// URL), in place of Config's Username, Password, DB and TLS.
	Login *connection.Settings `json:"-"`
}

// isCluster reports whether t names a Redis Cluster.
func (t TargetSpec) isCluster() bool { return len(t.Cluster) > 0 || t.ManagedCluster != "" }

// isSentinel reports whether t names a master that Sentinel manages.
func (t TargetSpec) isSentinel() bool { return t.Sentinel != nil || t.ManagedSentinel != "" }

// private reports whether rlbench starts t's servers itself.
func (t TargetSpec) private() bool { return t.Addr == "" && len(t.Cluster) == 0 && t.Sentinel == nil }

// kinds counts the kinds of target t names at once; one is right.
func (t TargetSpec) kinds() int {
	n := 0
	for _, set := range []bool{t.Addr != "", len(t.Cluster) > 0, t.ManagedCluster != "", t.Sentinel != nil, t.ManagedSentinel != ""} {
		if set {
			n++
		}
	}
	return n
}

// managedReplicas is the replicas per master of a private cluster or
// Sentinel set-up; 0 otherwise.
func (t TargetSpec) managedReplicas() int {
	switch {
	case t.ManagedCluster != "":
		_, replicas, err := redisserver.ParseClusterSize(t.ManagedCluster)
		if err == nil {
			return replicas
		}
	case t.ManagedSentinel != "":
		replicas, err := strconv.Atoi(t.ManagedSentinel)
		if err == nil {
			return replicas
		}
	}
	return 0
}

// capabilities says what the faults can count on in t.
func (t TargetSpec) capabilities(allowServerWide bool) faults.Capabilities {
	return faults.Capabilities{
		Private: t.private(), Cluster: t.isCluster(), Sentinel: t.isSentinel(),
		Replicas: t.managedReplicas() > 0, ServerWideConsent: allowServerWide,
	}
}

// login is how to log in to t: its URL's settings, or cfg's.
func (c Config) login(t TargetSpec) connection.Settings {
	if t.Login != nil {
		return *t.Login
	}
	return connection.Settings{Username: c.Username, Password: c.Password, DB: c.DB, TLS: c.TLS}
}

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

// maxSentinelReplicas is the most replicas a managed Sentinel set-up takes.
const maxSentinelReplicas = 100

// DefaultWarmup is the command line's warm-up before each cell.
const DefaultWarmup = time.Second

// DefaultScriptTimeout is Config.ScriptTimeout's default: Redis's own
// busy-reply-threshold, before which a busy server reads no command.
const DefaultScriptTimeout = 5 * time.Second

// DefaultOnError is the outage policy when none is given: fail open, as
// most rate limiters do, so that a Redis outage does not reject everyone.
const DefaultOnError = "open"

// OnErrorPolicies lists the accepted outage policies.
var OnErrorPolicies = []string{"open", "closed"}

// MaxWindow is the longest window, in seconds: 10 years. Longer windows
// overflow the durations the clients and the admission tracker compute.
const MaxWindow = 10 * 366 * 24 * 3600

// UsageError is bad input: a Config field with a value rlbench does not
// accept, or a target it cannot use. Nothing has been written to Redis when
// Run returns one.
type UsageError struct {
	// Field is the Config field at fault, as a Go selector path from the
	// Config: "Window", "Workload.Workers", "Targets.Addr".
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
		c.Strategies = c.userStrategyNames()
	}
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
	if c.ScriptTimeout == 0 {
		c.ScriptTimeout = DefaultScriptTimeout
	}
	if len(c.Targets) == 0 {
		c.Targets = []TargetSpec{{Addr: c.Addr, RedisServer: c.RedisServer}}
	}
	c.Targets = labelTargets(c.Targets)
	if c.RunID == "" {
		c.RunID = audit.NewRunID()
	}
	if c.Workload.Prefix == "" {
		c.Workload.Prefix = "rlbench:" + c.RunID + ":"
	}
	c.Workload = c.Workload.WithDefaults()
	return c
}

// validate checks everything that can be checked without a server, and
// expands "all" in the strategy and client lists.
func (c *Config) validate() error {
	if err := c.registerUserStrategies(); err != nil {
		return err
	}
	givenStrategies, givenClients := c.Strategies, c.Clients
	if slices.Contains(c.Strategies, "all") {
		// "all" is the built-in strategies; the run's own join them.
		c.Strategies = append(slices.Clone(c.Strategies), c.userStrategyNames()...)
	}
	var err error
	if c.Strategies, err = strategies.Select(c.Strategies); err != nil {
		return usage("Strategies", err)
	}
	if slices.Contains(givenStrategies, "all") {
		c.optional = slices.DeleteFunc(slices.Clone(c.Strategies), func(s string) bool { return slices.Contains(givenStrategies, s) })
	}
	if c.Clients, err = clients.Select(c.Clients); err != nil {
		return usage("Clients", err)
	}
	if err := checkClientSupport(givenStrategies, givenClients, c.Strategies, c.Clients); err != nil {
		return err
	}
	checks := []struct {
		field string
		bad   bool
		err   error
	}{
		{"Limit", c.Limit < 1, fmt.Errorf("%w, got %d", strategies.ErrInvalidLimit, c.Limit)},
		{"Window", c.Window < 1, fmt.Errorf("%w, got %d", strategies.ErrInvalidWindow, c.Window)},
		{"Fields", c.Fields < 0, fmt.Errorf("%w, got %d", strategies.ErrInvalidFields, c.Fields)},
		{"Window", c.Window > MaxWindow, fmt.Errorf("window must be at most %d s (10 years), got %d", MaxWindow, c.Window)},
		{"DB", c.DB < 0, fmt.Errorf("db must be >= 0, got %d", c.DB)},
		{"OnError", !slices.Contains(OnErrorPolicies, c.OnError), fmt.Errorf("unknown policy %q (accepted: %s)", c.OnError, strings.Join(OnErrorPolicies, ", "))},
		{"FlushDelay", c.FlushDelay < 0, fmt.Errorf("flush delay must be >= 0, got %s", c.FlushDelay)},
		{"Retries", c.Retries < 0, fmt.Errorf("%w, got %d", clients.ErrInvalidRetries, c.Retries)},
		{"DialTimeout", c.DialTimeout < 0, fmt.Errorf("dial timeout must be >= 0 (0: the client's default), got %s", c.DialTimeout)},
		{"ReadTimeout", c.ReadTimeout < 0, fmt.Errorf("read timeout must be >= 0 (0: the client's default), got %s", c.ReadTimeout)},
		{"WriteTimeout", c.WriteTimeout < 0, fmt.Errorf("write timeout must be >= 0 (0: the client's default), got %s", c.WriteTimeout)},
		{"ReadTimeout", slices.Contains(c.Clients, "rueidis") && c.ReadTimeout != 0 && c.WriteTimeout != 0 && c.ReadTimeout != c.WriteTimeout,
			fmt.Errorf("read timeout %s, write timeout %s: %w", c.ReadTimeout, c.WriteTimeout, clients.ErrRueidisTimeouts)},
		{"MinReplicas", c.MinReplicas < 0, fmt.Errorf("min-replicas-to-write must be >= 0 (0: none), got %d", c.MinReplicas)},
		{"MinReplicasMaxLag", c.MinReplicasMaxLag < 0 || (c.MinReplicasMaxLag > 0 && c.MinReplicas == 0),
			fmt.Errorf("min-replicas-max-lag must be >= 1 s, with --min-replicas N (N >= 1), got %d", c.MinReplicasMaxLag)},
		{"AuditEvery", c.AuditEvery < 0, fmt.Errorf("audit period must be >= 0, got %s", c.AuditEvery)},
		{"Warmup", c.Warmup < 0, fmt.Errorf("warm-up must be >= 0, got %s", c.Warmup)},
		{"ScriptTimeout", c.ScriptTimeout < 0, fmt.Errorf("script timeout must be > 0, got %s", c.ScriptTimeout)},
		{"StartAt", !c.StartAt.IsZero() && !c.StartAt.After(time.Now()), fmt.Errorf("start time %s is not in the future", c.StartAt.Format(time.RFC3339))},
	}
	for _, ch := range checks {
		if ch.bad {
			return usage(ch.field, ch.err)
		}
	}
	if err := c.Workload.Validate(); err != nil {
		return usage(workloadField(err), err)
	}
	for _, f := range c.Faults {
		if d := c.Workload.Duration; d > 0 && f.At >= d {
			return usage("Faults", fmt.Errorf("%s is at or after the end of the run (--duration %s)", f, d))
		}
		// A stall or a reshard's hold outlasting the load would hold up
		// the end of the cell, and take the after-load readings late.
		if d := c.Workload.Duration; d > 0 && f.Arg > 0 && f.At+f.Arg >= d {
			return usage("Faults", fmt.Errorf("%s does not end before the run does (--duration %s)", f, d))
		}
	}
	for _, t := range c.Targets {
		if err := c.validateTarget(t); err != nil {
			return err
		}
	}
	return nil
}

// validateTarget checks one target's spec, and that every fault can be
// injected into it.
func (c *Config) validateTarget(t TargetSpec) error {
	if t.kinds() > 1 {
		return usage("Targets.Cluster", fmt.Errorf("%s: give one of --addr, --url, --cluster, --managed-cluster, --sentinel and --managed-sentinel", t.Label))
	}
	if t.ManagedCluster != "" {
		if _, _, err := redisserver.ParseClusterSize(t.ManagedCluster); err != nil {
			return usage("Targets.ManagedCluster", err)
		}
	}
	if t.ManagedSentinel != "" {
		if n, err := strconv.Atoi(t.ManagedSentinel); err != nil || n < 0 || n > maxSentinelReplicas {
			return usage("Targets.ManagedSentinel", fmt.Errorf("%s: want the number of replicas, 0 to %d, got %q", t.Label, maxSentinelReplicas, t.ManagedSentinel))
		}
	}
	if t.isCluster() && c.login(t).DB != 0 {
		return usage("DB", fmt.Errorf("%s: %w", t.Label, clients.ErrClusterDB))
	}
	if c.PrivateTLS && (t.ManagedCluster != "" || t.ManagedSentinel != "") {
		return usage("PrivateTLS", fmt.Errorf("%s: a TLS private server is a single server; leave out --managed-cluster and --managed-sentinel", t.Label))
	}
	if c.MinReplicas > 0 && (t.ManagedSentinel == "" || c.MinReplicas > t.managedReplicas()) {
		return usage("MinReplicas", fmt.Errorf("%s: min-replicas-to-write %d needs a private Sentinel set-up with at least that many replicas (--managed-sentinel R, R >= %d)", t.Label, c.MinReplicas, c.MinReplicas))
	}
	caps := t.capabilities(c.AllowServerWideFaults)
	for _, f := range c.Faults {
		if err := faults.Check(f, caps); err != nil {
			return usage("Faults", fmt.Errorf("%s: %w", t.Label, err))
		}
	}
	return nil
}

// workloadField names the Workload field behind a workload validation error.
func workloadField(err error) string {
	switch {
	case errors.Is(err, workload.ErrInvalidWorkers):
		return "Workload.Workers"
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
			case t.Sentinel != nil:
				t.Label = "sentinel " + t.Sentinel.String()
			case t.ManagedSentinel != "":
				t.Label = "sentinel " + t.ManagedSentinel
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

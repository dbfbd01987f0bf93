package rlbench

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/plan"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/topology"
	"github.com/rlbench/rlbench/usercode"
	"github.com/rlbench/rlbench/workload"
)

// Config is one invocation of rlbench: which strategies on which clients,
// the workload, and the target servers, each with its own login. Its zero
// value runs every default against a private redis-server. Reports write
// it as MarshalJSON says.
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
	// fresh one (keyspace.NewRunID).
	RunID string `json:"run_id,omitempty"`

	// Targets are the servers every strategy x client cell runs against,
	// one after another, each logged in to with its own Login
	// (TargetSpec.Login); empty means one private redis-server.
	Targets []TargetSpec `json:"targets,omitempty"`
	// PrivateTLS starts each private server with TLS only, with a
	// certificate from a throwaway CA that rlbench generates and trusts:
	// the cost of TLS, measured.
	PrivateTLS bool `json:"private_tls,omitempty"`
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
	// Connections is the clients' connection shape (clients.Options
	// .Connections): how many connections each opens to each server; 0
	// means each client's default (a pooled client one per worker,
	// rueidis and valkey-go a few pipelined ones).
	Connections int `json:"connections,omitempty"`
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
	// (Config.Registry); with no Strategies, they are the ones run.
	Scripts []string `json:"scripts,omitempty"`
	// Functions registers user strategies from Redis Functions libraries,
	// each "NAME=FILE" (Config.Registry); with no Strategies,
	// they are run, after Scripts.
	Functions []string `json:"functions,omitempty"`
	// Sequences registers user strategies written as the commands they
	// send, each "NAME=SPEC" (Config.Registry); with no
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
}

// DefaultWarmup is the command line's warm-up before each cell.
const DefaultWarmup = time.Second

// DefaultScriptTimeout is Config.ScriptTimeout's default: Redis's own
// busy-reply-threshold, before which a busy server reads no command.
const DefaultScriptTimeout = usercode.DefaultScriptTimeout

// DefaultOnError is the outage policy when none is given: fail open, as
// most rate limiters do, so that a Redis outage does not reject everyone.
const DefaultOnError = "open"

// OnErrorPolicies lists the accepted outage policies.
var OnErrorPolicies = []string{"open", "closed"}

// MaxWindow is the longest window, in seconds: 10 years. Longer windows
// overflow the durations the clients and the admission tracker compute.
const MaxWindow = 10 * 366 * 24 * 3600

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
		c.Targets = []TargetSpec{{}}
	}
	c.Targets = topology.Label(c.Targets)
	if c.RunID == "" {
		c.RunID = keyspace.NewRunID()
	}
	if c.Workload.Prefix == "" {
		c.Workload.Prefix = keyspace.RunPrefix(c.RunID)
	}
	c.Workload = c.Workload.WithDefaults()
	return c
}

// plan builds the run's plan of c, which has its defaults (plan.Build):
// its registry (c.Registry), then the cells, "all" expanded. It returns c
// with its strategy and client lists expanded, the plan, and the error
// Run would refuse c with; it changes nothing of c.
func (c Config) plan() (Config, *plan.Plan, error) {
	reg, err := c.Registry()
	if err != nil {
		return c, nil, err
	}
	p, err := plan.Build(plan.Settings{
		Strategies: c.Strategies, Clients: c.Clients, Registry: reg,
		Targets: c.Targets, Options: clients.Options{
			Retries: c.Retries, Connections: c.Connections,
			DialTimeout: c.DialTimeout, ReadTimeout: c.ReadTimeout, WriteTimeout: c.WriteTimeout,
		},
		Prefix: c.Workload.Prefix,
	})
	if err != nil {
		return c, nil, err
	}
	c.Strategies, c.Clients = p.Strategies, p.Clients
	return c, p, c.validate()
}

// Plan returns the plan of the run of c (plan.Build: the cells, "all"
// expanded as Run expands it; a target may still leave out a strategy it
// cannot run, plan.Plan.LeaveOut), and the error Run would refuse c with.
func (c Config) Plan() (*plan.Plan, error) {
	_, p, err := c.withDefaults().plan()
	return p, err
}

// validate checks everything that can be checked without a server but
// the cells (plan.Build); it changes nothing.
func (c Config) validate() error {
	checks := []struct {
		field string
		bad   bool
		err   error
	}{
		{"Limit", c.Limit < 1, fmt.Errorf("%w, got %d", strategies.ErrInvalidLimit, c.Limit)},
		{"Window", c.Window < 1, fmt.Errorf("%w, got %d", strategies.ErrInvalidWindow, c.Window)},
		{"Fields", c.Fields < 0, fmt.Errorf("%w, got %d", strategies.ErrInvalidFields, c.Fields)},
		{"Window", c.Window > MaxWindow, fmt.Errorf("window must be at most %d s (10 years), got %d", MaxWindow, c.Window)},
		{"Targets.Login.DB", negativeDB(c.Targets) < 0, fmt.Errorf("db must be >= 0, got %d", negativeDB(c.Targets))},
		{"OnError", !slices.Contains(OnErrorPolicies, c.OnError), fmt.Errorf("unknown policy %q (accepted: %s)", c.OnError, strings.Join(OnErrorPolicies, ", "))},
		{"FlushDelay", c.FlushDelay < 0, fmt.Errorf("flush delay must be >= 0, got %s", c.FlushDelay)},
		{"Retries", c.Retries < 0, fmt.Errorf("%w, got %d", clients.ErrInvalidRetries, c.Retries)},
		{"DialTimeout", c.DialTimeout < 0, fmt.Errorf("dial timeout must be >= 0 (0: the client's default), got %s", c.DialTimeout)},
		{"ReadTimeout", c.ReadTimeout < 0, fmt.Errorf("read timeout must be >= 0 (0: the client's default), got %s", c.ReadTimeout)},
		{"WriteTimeout", c.WriteTimeout < 0, fmt.Errorf("write timeout must be >= 0 (0: the client's default), got %s", c.WriteTimeout)},
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
	if c.MinReplicas > 0 && !slices.ContainsFunc(c.Targets, func(t TargetSpec) bool { return t.ManagedSentinel != "" }) {
		return usage("MinReplicas", fmt.Errorf("min-replicas-to-write %d needs a private Sentinel set-up with at least that many replicas (--managed-sentinel R, R >= %d)", c.MinReplicas, c.MinReplicas))
	}
	if err := faults.CheckOverlap(c.Faults); err != nil {
		return usage("Faults", err)
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
func (c Config) validateTarget(t TargetSpec) error {
	t = c.privateSpec(t)
	if err := t.Validate(); err != nil {
		return err
	}
	caps := t.Capabilities(c.AllowServerWideFaults)
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
	case errors.Is(err, workload.ErrInvalidStages), errors.Is(err, workload.ErrStagesDuration), errors.Is(err, workload.ErrStagesWorkers):
		return "Workload.Stages"
	}
	return "Workload.Duration"
}

// TargetSpec names one server of a run (topology.Spec).
type TargetSpec = topology.Spec

// UsageError is bad input: a Config field with a value rlbench does not
// accept, or a target it cannot use. Nothing has been written to Redis when
// Run returns one.
type UsageError = topology.UsageError

func usage(field string, err error) error { return &UsageError{Field: field, Err: err} }

// ParseTarget reads "[LABEL=]VALUE", as --addr and --redis-server take it.
func ParseTarget(s string, private bool) TargetSpec { return topology.ParseTarget(s, private) }

// negativeDB is the first database number below 0 among the logins of
// specs, or 0 when there is none.
func negativeDB(specs []TargetSpec) int {
	for _, t := range specs {
		if t.Login.DB < 0 {
			return t.Login.DB
		}
	}
	return 0
}

// Registry returns the strategies a run of c may name: the built-in
// ones, and c's Scripts, Functions and Sequences registered into a
// registry of its own (strategies.Registry.RegisterScript,
// RegisterFunction, RegisterSequence), which nothing else sees: the
// process's registry never changes. Errors are *UsageError.
func (c Config) Registry() (*strategies.Registry, error) {
	reg := strategies.NewRegistry()
	for _, spec := range c.Scripts {
		if err := reg.RegisterScript(spec); err != nil {
			return nil, usage("Scripts", err)
		}
	}
	for _, spec := range c.Functions {
		if err := reg.RegisterFunction(spec); err != nil {
			return nil, usage("Functions", err)
		}
	}
	for _, spec := range c.Sequences {
		if err := reg.RegisterSequence(spec); err != nil {
			return nil, usage("Sequences", err)
		}
	}
	return reg, nil
}

// userStrategyNames returns the names of Config.Scripts, Config.Functions
// and Config.Sequences.
func (c Config) userStrategyNames() []string {
	var names []string
	for _, spec := range slices.Concat(c.Scripts, c.Functions, c.Sequences) {
		name, _, _ := strings.Cut(spec, "=")
		names = append(names, name)
	}
	return names
}

// privateSpec is t with the settings of c that a private target is started
// with: TLS, min-replicas-to-write, and the relays of the split-brain fault.
func (c Config) privateSpec(t TargetSpec) TargetSpec {
	t.PrivateTLS = c.PrivateTLS
	if t.ManagedSentinel != "" { // each --managed-sentinel set-up's; no other target has replicas of rlbench's
		t.MinReplicas, t.MinReplicasMaxLag = c.MinReplicas, c.MinReplicasMaxLag
	}
	t.Relays = slices.ContainsFunc(c.Faults, func(f faults.Fault) bool { return f.Kind == faults.SplitBrain })
	return t
}

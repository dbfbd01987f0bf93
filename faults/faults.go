// Package faults injects server-side faults into a load run at set times:
// a script-cache flush, a server restart, a stall, the run's connections
// killed, a cluster failover, a slot moved between masters, or a split
// brain; and, on the network between the load's clients and the server
// (network.go), latency, lost replies, a partition, every connection
// reset. Each is counted and reported by the run, never a crash of rlbench.
package faults

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/netproxy"
	"github.com/rlbench/rlbench/results"
)

// Kinds of fault, as written on the command line.
const (
	// ScriptFlush empties the server's script cache (SCRIPT FLUSH): the next
	// EVALSHA answers NOSCRIPT.
	ScriptFlush = "script-flush"
	// Restart stops the private server and starts it again on the same
	// port, with no data (no persistence): connections drop, counters vanish.
	Restart = "restart"
	// Stall pauses every client for the fault's argument (CLIENT PAUSE).
	Stall = "stall"
	// KillClients closes the run's own connections (CLIENT KILL ID of each
	// connection named for the run), never anyone else's.
	KillClients = "kill-clients"
	// Failover promotes a replica of one master of a private cluster
	// (CLUSTER FAILOVER): the new master has an empty script cache.
	Failover = "failover"
	// SentinelFailover makes the sentinels of a private Sentinel set-up
	// promote a replica (SENTINEL FAILOVER) and waits until the clients
	// can reach the new master, which never saw the increments that were
	// not yet replicated, and has an empty script cache.
	SentinelFailover = "sentinel-failover"
	// Reshard moves the hash slot of the cell's first key to another master
	// of a private cluster, as redis-cli --cluster reshard does, keeping it
	// migrating for the fault's argument (default 0): ASK redirections
	// while it migrates, MOVED after.
	Reshard = "reshard"
	// SplitBrain cuts the master of a private Sentinel set-up off from its
	// sentinels and replicas for the fault's argument (their relays; the
	// clients keep their own connections to it), until the sentinels
	// promote a replica, then heals the cut: the old master takes writes
	// until the clients learn of the new one, then rejoins as a replica
	// and throws them away.
	SplitBrain = "split-brain"
)

// Kinds lists the accepted kinds.
var Kinds = []string{ScriptFlush, Restart, Stall, KillClients, Failover, Reshard, SentinelFailover, SplitBrain, Latency, ReplyLoss, Partition, Reset}

// ErrSyntax is returned by Parse for a malformed fault.
var ErrSyntax = errors.New("fault must be KIND@T[:ARG], e.g. script-flush@10s, restart@10s, stall@10s:500ms, kill-clients@10s, failover@10s, reshard@10s:1s, split-brain@10s:5s, latency@10s:5s:50~10, reply-loss@10s:5s:0.05, partition@10s:2s, reset@10s")

// Fault is one fault at one time.
type Fault struct {
	// Kind is one of Kinds.
	Kind string `json:"kind"`
	// At is when the fault happens, from the start of the load.
	At time.Duration `json:"at_ns"`
	// Arg is the stall's length, how long a reshard keeps its slot
	// migrating, how long a network fault lasts (D), or how long a split
	// brain keeps the master cut off; 0 for the other kinds.
	Arg time.Duration `json:"arg_ns,omitempty"`
	// LatencyMS and JitterMS are a latency fault's delay and its jitter,
	// in milliseconds.
	LatencyMS int `json:"latency_ms,omitempty"`
	JitterMS  int `json:"jitter_ms,omitempty"`
	// P is a reply-loss fault's probability of losing each reply.
	P float64 `json:"p,omitempty"`
}

// String returns the fault in Parse's syntax.
func (f Fault) String() string {
	s := f.Kind + "@" + f.At.String()
	if Network(f.Kind) {
		return s + networkString(f)
	}
	if f.Arg > 0 {
		s += ":" + f.Arg.String()
	}
	return s
}

// Parse reads KIND@T[:ARG]. stall needs ARG, a duration of at least 1ms,
// and split-brain one of at least 1s; reshard takes one (a duration, 0 by
// default); the network kinds take theirs (parseNetwork); the other kinds
// take none.
func Parse(s string) (Fault, error) {
	kind, rest, ok := strings.Cut(s, "@")
	if !ok {
		return Fault{}, fmt.Errorf("%w; got %q", ErrSyntax, s)
	}
	at, arg, hasArg := strings.Cut(rest, ":")
	f := Fault{Kind: kind}
	var err error
	if f.At, err = time.ParseDuration(at); err != nil || f.At < 0 {
		return Fault{}, fmt.Errorf("%w; got %q (bad time %q)", ErrSyntax, s, at)
	}
	switch kind {
	case Stall:
		if !hasArg {
			return Fault{}, fmt.Errorf("%w; got %q (stall needs a length)", ErrSyntax, s)
		}
		if f.Arg, err = time.ParseDuration(arg); err != nil || f.Arg < time.Millisecond {
			return Fault{}, fmt.Errorf("%w; got %q (bad stall length %q)", ErrSyntax, s, arg)
		}
	case SplitBrain:
		if f.Arg, err = time.ParseDuration(arg); !hasArg || err != nil || f.Arg < time.Second {
			return Fault{}, fmt.Errorf("%w; got %q (split-brain needs how long the master is cut off, at least 1s: split-brain@T:D)", ErrSyntax, s)
		}
	case Reshard:
		if hasArg {
			if f.Arg, err = time.ParseDuration(arg); err != nil || f.Arg < 0 {
				return Fault{}, fmt.Errorf("%w; got %q (bad migration hold %q)", ErrSyntax, s, arg)
			}
		}
	case Latency, ReplyLoss, Partition, Reset:
		if err := parseNetwork(&f, s, arg, hasArg); err != nil {
			return Fault{}, err
		}
	case ScriptFlush, Restart, KillClients, Failover, SentinelFailover:
		if hasArg {
			return Fault{}, fmt.Errorf("%w; got %q (%s takes no argument)", ErrSyntax, s, kind)
		}
	default:
		return Fault{}, fmt.Errorf("unknown fault kind %q in %q (accepted: %s)", kind, s, strings.Join(Kinds, ", "))
	}
	return f, nil
}

// Capabilities are what a target offers the faults: whether rlbench
// started its servers, whether it is a cluster, and so on. Check reads them
// against each kind's requirements.
type Capabilities struct {
	// Private is true when rlbench started the target's servers.
	Private bool
	// Cluster is true for a Redis Cluster.
	Cluster bool
	// Sentinel is true for a master that Sentinel manages.
	Sentinel bool
	// Replicas is true when a private cluster's masters, or a private
	// Sentinel set-up's master, have replicas.
	Replicas bool
	// ServerWideConsent is true when the user allowed the server-wide
	// faults on a server rlbench did not start (--allow-server-wide-faults).
	ServerWideConsent bool
}

// requirement is what one kind of fault needs of its target.
type requirement struct {
	// single is true for the kinds that act on one server, not a cluster.
	single bool
	// serverWide is true for the kinds that act on every client or tenant
	// of the server, not only on the run's own connections and keys.
	serverWide bool
	// network is true for the kinds that act through a proxy between the
	// load's clients and one server (network.go).
	network bool
	// needs reports whether c is enough; why says what is missing.
	needs func(c Capabilities) bool
	why   string
}

// requirements is the one table of what each kind needs; Check (before the
// run) and Inject (at the fault) both read it.
var requirements = map[string]requirement{
	ScriptFlush: {single: true, serverWide: true},
	Stall:       {single: true, serverWide: true},
	KillClients: {single: true},
	Restart: {single: true, needs: func(c Capabilities) bool { return c.Private && !c.Sentinel },
		why: "needs private servers that rlbench starts; leave out --addr"},
	SentinelFailover: {single: true, needs: func(c Capabilities) bool { return c.Sentinel && c.Private && c.Replicas },
		why: "needs a private Sentinel set-up with replicas (--managed-sentinel R, R >= 1)"},
	SplitBrain: {single: true, needs: func(c Capabilities) bool { return c.Sentinel && c.Private && c.Replicas },
		why: "needs a private Sentinel set-up with replicas (--managed-sentinel R, R >= 1): rlbench must put the proxies between its nodes"},
	Failover: {needs: func(c Capabilities) bool { return c.Cluster && c.Private && c.Replicas },
		why: "needs a private cluster with replicas (--managed-cluster NxR)"},
	Reshard: {needs: func(c Capabilities) bool { return c.Cluster && c.Private },
		why: "needs a private cluster (--managed-cluster N): it moves a slot, keys outside the run's prefix included"},
	Latency:   {single: true, network: true},
	ReplyLoss: {single: true, network: true},
	Partition: {single: true, network: true},
	Reset:     {single: true, network: true},
}

// ServerWide reports whether a fault of kind acts on the whole server
// (every client, every tenant's scripts) rather than on the run's own
// connections and keys.
func ServerWide(kind string) bool { return requirements[kind].serverWide }

// Check says why f cannot be injected into a target with capabilities c;
// nil when it can.
func Check(f Fault, c Capabilities) error {
	req, ok := requirements[f.Kind]
	switch {
	case !ok:
		return fmt.Errorf("unknown fault kind %q (accepted: %s)", f.Kind, strings.Join(Kinds, ", "))
	case req.network && (c.Cluster || c.Sentinel):
		return fmt.Errorf("%s %s", f, networkWhy)
	case c.Cluster && req.single:
		return fmt.Errorf("%s: only %s are supported on a cluster", f, strings.Join(clusterKinds(), " and "))
	case req.needs != nil && !req.needs(c):
		return fmt.Errorf("%s %s", f, req.why)
	case req.serverWide && !c.Private && !c.ServerWideConsent:
		return fmt.Errorf("%s acts on the whole server, not only on the run's connections and keys: it needs a private server that rlbench starts, or --allow-server-wide-faults", f)
	}
	return nil
}

// clusterKinds lists the kinds that a cluster can take, in Kinds' order.
func clusterKinds() []string {
	var out []string
	for _, k := range Kinds {
		if !requirements[k].single {
			out = append(out, k)
		}
	}
	return out
}

// Subject is what faults act on: the server, its connections and what
// can be done to it.
type Subject struct {
	// Capabilities are what the target offers; Inject refuses a fault
	// that Check refuses.
	Capabilities Capabilities
	// Server names the server in the report of a server-wide fault on a
	// server rlbench did not start, e.g. "127.0.0.1:6379".
	Server string
	// Admin is a connection to the server used to send the fault's commands.
	Admin redis.Cmdable
	// Restart restarts the server; nil when rlbench does not manage it
	// (Capabilities.Private is false).
	Restart func(ctx context.Context) error
	// ClientName is the CLIENT SETNAME of the run's connections, which
	// KillClients closes.
	ClientName string
	// Failover promotes a replica of one master (of a private cluster, or
	// of a private Sentinel set-up) and returns what it did, e.g.
	// "127.0.0.1:7001 took over from 127.0.0.1:7000"; nil when the target
	// has no replica to promote.
	Failover func(ctx context.Context) (string, error)
	// SplitBrain cuts the master off from its sentinels and replicas for
	// hold and heals it (see the SplitBrain kind), and returns what
	// happened; nil when the target is not a private Sentinel set-up with
	// replicas.
	SplitBrain func(ctx context.Context, hold time.Duration) (string, error)
	// Reshard moves a slot that holds the run's keys to another master,
	// keeping it migrating for hold, and returns what it did; nil when the
	// target is not a private cluster.
	Reshard func(ctx context.Context, hold time.Duration) (string, error)
	// Proxy is what the load's connections go through when a network
	// fault is asked for (StartProxy); nil otherwise.
	Proxy *netproxy.Proxy
}

// Event records one fault as it happened. It is results.FaultEvent, which
// the report's data model defines; this package injects the faults.
type Event = results.FaultEvent

// Inject performs f now and says what it did. A server-wide fault on a
// server rlbench did not start says so, and names the server.
func Inject(ctx context.Context, f Fault, t Subject) (string, error) {
	if err := Check(f, t.Capabilities); err != nil {
		return "", err
	}
	what, err := inject(ctx, f, t)
	if err == nil && ServerWide(f.Kind) && !t.Capabilities.Private {
		what += fmt.Sprintf(" (server-wide: every client of %s, allowed by --allow-server-wide-faults)", t.Server)
	}
	return what, err
}

// inject performs f now and says what it did.
func inject(ctx context.Context, f Fault, t Subject) (string, error) {
	switch f.Kind {
	case ScriptFlush:
		return "script cache flushed", t.Admin.ScriptFlush(ctx).Err()
	case Restart:
		if t.Restart == nil {
			return "", fmt.Errorf("%s: the target gives no restart", f)
		}
		return timed(func() (string, error) { return "server restarted", t.Restart(ctx) })
	case Stall:
		// CLIENT PAUSE without a mode pauses every command (ALL), in
		// slices renewed while rlbench lives (stall.go).
		return stall(ctx, t.Admin, f.Arg)
	case KillClients:
		n, err := killNamed(ctx, t.Admin, t.ClientName)
		return fmt.Sprintf("killed %d connections", n), err
	case Failover, SentinelFailover:
		if t.Failover == nil {
			return "", fmt.Errorf("%s: the target gives no failover", f)
		}
		return timed(func() (string, error) { return t.Failover(ctx) })
	case SplitBrain:
		if t.SplitBrain == nil {
			return "", fmt.Errorf("%s: the target gives no split brain", f)
		}
		return t.SplitBrain(ctx, f.Arg)
	case Reshard:
		if t.Reshard == nil {
			return "", fmt.Errorf("%s: the target gives no reshard", f)
		}
		return timed(func() (string, error) { return t.Reshard(ctx, f.Arg) })
	case Latency, ReplyLoss, Partition, Reset:
		var ev Event
		err := injectNetwork(ctx, f, t.Proxy, &ev)
		return ev.Detail, err
	}
	return "", fmt.Errorf("unknown fault kind %q", f.Kind)
}

// timed runs do and adds how long it took to what it says it did:
// "server restarted in 52ms".
func timed(do func() (string, error)) (string, error) {
	start := time.Now()
	what, err := do()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s in %s", what, time.Since(start).Round(time.Millisecond)), nil
}

// killNamed closes every connection whose name is name.
func killNamed(ctx context.Context, admin redis.Cmdable, name string) (int, error) {
	if name == "" {
		return 0, errors.New("kill-clients: the run's connections have no name")
	}
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("client list: %w", err)
	}
	killed := 0
	sc := bufio.NewScanner(strings.NewReader(list))
	for sc.Scan() {
		var id int64
		var cname string
		for _, field := range strings.Fields(sc.Text()) {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "id":
				id, _ = strconv.ParseInt(v, 10, 64)
			case "name":
				cname = v
			}
		}
		if cname != name || id == 0 {
			continue
		}
		if n, err := admin.ClientKillByFilter(ctx, "ID", strconv.FormatInt(id, 10)).Result(); err == nil {
			killed += int(n)
		}
	}
	return killed, nil
}

// Schedule injects each fault at its time after now, in the background.
// The returned function cancels the faults not yet due and returns the
// events of those that were injected, in time order.
func Schedule(ctx context.Context, fs []Fault, t Subject) (stop func() []Event) {
	return ScheduleNotify(ctx, fs, t, nil)
}

// ScheduleNotify is Schedule that also gives each event to notify, when
// not nil, as its fault ends (from the fault's goroutine: live metrics).
func ScheduleNotify(ctx context.Context, fs []Fault, t Subject, notify func(Event)) (stop func() []Event) {
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu     sync.Mutex
		events []Event
		wg     sync.WaitGroup
	)
	for _, f := range fs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			timer := time.NewTimer(f.At)
			defer timer.Stop()
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			ev := Event{Fault: f.String(), AtS: time.Since(start).Seconds()}
			var err error
			if Network(f.Kind) {
				// Ends with the load: the proxy goes with its connections.
				if err = Check(f, t.Capabilities); err == nil {
					err = injectNetwork(ctx, f, t.Proxy, &ev)
				}
			} else if f.Kind == Stall {
				// Ends with the load, or at an interrupt: the server
				// answers again within a slice.
				ev.Detail, err = Inject(ctx, f, t)
			} else {
				// Once due, a fault runs to its end even if the load ends
				// meanwhile: a restart cut short would leave no server.
				ev.Detail, err = Inject(context.WithoutCancel(ctx), f, t)
			}
			if err != nil {
				ev.Error = err.Error()
			}
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
			if notify != nil {
				notify(ev)
			}
		}()
	}
	return func() []Event {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		slices.SortFunc(events, func(a, b Event) int { return cmp.Compare(a.AtS, b.AtS) })
		return events
	}
}

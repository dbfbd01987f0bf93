package topology

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/redisserver"
)

// Spec names one server of a run: an existing one at Addr, or a
// private one started from RedisServer; or a Redis Cluster: an existing one
// reached through the nodes in Cluster, or a private one of the size
// ManagedCluster gives. At most one of Addr, Cluster and ManagedCluster.
type Spec struct {
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
	// Login is how the clients and rlbench's own connections log in to
	// this target (an existing one: a private one needs none); its zero
	// value is the default user, no password, DB 0, plain TCP. Never
	// written to reports.
	Login connection.Settings `json:"-"`
	// PrivateTLS starts the private server with TLS only
	// (Config.PrivateTLS); not for a managed cluster or Sentinel set-up.
	PrivateTLS bool `json:"-"`
	// MinReplicas and MinReplicasMaxLag (in seconds; 0: 1 s) set
	// min-replicas-to-write on every node of a private Sentinel set-up
	// (Config.MinReplicas); 0: none.
	MinReplicas, MinReplicasMaxLag int `json:"-"`
	// Relays puts each node of a private Sentinel set-up behind a proxy
	// that its sentinels and replicas reach it through, which the
	// split-brain fault cuts; the clients dial the nodes directly.
	Relays bool `json:"-"`
	// QuickRejoin shortens a private Sentinel set-up's INFO and hello
	// periods (redisserver.SentinelOptions.QuickRejoin), so that an old
	// master back from a split brain rejoins as a replica within seconds.
	QuickRejoin bool `json:"-"`
}

// IsCluster reports whether t names a Redis Cluster.
func (t Spec) IsCluster() bool { return len(t.Cluster) > 0 || t.ManagedCluster != "" }

// IsSentinel reports whether t names a master that Sentinel manages.
func (t Spec) IsSentinel() bool { return t.Sentinel != nil || t.ManagedSentinel != "" }

// Private reports whether rlbench starts t's servers itself.
func (t Spec) Private() bool { return t.Addr == "" && len(t.Cluster) == 0 && t.Sentinel == nil }

// Kinds counts the kinds of target t names at once; one is right.
func (t Spec) Kinds() int {
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
func (t Spec) managedReplicas() int {
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

// Capabilities says what the faults can count on in t.
func (t Spec) Capabilities(allowServerWide bool) faults.Capabilities {
	return faults.Capabilities{
		Private: t.Private(), Cluster: t.IsCluster(), Sentinel: t.IsSentinel(),
		Replicas: t.managedReplicas() > 0, ServerWideConsent: allowServerWide,
	}
}

// ParseTarget reads "[LABEL=]VALUE", as --addr and --redis-server take it.
func ParseTarget(s string, private bool) Spec {
	label, value, ok := strings.Cut(s, "=")
	if !ok {
		label, value = "", s
	}
	if private {
		return Spec{Label: label, RedisServer: value}
	}
	return Spec{Label: label, Addr: value}
}

// MaxSentinelReplicas is the most replicas a managed Sentinel set-up takes.
const MaxSentinelReplicas = 100

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

// usage is a *UsageError of field.
func usage(field string, err error) error { return &UsageError{Field: field, Err: err} }

// Label gives every target a label, unique in the run: its own, or
// its address, or its binary's name, with "#2", "#3" ... after repeats.
func Label(ts []Spec) []Spec {
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

// Validate checks t without a server: one kind of target, a managed
// cluster's or Sentinel set-up's size, no DB but 0 on a cluster (t.Login),
// TLS only on a private single server.
func (t Spec) Validate() error {
	if t.Kinds() > 1 {
		return usage("Targets.Cluster", fmt.Errorf("%s: give one of --addr, --url, --cluster, --managed-cluster, --sentinel and --managed-sentinel", t.Label))
	}
	if t.ManagedCluster != "" {
		if _, _, err := redisserver.ParseClusterSize(t.ManagedCluster); err != nil {
			return usage("Targets.ManagedCluster", err)
		}
	}
	if t.ManagedSentinel != "" {
		if n, err := strconv.Atoi(t.ManagedSentinel); err != nil || n < 0 || n > MaxSentinelReplicas {
			return usage("Targets.ManagedSentinel", fmt.Errorf("%s: want the number of replicas, 0 to %d, got %q", t.Label, MaxSentinelReplicas, t.ManagedSentinel))
		}
	}
	if t.IsCluster() && t.Login.DB != 0 {
		return usage("Targets.Login.DB", fmt.Errorf("%s: %w", t.Label, clients.ErrClusterDB))
	}
	if t.PrivateTLS && (t.ManagedCluster != "" || t.ManagedSentinel != "") {
		return usage("PrivateTLS", fmt.Errorf("%s: a TLS private server is a single server; leave out --managed-cluster and --managed-sentinel", t.Label))
	}
	if t.MinReplicas > 0 && (t.ManagedSentinel == "" || t.MinReplicas > t.managedReplicas()) {
		return usage("MinReplicas", fmt.Errorf("%s: min-replicas-to-write %d needs a private Sentinel set-up with at least that many replicas (--managed-sentinel R, R >= %d)", t.Label, t.MinReplicas, t.MinReplicas))
	}
	return nil
}

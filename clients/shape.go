package clients

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strings"
)

// The topologies a client may support, as Topologies names them.
const (
	TopologySingle   = "single server"
	TopologyCluster  = "cluster"
	TopologySentinel = "sentinel"
)

// Topologies lists, by client, the topologies it reaches through its own
// support: redigo has neither a cluster client nor Sentinel support built
// in (those live in other modules), so it reaches a single server only.
var Topologies = map[string][]string{
	"go-redis":  {TopologySingle, TopologyCluster, TopologySentinel},
	"rueidis":   {TopologySingle, TopologyCluster, TopologySentinel},
	"redigo":    {TopologySingle},
	"valkey-go": {TopologySingle, TopologyCluster, TopologySentinel},
}

// ErrTopology is returned by New and CheckOptions for a client asked to
// reach a topology it does not support (Topologies).
var ErrTopology = errors.New("the client does not support this topology")

// ErrConnections is returned by New and CheckOptions for a connection
// count (Options.Connections) the client cannot open.
var ErrConnections = errors.New("invalid connection count")

// ErrNoRetries is returned by New and CheckOptions for redigo with
// Options.Retries above 0: redigo never sends a command again.
var ErrNoRetries = errors.New("redigo has no retries (it never sends a command again): leave retries at 0")

// maxPipelined is the most pipelined connections rueidis and valkey-go
// open to one server: 2^MaxPipelineMultiplex (8 in both).
const maxPipelined = 1 << 8

// pipelining reports whether the named client multiplexes its workers over
// a few pipelined connections (rueidis, valkey-go) rather than giving each
// a connection of a pool (go-redis, redigo).
func pipelining(name string) bool { return name == "rueidis" || name == "valkey-go" }

// TopologyOf is the topology o reaches: Sentinel when its master is set,
// else a cluster when Cluster is, else a single server.
func TopologyOf(o Options) string {
	switch {
	case o.Sentinel.Master != "":
		return TopologySentinel
	case len(o.Cluster) > 0:
		return TopologyCluster
	}
	return TopologySingle
}

// CheckOptions reports what New would refuse, for the named client, that
// can be told without a server: a topology it does not support
// (ErrTopology), a connection count it cannot open (ErrConnections),
// retries on redigo (ErrNoRetries), differing read and write timeouts on
// rueidis or valkey-go (ErrRueidisTimeouts). The errors name the client
// and what it accepts.
func CheckOptions(name string, o Options) error {
	if topo, ok := TopologyOf(o), Topologies[name]; ok != nil && !slices.Contains(ok, topo) {
		return fmt.Errorf("%s: %s: %w (%s supports: %s)", name, topo, ErrTopology, name, strings.Join(ok, ", "))
	}
	switch n := o.Connections; {
	case n < 0:
		return fmt.Errorf("%s: %w: want >= 1 (0: the client's default), got %d", name, ErrConnections, n)
	case n > 0 && pipelining(name) && (bits.OnesCount(uint(n)) != 1 || n > maxPipelined):
		return fmt.Errorf("%s: %w: %s opens a power of two of pipelined connections per server (2^PipelineMultiplex): 1, 2, 4, ... %d, got %d", name, ErrConnections, name, maxPipelined, n)
	}
	if name == "redigo" && o.Retries > 0 {
		return fmt.Errorf("%s: %w, got %d", name, ErrNoRetries, o.Retries)
	}
	if pipelining(name) && o.ReadTimeout != 0 && o.WriteTimeout != 0 && o.ReadTimeout != o.WriteTimeout {
		return fmt.Errorf("%s: read timeout %s, write timeout %s: %w", name, o.ReadTimeout, o.WriteTimeout, ErrRueidisTimeouts)
	}
	return nil
}

// pipelineMultiplex is rueidis' and valkey-go's PipelineMultiplex for o:
// log2 of o.Connections when set, else the clients' own default for a
// single server, 2^min(log2(GOMAXPROCS), 2) connections, pinned here so
// that the report states it.
func pipelineMultiplex(o Options) int {
	if o.Connections > 0 {
		return bits.TrailingZeros(uint(o.Connections))
	}
	multiplex := int(math.Log2(float64(runtime.GOMAXPROCS(0))))
	return min(max(multiplex, 0), 2)
}

// poolSize is the pool of go-redis and redigo for o: o.Connections when
// set, else one connection per worker, so that callers do not queue
// inside the client.
func poolSize(o Options) int { return cmp.Or(o.Connections, o.Workers) }

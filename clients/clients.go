// Package clients adapts the Redis clients rlbench compares (go-redis v9,
// rueidis, redigo and valkey-go) to strategies.Client, each with the
// client's own native calls.
package clients

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/strategies"
)

// Names lists the clients rlbench can drive, in the order "all" expands to.
var Names = []string{"go-redis", "rueidis", "redigo", "valkey-go"}

// ErrUnknownClient is returned by New for a name not in Names.
var ErrUnknownClient = errors.New("unknown client")

// ErrClusterDB is returned by New for a cluster with a DB other than 0: a
// Redis Cluster has only database 0.
var ErrClusterDB = errors.New("a cluster has only db 0")

// Options configures an adapter. Its zero value connects to 127.0.0.1:6379.
type Options struct {
	// Addr is the server's host:port; "" means "127.0.0.1:6379". It is
	// ignored when Cluster is set.
	Addr string
	// Cluster, when not empty, is the host:port of one or more nodes of a
	// Redis Cluster: the client discovers the others and routes each command
	// to its key's slot through its own cluster support (go-redis
	// ClusterClient, rueidis and valkey-go cluster mode; redigo has none:
	// ErrTopology). DB must then be 0.
	Cluster []string
	// Masters is the number of a cluster's masters when known (0 or 1
	// otherwise): rueidis sizes its ring per master, the workers' requests
	// spread over them, not as if they all went to one node.
	Masters int
	// Password authenticates with AUTH when not empty.
	Password string
	// Username is the ACL user Password logs in as; "" means the default
	// user.
	Username string
	// TLS, when not nil, makes every connection use TLS with this config
	// (connection.TLSFiles.Config builds it); nil means plain TCP.
	TLS *tls.Config
	// Sentinel, when its Master is set, reaches the master that the
	// sentinels at Sentinel.Addrs name, through each client's own Sentinel
	// support (go-redis failover client, rueidis and valkey-go
	// ClientOption.Sentinel; redigo has none: ErrTopology), which follows
	// a failover. Addr and Cluster are then ignored.
	Sentinel connection.Sentinel
	// DB is the database number SELECTed on connect; a cluster has only 0.
	DB int
	// Workers is the number of goroutines that will share the client. The
	// go-redis and redigo pools (per node, on a cluster) are sized to it,
	// unless Connections is set, so that callers do not queue inside the
	// client; rueidis and valkey-go multiplex them over a few pipelined
	// connections.
	Workers int
	// ClientName is set on every connection (CLIENT SETNAME), so that the
	// run's own connections can be found in CLIENT LIST; "" sets none.
	ClientName string
	// BeforeLoad, when set, is called before each FUNCTION LOAD of a
	// library absent from a master, with its name and code; its error
	// stops the load. The run records the library with it, for rlbench
	// cleanup after a SIGKILL. nil calls nothing.
	BeforeLoad func(ctx context.Context, name, code string) error
	// FlushDelay is rueidis' and valkey-go's MaxFlushDelay: after each
	// write, the pipeline waits up to this long to gather more commands
	// into the next one. 0, their default, writes at once. go-redis and
	// redigo ignore it.
	FlushDelay time.Duration
	// Retries is how many times the client sends a command again after a
	// network error (a reset, a timeout): go-redis' MaxRetries, for every
	// command, also one the server may have run already; rueidis' retry,
	// which by its design covers read-only commands only (GET, EVALSHA_RO:
	// never INCR, EXPIRE, EVAL or MULTI), each up to Retries times, and
	// valkey-go's alike; redigo has none (ErrNoRetries). 0 means none,
	// rlbench's default.
	Retries int
	// DialTimeout bounds each dial (go-redis DialTimeout, rueidis
	// and valkey-go Dialer.Timeout, redigo DialConnectTimeout); 0 means
	// the client's default, 5 s (redigo: 30 s).
	DialTimeout time.Duration
	// ReadTimeout bounds the wait for each reply, and WriteTimeout each
	// write; 0 means the client's default (go-redis: 5 s, the write's the
	// read's). rueidis has one timeout for both, ConnWriteTimeout (default
	// 10 s): it takes whichever is set; both set must be equal
	// (ErrRueidisTimeouts); so has valkey-go. redigo: DialReadTimeout and
	// DialWriteTimeout, none by default.
	ReadTimeout, WriteTimeout time.Duration
	// Connections, when not 0, is the connection shape: how many
	// connections the client opens to each server (each node of a
	// cluster), instead of its default: go-redis' PoolSize and
	// redigo's MaxActive, which workers then share; rueidis' and
	// valkey-go's pipelined connections (2^PipelineMultiplex, so a power
	// of two up to 256: ErrConnections otherwise).
	Connections int
}

// ErrRueidisTimeouts is returned by New for rueidis with a ReadTimeout and
// a WriteTimeout that differ: rueidis bounds writes and replies with one
// timeout, ConnWriteTimeout.
var ErrRueidisTimeouts = errors.New("rueidis has one timeout for writes and replies (ConnWriteTimeout): give the read and write timeouts the same value, or only one")

// ErrInvalidRetries is returned by New for a negative Retries.
var ErrInvalidRetries = errors.New("retries must be >= 0")

// Conn is a strategies.Client bound to one server, with what a report needs
// to say about it.
type Conn interface {
	strategies.Client
	// Name is the client's name as in Names.
	Name() string
	// Options describes the client settings that change how load reaches
	// the server, e.g. "pool_size=500 protocol=3".
	Options() string
	// Fallbacks counts scripts that were sent again after the server
	// answered NOSCRIPT to EVALSHA: with EVAL by the adapters and
	// redis_rate, with SCRIPT LOAD and EVALSHA by ulule. On go-redis it
	// counts every EVALSHA answered NOSCRIPT, the libraries' included.
	Fallbacks() int64
	// Open opens, before the load, the connections its workers will use:
	// go-redis conns connections (on a cluster, each master its share),
	// dialled by 64 goroutines per server that end with it; rueidis PINGs
	// each master over its shared connections. A worker that dials during
	// the load measures the dial, and a goroutine that dials keeps the
	// deep stack of the dial for the rest of the run (8 KiB more per
	// worker, seen at 10,000).
	Open(ctx context.Context, conns int) error
	// DeleteLibraries deletes (FUNCTION DELETE) each library of Redis
	// Functions that FunctionLoad loaded, from every master that still
	// holds it with the code loaded, and returns every library
	// FunctionLoad was given and what became of it; a library that was
	// there, identical, before its first load is left as it was. Without
	// a library to delete it sends nothing.
	DeleteLibraries(ctx context.Context) ([]Library, error)
	// Close closes every connection.
	Close() error
}

// GoRedisConn is a Conn with a go-redis client behind it: the go-redis
// adapter's alone. Conn names no client's type; the strategies that call a
// library written for go-redis (package strategies/published) find this
// one by a type assertion, as an http.Handler finds an http.Flusher.
type GoRedisConn interface {
	Conn
	// GoRedis returns the go-redis client itself, a *redis.Client (of a
	// single server or a Sentinel master) or a *redis.ClusterClient, whose
	// commands go through the adapter's hook.
	GoRedis() redis.UniversalClient
}

// Select expands "all" in names to every client, drops repeats, and
// returns ErrUnknownClient, with the accepted names, for an unknown one.
func Select(names []string) ([]string, error) {
	return strategies.SelectFrom(names, Names, ErrUnknownClient)
}

// Modules maps each client name to its Go module, whose version the build
// records.
var Modules = map[string]string{
	"go-redis":  "github.com/redis/go-redis/v9",
	"rueidis":   "github.com/redis/rueidis",
	"redigo":    "github.com/gomodule/redigo",
	"valkey-go": "github.com/valkey-io/valkey-go",
}

// Version returns the version of the named client's module in this build,
// e.g. "v9.23.0", or "" when the build does not record it.
func Version(name string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range bi.Deps {
		if m.Path == Modules[name] {
			if m.Replace != nil {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return ""
}

// New connects the named client to one server, or to a cluster when
// o.Cluster is set. go-redis dials on first use; rueidis dials (and so can
// fail) here.
func New(name string, o Options) (Conn, error) {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:6379"
	}
	if o.Sentinel.Master != "" {
		o.Cluster = nil
	}
	if len(o.Cluster) > 0 && o.DB != 0 {
		return nil, fmt.Errorf("%s: db %d: %w", name, o.DB, ErrClusterDB)
	}
	if o.Workers < 1 {
		o.Workers = 1
	}
	if o.Retries < 0 {
		return nil, fmt.Errorf("%s: %w, got %d", name, ErrInvalidRetries, o.Retries)
	}
	if err := CheckOptions(name, o); err != nil {
		return nil, err
	}
	switch name {
	case "go-redis":
		return newGoRedis(o), nil
	case "rueidis":
		return newRueidis(o)
	case "redigo":
		return newRedigo(o)
	case "valkey-go":
		return newValkey(o)
	}
	return nil, fmt.Errorf("%w %q (accepted: %s)", ErrUnknownClient, name, strings.Join(Names, ", "))
}

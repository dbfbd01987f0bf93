package redisserver

import (
	"context"

	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Target is the server a run uses: one already listening at an address, or
// a private one.
type Target struct {
	// Addr is the server's host:port.
	Addr string
	// Info is what the server said of itself.
	Info Info
	// Private is the private server behind Addr, which can be restarted;
	// nil for a server at a given address.
	Private *Server
	// owned is true when Open started Private and Close must stop it.
	owned bool
}

// TargetOptions says which server Open uses: the one at Addr when Addr is
// set, else Server when it is not nil, else a private one started with
// Start.
type TargetOptions struct {
	// Addr is host:port of an existing server.
	Addr string
	// Password and DB are used at Addr.
	Password string
	DB       int
	// Server is a private server the caller started and will close.
	Server *Server
	// Start configures the private server Open starts.
	Start Options
}

// NewObserver returns the go-redis connection rlbench watches a server
// with, beside the clients under test: audits, clean-ups, faults and
// self-checks. It sends no CLIENT SETINFO and turns maintenance
// notifications off, so that it works on any server version.
func NewObserver(addr, password string, db, poolSize int) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                     addr,
		Password:                 password,
		DB:                       db,
		PoolSize:                 poolSize,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}

// NewClusterObserver is NewObserver for a Redis Cluster reached through
// addrs: a cluster client with poolSize connections per node, no retries,
// and maintenance notifications off.
func NewClusterObserver(addrs []string, password string, poolSize int) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                    addrs,
		Password:                 password,
		PoolSize:                 poolSize,
		MaxRetries:               -1,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}

// ProbeTimeout bounds Open's first contact with a server at an address.
const ProbeTimeout = 5 * time.Second

// Open finds or starts the server o names. An address that does not
// answer, and a private server that does not start (ErrNotFound among
// them), are errors that say what to do instead.
func Open(ctx context.Context, o TargetOptions) (*Target, error) {
	switch {
	case o.Addr != "":
		pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		defer cancel()
		info, err := Probe(pctx, o.Addr, o.Password, o.DB)
		if err != nil {
			return nil, fmt.Errorf("%w (is a Redis server listening there? leave out --addr to let rlbench start a private redis-server)", err)
		}
		return &Target{Addr: o.Addr, Info: info}, nil
	case o.Server != nil:
		return &Target{Addr: o.Server.Addr(), Info: o.Server.Info(), Private: o.Server}, nil
	}
	srv, err := Start(ctx, o.Start)
	if err != nil {
		return nil, err
	}
	return &Target{Addr: srv.Addr(), Info: srv.Info(), Private: srv, owned: true}, nil
}

// Close stops the private server if Open started it.
func (t *Target) Close() error {
	if t.owned {
		return t.Private.Close()
	}
	return nil
}

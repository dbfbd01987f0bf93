package redisserver

import (
	"context"
	"errors"

	"fmt"
	"time"

	"github.com/rlbench/rlbench/serverinfo"
)

// Target is the server a run uses: one already listening at an address, or
// a private one.
type Target struct {
	// Addr is the server's host:port.
	Addr string
	// serverinfo.Info is what the server said of itself.
	Info serverinfo.Info
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
		if errors.Is(err, ErrAuth) {
			return nil, err
		}
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

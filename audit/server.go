package audit

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/rlbench/rlbench/serverinfo"
)

// ErrServerChanged is returned, wrapped, for a node whose server restarted
// or stopped being what it was (a master failed over) during its audit:
// its run_id or its role changed between two of the audit's batches, so
// the figures mix two servers' keyspaces and the node is incomplete.
var ErrServerChanged = errors.New("the server changed during the audit")

// Server says which server the audit of one node read, as INFO said when
// the node's audit began. The audit reads it again after every SCAN page:
// a run_id or role that changed ends the node's audit (ErrServerChanged).
type Server struct {
	// Addr is the node's host:port, "" when its client does not say.
	Addr string `json:"addr"`
	// DB is the database audited (always 0 on a cluster).
	DB int `json:"db"`
	// Name is "redis", or "valkey" for a server reporting valkey_version.
	Name string `json:"name"`
	// Version is the server's own version (valkey_version on Valkey).
	Version string `json:"version"`
	// RunID is INFO server's run_id: new at each start of the server.
	RunID string `json:"run_id"`
	// Role is INFO replication's role: "master", or "slave" for a replica.
	Role string `json:"role"`
}

// serverReads are the two INFO reads of a node's identity, queued in a
// pipeline.
type serverReads struct{ server, repl *redis.StringCmd }

// queueServer queues INFO server and INFO replication in pipe.
func queueServer(ctx context.Context, pipe redis.Pipeliner) serverReads {
	return serverReads{server: pipe.Info(ctx, "server"), repl: pipe.Info(ctx, "replication")}
}

// parse returns the identity the replies give; s holds the address and db.
func (r serverReads) parse(s Server) (Server, error) {
	for _, c := range []*redis.StringCmd{r.server, r.repl} {
		if err := c.Err(); err != nil {
			return s, fmt.Errorf("info: %w (the audit reads INFO server and replication to know which server it reads)", err)
		}
	}
	f := serverinfo.Parse(r.server.Val())
	s.Name, s.Version, s.RunID = "redis", f["redis_version"], f["run_id"]
	if v, ok := f["valkey_version"]; ok {
		s.Name, s.Version = "valkey", v
	}
	s.Role = serverinfo.Parse(r.repl.Val())["role"]
	if s.RunID == "" {
		return s, errors.New("info server: no run_id: the audit cannot tell whether the server restarted")
	}
	return s, nil
}

// check returns an error wrapping ErrServerChanged unless the replies
// name the server want.
func (r serverReads) check(want Server) error {
	got, err := r.parse(want)
	switch {
	case err != nil:
		return err
	case got.RunID != want.RunID:
		return fmt.Errorf("%w: run_id %s, then %s (the server restarted)", ErrServerChanged, want.RunID, got.RunID)
	case got.Role != want.Role:
		return fmt.Errorf("%w: role %s, then %s (a failover)", ErrServerChanged, want.Role, got.Role)
	}
	return nil
}

// readServer reads the identity of n's server, INFO server and INFO
// replication in one pipeline.
func readServer(ctx context.Context, n Node) (Server, error) {
	s := Server{Addr: addrOf(n)}
	if c, ok := n.(interface{ Options() *redis.Options }); ok {
		s.DB = c.Options().DB
	}
	pipe := n.Pipeline()
	reads := queueServer(ctx, pipe)
	_, _ = pipe.Exec(ctx) // each reply carries its error
	return reads.parse(s)
}

// sameServer reads n's identity again and returns an error wrapping
// ErrServerChanged if it is not want's.
func sameServer(ctx context.Context, n Node, want Server) error {
	pipe := n.Pipeline()
	reads := queueServer(ctx, pipe)
	_, _ = pipe.Exec(ctx)
	return reads.check(want)
}

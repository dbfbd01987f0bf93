package audit

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/redisserver"
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

// readServer reads the identity of n's server, INFO server and INFO
// replication in one pipeline.
func readServer(ctx context.Context, n Node) (Server, error) {
	s := Server{Addr: addrOf(n)}
	if c, ok := n.(interface{ Options() *redis.Options }); ok {
		s.DB = c.Options().DB
	}
	pipe := n.Pipeline()
	server := pipe.Info(ctx, "server")
	repl := pipe.Info(ctx, "replication")
	if cmds, err := pipe.Exec(ctx); err != nil {
		return s, fmt.Errorf("%w (the audit reads INFO server and replication to know which server it reads)", pipelineError(cmds, err))
	}
	f := redisserver.ParseInfo(server.Val())
	s.Name, s.Version, s.RunID = "redis", f["redis_version"], f["run_id"]
	if v, ok := f["valkey_version"]; ok {
		s.Name, s.Version = "valkey", v
	}
	s.Role = redisserver.ParseInfo(repl.Val())["role"]
	if s.RunID == "" {
		return s, errors.New("info server: no run_id: the audit cannot tell whether the server restarted")
	}
	return s, nil
}

// sameServer reads n's identity again and returns an error wrapping
// ErrServerChanged if it is not want's.
func sameServer(ctx context.Context, n Node, want Server) error {
	got, err := readServer(ctx, n)
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

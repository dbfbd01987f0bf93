package target

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/redirects"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/results"
)

// sentinel is a master that Sentinel manages: an existing set-up, or a
// private one (a master, its replicas and three sentinels) that rlbench
// started and can fail over. The admin connection and the clients ask the
// sentinels where the master is, and follow it.
type sentinel struct {
	target  connection.Sentinel
	admin   *redis.Client
	managed *redisserver.Sentinel
	spec    Spec
}

// openSentinel starts the private set-up, or asks the sentinels of an
// existing one for its master and checks the login there.
func openSentinel(ctx context.Context, spec Spec, login connection.Settings) (*Target, error) {
	s := &sentinel{spec: spec}
	if spec.ManagedSentinel != "" {
		replicas, _ := strconv.Atoi(spec.ManagedSentinel)
		m, err := redisserver.StartSentinel(ctx, redisserver.SentinelOptions{
			Replicas: replicas, Binary: spec.RedisServer, Args: privateServerArgs,
		})
		if err != nil {
			return nil, usage("Targets.ManagedSentinel", fmt.Errorf("%s: %w", spec.Label, err))
		}
		s.managed, login = m, connection.Settings{}
		s.target = connection.Sentinel{Master: m.MasterName(), Addrs: m.SentinelAddrs()}
	} else {
		s.target = *spec.Sentinel
	}
	master, err := connection.MasterAddr(ctx, s.target, login)
	if err != nil {
		s.close()
		return nil, usage("Targets.Sentinel", fmt.Errorf("%s: %w", spec.Label, err))
	}
	if s.managed == nil {
		if err := checkLogin(ctx, spec, master, login); err != nil {
			return nil, err
		}
	}
	admin, err := connection.Admin{Settings: login}.Failover(s.target)
	if err != nil {
		s.close()
		return nil, usage("Connection", fmt.Errorf("%s: %w", spec.Label, err))
	}
	s.admin = admin
	t := &Target{Spec: spec, Login: login, Admin: admin, topology: s, Server: results.Server{Addr: master}}
	return newTarget(ctx, t, s.managed != nil)
}

// nodes is the master the sentinels name now, through the admin
// connection, which follows it.
func (s *sentinel) nodes(context.Context) ([]*redis.Client, error) {
	return []*redis.Client{s.admin}, nil
}

func (s *sentinel) endpoint(o *clients.Options) { o.Sentinel = s.target }

// faultActions gives a private set-up with replicas the sentinel-failover
// fault: SENTINEL FAILOVER, then a wait until the new master takes writes.
func (s *sentinel) faultActions(string) faults.Target {
	if s.managed == nil || s.spec.managedReplicas() == 0 {
		return faults.Target{}
	}
	return faults.Target{Failover: s.managed.Failover}
}

func (s *sentinel) redirects(context.Context) redirects.Snapshot { return nil }

func (s *sentinel) describe(r results.Server) string {
	if s.managed != nil {
		return fmt.Sprintf("private Sentinel set-up of %s %s: master %s with %s replicas, sentinels %s; stopped at the end",
			r.Name, r.Version, r.Addr, s.spec.ManagedSentinel, strings.Join(s.target.Addrs, ","))
	}
	return fmt.Sprintf("%s %s, master %q at %s via sentinels %s", r.Name, r.Version, s.target.Master, r.Addr, strings.Join(s.target.Addrs, ","))
}

func (s *sentinel) close() {
	if s.managed != nil {
		s.managed.Close()
	}
}

// ManagedSentinel is the private Sentinel set-up t started; nil for any
// other target.
func (t *Target) ManagedSentinel() *redisserver.Sentinel {
	if s, ok := t.topology.(*sentinel); ok {
		return s.managed
	}
	return nil
}

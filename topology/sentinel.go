package topology

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/netproxy"
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
	// settings says what a private set-up has beyond its defaults, for
	// describe: ", min-replicas-to-write 1 (lag 1 s), relays before its
	// nodes"; "" for none.
	settings string
}

// openSentinel starts the private set-up, or asks the sentinels of an
// existing one for its master and checks the login there.
func openSentinel(ctx context.Context, spec Spec, login connection.Settings) (*Target, error) {
	s := &sentinel{spec: spec}
	if spec.ManagedSentinel != "" {
		replicas, _ := strconv.Atoi(spec.ManagedSentinel)
		o := redisserver.SentinelOptions{
			Replicas: replicas, Binary: spec.RedisServer, Args: privateServerArgs,
			MinReplicas: spec.MinReplicas, MinReplicasMaxLag: spec.MinReplicasMaxLag,
			QuickRejoin: spec.QuickRejoin,
		}
		if spec.Relays {
			// The sentinels and the replicas reach each node through a
			// proxy, which the fault cuts; the clients and rlbench's own
			// connections dial the nodes directly (Direct).
			o.Relay = func(addr string) (redisserver.Relay, error) { return netproxy.Start(addr) }
		}
		s.settings = sentinelSettings(o)
		m, err := redisserver.StartSentinel(ctx, o)
		if err != nil {
			return nil, usage("Targets.ManagedSentinel", fmt.Errorf("%s: %w", spec.Label, err))
		}
		s.managed, login = m, connection.Settings{}
		s.target = connection.Sentinel{Master: m.MasterName(), Addrs: m.SentinelAddrs(), Direct: m.Direct()}
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
// fault (SENTINEL FAILOVER, then a wait until the new master takes
// writes) and the split-brain fault (its relays cut, then healed).
func (s *sentinel) faultActions(string) faults.Subject {
	if s.managed == nil || s.spec.managedReplicas() == 0 {
		return faults.Subject{}
	}
	return faults.Subject{Failover: s.managed.Failover, SplitBrain: func(ctx context.Context, hold time.Duration) (string, error) {
		b, err := s.managed.SplitBrain(ctx, hold)
		return b.String(), err
	}}
}

func (s *sentinel) redirects(context.Context) redirects.Snapshot { return nil }

func (s *sentinel) describe(r results.Server) string {
	if s.managed != nil {
		return fmt.Sprintf("private Sentinel set-up of %s %s: master %s with %s replicas, sentinels %s%s; stopped at the end",
			r.Name, r.Version, r.Addr, s.spec.ManagedSentinel, strings.Join(s.target.Addrs, ","), s.settings)
	}
	return fmt.Sprintf("%s %s, master %q at %s via sentinels %s", r.Name, r.Version, s.target.Master, r.Addr, strings.Join(s.target.Addrs, ","))
}

// sentinelSettings says what o sets beyond the set-up's defaults, for
// describe.
func sentinelSettings(o redisserver.SentinelOptions) string {
	out := ""
	if o.MinReplicas > 0 {
		out += fmt.Sprintf(", min-replicas-to-write %d (lag %d s)", o.MinReplicas, cmp.Or(o.MinReplicasMaxLag, redisserver.DefaultMinReplicasMaxLag))
	}
	if o.Relay != nil {
		out += ", each node behind a proxy for the split-brain fault (the clients dial the nodes directly)"
	}
	if o.QuickRejoin {
		out += ", sentinels reading INFO every 1 s and saying hello every 500 ms (an old master rejoins within seconds)"
	}
	return out
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

package topology

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/redirects"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/workload"
)

// cluster is a Redis Cluster: an existing one, or a private one that
// rlbench started and can fail over and reshard.
type cluster struct {
	// seeds are the nodes the clients connect to first.
	seeds []string
	// masters is how many masters the cluster had when opened.
	masters int
	admin   *redis.ClusterClient
	managed *redisserver.Cluster
	spec    Spec
}

// openCluster starts the managed cluster, or checks the login on the
// first seed node of an existing one.
func openCluster(ctx context.Context, spec Spec, login connection.Settings) (*Target, error) {
	c := &cluster{seeds: spec.Cluster, spec: spec}
	field := "Targets.Cluster"
	if spec.ManagedCluster != "" {
		field = "Targets.ManagedCluster"
		masters, replicas, _ := redisserver.ParseClusterSize(spec.ManagedCluster)
		m, err := redisserver.StartCluster(ctx, redisserver.ClusterOptions{
			Masters: masters, Replicas: replicas, Binary: spec.RedisServer,
			Args: privateServerArgs,
		})
		if err != nil {
			return nil, usage(field, fmt.Errorf("%s: %w", spec.Label, err))
		}
		c.managed, c.seeds, login = m, m.Addrs(), connection.Settings{}
	} else if err := checkLogin(ctx, spec, c.seeds[0], login); err != nil {
		return nil, err
	}
	admin, err := connection.Admin{Settings: login}.Cluster(c.seeds)
	if err != nil {
		c.close()
		return nil, usage("Connection", fmt.Errorf("%s: %w", spec.Label, err))
	}
	c.admin = admin
	t := &Target{Spec: spec, Login: login, Admin: admin, topology: c, Server: results.Server{Addr: strings.Join(c.seeds, ",")}}
	nodes, err := c.nodes(ctx)
	if err != nil {
		t.Close()
		return nil, usage(field, fmt.Errorf("%s: %w (is a Redis Cluster node listening there?)", spec.Label, err))
	}
	c.masters = len(nodes)
	return newTarget(ctx, t, c.managed != nil)
}

func (c *cluster) nodes(ctx context.Context) ([]*redis.Client, error) {
	var mu sync.Mutex
	var nodes []*redis.Client
	err := c.admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		nodes = append(nodes, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cluster masters: %w", err)
	}
	if len(nodes) == 0 {
		return nil, errors.New("cluster masters: none")
	}
	slices.SortFunc(nodes, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
	return nodes, nil
}

func (c *cluster) endpoint(o *clients.Options) { o.Cluster, o.Masters = c.seeds, c.masters }

// faultActions gives a private cluster's failover (when its masters have
// replicas: it promotes a replica of the master that serves slot 0 at the
// time) and reshard (it moves the slot of the cell's first key to the next
// master).
func (c *cluster) faultActions(prefix string) faults.Subject {
	if c.managed == nil {
		return faults.Subject{}
	}
	ft := faults.Subject{Reshard: func(ctx context.Context, hold time.Duration) (string, error) {
		key := workload.KeyNames(prefix, 1)[0]
		slot, err := c.admin.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			return "", fmt.Errorf("reshard: cluster keyslot %s: %w", key, err)
		}
		m, err := c.managed.MoveSlot(ctx, int(slot), hold)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("slot %d moved from %s to %s with its keys (%d), migrating for %s", m.Slot, m.From, m.To, m.Keys, hold), nil
	}}
	if c.spec.managedReplicas() > 0 {
		ft.Failover = func(ctx context.Context) (string, error) {
			masters := c.managed.MasterAddrs()
			if len(masters) == 0 {
				return "", errors.New("failover: the cluster has no master")
			}
			newMaster, err := c.managed.Failover(ctx, masters[0])
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%s took over from %s", newMaster, masters[0]), nil
		}
	}
	return ft
}

// redirects reads the cluster's redirection and cluster-error counters on
// every node (package redirects); nil when a node could not be read.
func (c *cluster) redirects(ctx context.Context) redirects.Snapshot {
	s, err := redirects.Take(ctx, c.admin)
	if err != nil {
		return nil
	}
	return s
}

func (c *cluster) describe(r results.Server) string {
	if r.Managed {
		return fmt.Sprintf("private Redis Cluster %s of %s %s (%s); stopped at the end", c.spec.ManagedCluster, r.Name, r.Version, r.Addr)
	}
	return fmt.Sprintf("Redis Cluster of %s %s via %s", r.Name, r.Version, r.Addr)
}

func (c *cluster) close() {
	if c.managed != nil {
		c.managed.Close()
	}
}

package clients_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/porttest"
	"github.com/rlbench/rlbench/internal/redistest"
)

// connectedClients is the server's connected_clients (INFO clients).
func connectedClients(t *testing.T, admin *redis.Client) int {
	t.Helper()
	info, err := admin.Info(t.Context(), "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("INFO clients has no connected_clients: %q", info)
	return 0
}

// TestOpen checks that Open connects before the load: go-redis the
// connections asked for, in its pool for the workers to take (the server
// sees them all, and the pool holds them idle), and no more when called
// again; rueidis its shared connections. Each client has a server of its
// own, so that one's closing connections do not show in the other's count.
func TestOpen(t *testing.T) {
	t.Parallel()
	const conns = 300
	for _, name := range clients.Names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			admin := redistest.Client(t, srv)
			before := connectedClients(t, admin)
			c, err := clients.New(name, clients.Options{Addr: srv.Addr(), Workers: conns})
			if err != nil {
				t.Fatalf("New(%q) error: %v", name, err)
			}
			defer c.Close()
			for round := range 2 {
				if err := c.Open(t.Context(), conns); err != nil {
					t.Fatalf("Open() #%d error: %v", round+1, err)
				}
				opened := connectedClients(t, admin) - before
				if name == "redigo" {
					// redigo's pool has no stats of idle connections
					// beyond the count: the server's count says it.
					if opened != conns {
						t.Errorf("Open() #%d: the server sees %d new connections; want %d", round+1, opened, conns)
					}
					continue
				}
				if name != "go-redis" {
					if opened < 1 || opened > 4 {
						t.Errorf("Open() #%d: the server sees %d new connections; want 1 to 4 (shared, pipelined)", round+1, opened)
					}
					continue
				}
				stats := c.(clients.GoRedisConn).GoRedis().PoolStats()
				if opened != conns || stats.TotalConns != conns || stats.IdleConns != conns {
					t.Errorf("Open() #%d: the server sees %d new connections, the pool %d (%d idle); want %d of each", round+1, opened, stats.TotalConns, stats.IdleConns, conns)
				}
			}
		})
	}
}

// TestOpenFails checks that go-redis' Open stops at a server that refuses
// connections, saying so, and at a context that has ended.
func TestOpenFails(t *testing.T) {
	t.Parallel()
	refused := porttest.Refused(t)
	c, err := clients.New("go-redis", clients.Options{Addr: refused, Workers: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Open(t.Context(), 1000); !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), refused) {
		t.Errorf("Open() against a closed port = %v; want connection refused, naming %s", err, refused)
	}

	srv := redistest.Start(t)
	c2, err := clients.New("go-redis", clients.Options{Addr: srv.Addr(), Workers: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c2.Open(ctx, 10); !errors.Is(err, context.Canceled) {
		t.Errorf("Open() with an ended context = %v; want context.Canceled", err)
	}
}

// TestOpenClusterMasters checks that on a cluster Open and FunctionLoad go
// to the masters only, on both clients: with a replica gone (killed after
// the client learned the topology, before the cluster marks it failed),
// both still succeed, as the load, which sends nothing to replicas, would.
func TestOpenClusterMasters(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 1)
	masters := cl.MasterAddrs()
	awaitReplicasOnline(t, redistest.ClusterClient(t, cl))
	conns := make(map[string]clients.Conn)
	for _, name := range supporting(clients.TopologyCluster) {
		c, err := clients.New(name, clients.Options{Cluster: masters, Workers: 30})
		if err != nil {
			t.Fatalf("New(%q) error: %v", name, err)
		}
		defer c.Close()
		conns[name] = c
	}
	replica := ""
	for _, addr := range cl.Addrs() {
		if !slices.Contains(masters, addr) {
			replica = addr
		}
	}
	if replica == "" {
		t.Fatalf("cluster %v has no replica beside masters %v", cl.Addrs(), masters)
	}
	if err := cl.Node(replica).Close(); err != nil {
		t.Fatal(err)
	}
	const library = "#!lua name=rlbench_open_test\nredis.register_function('rlbench_open_test', function() return 1 end)"
	for name, c := range conns {
		if err := c.Open(t.Context(), 30); err != nil {
			t.Errorf("%s: Open() with replica %s gone: %v; want nil (replicas take no command)", name, replica, err)
		}
		if err := c.FunctionLoad(t.Context(), library); err != nil {
			t.Errorf("%s: FunctionLoad() with replica %s gone: %v; want nil", name, replica, err)
		}
	}
}

// awaitReplicasOnline waits until CLUSTER SHARDS calls every node online:
// a replica that has not yet synced is "loading", and clients leave it out
// of the topology.
func awaitReplicasOnline(t *testing.T, rdb *redis.ClusterClient) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		shards, err := rdb.ClusterShards(t.Context()).Result()
		online := err == nil
		for _, sh := range shards {
			for _, n := range sh.Nodes {
				online = online && n.Health == "online"
			}
		}
		if online {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replicas not online after 30 s: %+v (err %v)", shards, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

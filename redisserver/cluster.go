package redisserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/serverinfo"
)

// ErrClusterSize is returned, wrapped, by ParseClusterSize and StartCluster
// for a cluster shape Redis Cluster cannot take. Its message names the
// accepted form.
var ErrClusterSize = errors.New("want N or NxR: N masters (at least 3) and R replicas per master (at least 0), for example 3 or 3x1")

// ErrNoReplica is returned, wrapped, by Cluster.Failover when the master has
// no replica to promote.
var ErrNoReplica = errors.New("master has no replica to promote (start the cluster with replicas, for example 3x1)")

const (
	// DefaultClusterMasters is the number of masters StartCluster starts when
	// ClusterOptions.Masters is 0, and the fewest Redis Cluster accepts.
	DefaultClusterMasters = 3
	// maxClusterNodes caps masters*(1+replicas): Redis Cluster's own
	// recommended maximum, and a guard against a typo starting thousands of
	// processes.
	maxClusterNodes = 1000
	// maxMeshNodes is the largest cluster in which StartCluster has every
	// pair of nodes meet directly.
	maxMeshNodes = 32
	// clusterSlots is the number of hash slots in Redis Cluster.
	clusterSlots = 16384
	// clusterNodeTimeout is each node's cluster-node-timeout, in milliseconds:
	// short, so that a failed node is noticed within seconds.
	clusterNodeTimeout = 2000
	// clusterFormTimeout caps how long StartCluster waits, once every node
	// answers, for the cluster to form and settle.
	clusterFormTimeout = 30 * time.Second
	// failoverTimeout caps how long Failover waits for the promotion to
	// settle. Redis gives up a manual failover after 5 seconds.
	failoverTimeout = 15 * time.Second
	// clusterQueryTimeout bounds MasterAddrs, which takes no context.
	clusterQueryTimeout = 5 * time.Second
	// migrateBatch is how many keys MoveSlot moves per MIGRATE.
	migrateBatch = 100
	// clusterPollInterval is the pause between checks of the cluster's state.
	clusterPollInterval = 20 * time.Millisecond
)

// ClusterOptions configures StartCluster. The zero value starts three
// masters without replicas, with "redis-server" from PATH.
type ClusterOptions struct {
	// Masters is the number of masters, among which the 16384 hash slots are
	// split evenly. At least 3, which Redis Cluster needs. Default (0): 3.
	Masters int
	// Replicas is the number of replicas per master, at least 0. Default: 0.
	Replicas int
	// Binary is the redis-server (7.0 or newer) or valkey-server to run, as
	// Options.Binary.
	Binary string
	// Args are extra config arguments for every node, as Options.Args. They
	// must not override the cluster settings StartCluster sets
	// (--cluster-enabled, --cluster-config-file, --cluster-port,
	// --cluster-announce-ip). If they set --requirepass, nodes also
	// authenticate to their masters with it (--masterauth) and every client
	// of the cluster needs it.
	Args []string
}

// Cluster is a private Redis Cluster on free loopback ports, started by
// StartCluster and owned by the caller, who must Close it.
//
// Each node is a Server (see Node) with its own temporary directory, which
// holds its nodes.conf: a node restarted with Server.Restart keeps its node
// ID and its place in the cluster, but not its data.
type Cluster struct {
	nodes    []*Server                // masters as started, then their replicas
	replicas int                      // replicas per master
	password string                   // --requirepass of the nodes, or ""
	clients  map[string]*redis.Client // an admin connection per node address
	busPorts map[string]int           // cluster bus port per node address
	addrByID map[string]string        // node ID -> address; IDs survive Restart

	mu     sync.Mutex
	closed bool
}

// StartCluster starts o.Masters*(1+o.Replicas) private servers with Start,
// in parallel, each with cluster mode on, and forms them into a cluster from
// Go, with CLUSTER commands: the masters take even ranges of the 16384 slots
// in order, the nodes meet, and each replica follows its master. It needs
// redis-server 7.0 or newer (or valkey), and no other program.
//
// It returns when every node reports cluster_state:ok, all nodes agree on
// who is master of which slots, every master has its replicas and every
// replica's link to its master is up: at most 30 seconds after the nodes
// answer (a loaded machine's margin), or sooner if ctx ends. A 3x1 cluster takes about 2 seconds, most
// of it Redis's own delay before a new master accepts writes.
//
// Each node's cluster bus listens on a port of its own, chosen free like the
// client port and set with --cluster-port, rather than on port+10000: that
// port may be taken or, above 55535, not exist.
//
// On error every node already started is stopped.
func StartCluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	c, masters, err := startUnformed(ctx, o)
	if err != nil {
		return nil, err
	}
	fctx, cancel := context.WithTimeout(ctx, clusterFormTimeout)
	defer cancel()
	if err := c.form(fctx, masters); err != nil {
		c.Close()
		return nil, fmt.Errorf("redisserver: start cluster: %w", err)
	}
	return c, nil
}

// startUnformed starts StartCluster's nodes, each with an admin
// connection, and returns them not yet a cluster, with the number of
// masters.
func startUnformed(ctx context.Context, o ClusterOptions) (*Cluster, int, error) {
	masters, replicas := o.Masters, o.Replicas
	if masters == 0 {
		masters = DefaultClusterMasters
	}
	if err := checkClusterSize(masters, replicas); err != nil {
		return nil, 0, fmt.Errorf("redisserver: start cluster: %w", err)
	}
	// Resolve the binary once, so that a missing one is one error, not one per node.
	binary, err := lookBinary(o.Binary)
	if err != nil {
		return nil, 0, err
	}
	c := &Cluster{
		nodes:    make([]*Server, masters*(1+replicas)),
		replicas: replicas,
		password: requirepass(o.Args),
		clients:  make(map[string]*redis.Client),
		addrByID: make(map[string]string),
		busPorts: make(map[string]int),
	}
	if err := c.startNodes(ctx, binary, o.Args); err != nil {
		c.Close()
		return nil, 0, err
	}
	for _, srv := range c.nodes {
		c.clients[srv.Addr()] = connection.Admin{Settings: connection.Settings{Password: c.password}, PoolSize: 2, FailFast: true}.PlainClient(srv.Addr())
	}
	return c, masters, nil
}

// startNodes starts every node in parallel. Its errors are Start's, which
// name the package and the operation.
func (c *Cluster) startNodes(ctx context.Context, binary string, extra []string) error {
	errs := make([]error, len(c.nodes))
	busPorts := make([]int, len(c.nodes))
	var wg sync.WaitGroup
	for i := range c.nodes {
		wg.Go(func() { c.nodes[i], busPorts[i], errs[i] = startNode(ctx, binary, c.password, extra) })
	}
	wg.Wait()
	for i, srv := range c.nodes {
		if srv != nil {
			c.busPorts[srv.Addr()] = busPorts[i]
		}
	}
	// Close skips the nodes that did not start.
	c.nodes = slices.DeleteFunc(c.nodes, func(s *Server) bool { return s == nil })
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if info := c.nodes[0].Info(); info.Name == "redis" && !serverinfo.VersionAtLeast(info.Version, "7.0.0") {
		return fmt.Errorf("redisserver: start cluster: %s is redis %s: a managed cluster needs redis-server 7.0 or newer", c.nodes[0].binary, info.Version)
	}
	return nil
}

// startNode starts one cluster-enabled server whose cluster bus listens on a
// free port of its own, and returns that port. If the port turns out to be
// taken, it retries with another.
func startNode(ctx context.Context, binary, password string, extra []string) (*Server, int, error) {
	for attempt := 1; ; attempt++ {
		busPort, err := freePort()
		if err != nil {
			return nil, 0, err
		}
		args := []string{
			"--cluster-enabled", "yes",
			// Relative to --dir, the node's own temporary directory.
			"--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(busPort),
			"--cluster-announce-ip", "127.0.0.1",
			"--cluster-node-timeout", strconv.Itoa(clusterNodeTimeout),
			// A replica's first sync starts at once instead of after 5 seconds.
			"--repl-diskless-sync-delay", "0",
		}
		if password != "" {
			args = append(args, "--masterauth", password)
		}
		srv, err := Start(ctx, Options{Binary: binary, Args: append(args, extra...)})
		if err == nil {
			return srv, busPort, nil
		}
		if strings.Contains(err.Error(), "cluster-port") {
			return nil, 0, fmt.Errorf("%w (a managed cluster needs redis-server 7.0 or newer)", err)
		}
		if !errors.Is(err, errPortTaken) || attempt == startAttempts {
			return nil, 0, err
		}
	}
}

// Addrs returns the address of every node, "127.0.0.1:PORT": the masters as
// started, in slot order, then their replicas (those of the first master
// first). The list stays the same across Failover and Restart; MasterAddrs
// says who is master now.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, srv := range c.nodes {
		addrs[i] = srv.Addr()
	}
	return addrs
}

// MasterAddrs returns the address of each current master, ordered by the
// first slot it serves, as CLUSTER NODES says at the time of the call: after
// a Failover the promoted replica is listed instead of its old master. It
// asks the nodes in the order of Addrs until one answers, for at most 5
// seconds in all, and returns nil if none does or the cluster is closed.
func (c *Cluster) MasterAddrs() []string {
	ctx, cancel := context.WithTimeout(context.Background(), clusterQueryTimeout)
	defer cancel()
	view, err := c.view(ctx)
	if err != nil {
		return nil
	}
	return c.mastersIn(view)
}

// mastersIn returns the addresses of view's masters that are not failed:
// those serving slots ordered by their first slot, then any without slots.
func (c *Cluster) mastersIn(view clusterView) []string {
	var masters clusterView
	for _, n := range view {
		if n.has("master") && !n.has("fail") {
			masters = append(masters, n)
		}
	}
	slices.SortStableFunc(masters, func(a, b viewNode) int {
		return a.firstSlot() - b.firstSlot()
	})
	addrs := make([]string, len(masters))
	for i, m := range masters {
		addrs[i] = c.addrOf(m)
	}
	return addrs
}

// Node returns the process of the node at addr, one of Addrs, for Restart;
// nil if addr is not a node of c.
func (c *Cluster) Node(addr string) *Server {
	for _, srv := range c.nodes {
		if srv.Addr() == addr {
			return srv
		}
	}
	return nil
}

// Close stops every node (in parallel, each as Server.Close: SIGTERM, then
// SIGKILL after 5 seconds) and removes their temporary directories. Calling
// Close again does nothing and returns nil.
func (c *Cluster) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	for _, rdb := range c.clients {
		rdb.Close()
	}
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, srv := range c.nodes {
		wg.Go(func() { errs[i] = srv.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *Cluster) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

package redisserver

import (
	"context"
	"errors"
	"fmt"
	"net"
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

// form joins the started nodes into a cluster and waits until it settles.
func (c *Cluster) form(ctx context.Context, masters int) error {
	if err := c.assign(ctx, masters); err != nil {
		return err
	}
	if err := c.meetAll(ctx); err != nil {
		return err
	}
	// A replica can follow its master only once it knows the master's ID.
	if err := c.awaitKnown(ctx); err != nil {
		return err
	}
	for i, srv := range c.nodes[masters:] {
		master := c.nodes[i/c.replicas]
		id := c.idOf(master.Addr())
		if err := c.clients[srv.Addr()].ClusterReplicate(ctx, id).Err(); err != nil {
			return fmt.Errorf("cluster replicate %s (%s) on %s: %w", id, master.Addr(), srv.Addr(), err)
		}
	}
	return c.await(ctx, "the cluster to settle", func(ctx context.Context) error {
		_, err := c.settled(ctx)
		return err
	})
}

// assign reads each node's ID, gives it its config epoch and, to the first
// masters nodes, their slots.
func (c *Cluster) assign(ctx context.Context, masters int) error {
	for i, srv := range c.nodes {
		rdb := c.clients[srv.Addr()]
		id, err := rdb.ClusterMyID(ctx).Result()
		if err != nil {
			return fmt.Errorf("cluster myid on %s: %w", srv.Addr(), err)
		}
		c.addrByID[id] = srv.Addr()
		// Distinct config epochs before the nodes meet, as redis-cli does,
		// so that the cluster need not resolve epoch collisions first.
		if err := rdb.Do(ctx, "cluster", "set-config-epoch", i+1).Err(); err != nil {
			return fmt.Errorf("cluster set-config-epoch on %s: %w", srv.Addr(), err)
		}
		if i < masters {
			first, last := i*clusterSlots/masters, (i+1)*clusterSlots/masters-1
			if err := rdb.ClusterAddSlotsRange(ctx, first, last).Err(); err != nil {
				return fmt.Errorf("cluster addslotsrange %d %d on %s: %w", first, last, srv.Addr(), err)
			}
		}
	}
	return nil
}

// meetAll has every pair of nodes meet directly, rather than all through
// the first node and then by gossip, which takes about a second longer;
// but in a large cluster only the first node meets the others.
func (c *Cluster) meetAll(ctx context.Context) error {
	meeting := c.nodes
	if len(c.nodes) > maxMeshNodes {
		meeting = c.nodes[:1]
	}
	for i, a := range meeting {
		for _, b := range c.nodes[i+1:] {
			if err := c.meet(ctx, a.Addr(), b.Addr()); err != nil {
				return err
			}
		}
	}
	return nil
}

// meet sends CLUSTER MEET b to the node at a. Its third argument is the
// bus port, which is not port+10000 here.
func (c *Cluster) meet(ctx context.Context, a, b string) error {
	host, port, _ := net.SplitHostPort(b)
	if err := c.clients[a].Do(ctx, "cluster", "meet", host, port, c.busPorts[b]).Err(); err != nil {
		return fmt.Errorf("cluster meet %s on %s: %w", b, a, err)
	}
	return nil
}

// awaitKnown waits until every node knows every other, none of them still
// in handshake. Redis drops a handshake that has not completed within
// cluster-node-timeout and never tries it again, which a loaded machine
// can take (a node that is not scheduled for two seconds): a node that
// still lists another neither as a node nor in a handshake meets it again,
// at most once per cluster-node-timeout.
func (c *Cluster) awaitKnown(ctx context.Context) error {
	met := time.Now()
	return c.await(ctx, "every node to know every other", func(ctx context.Context) error {
		missing, err := c.allKnown(ctx)
		if len(missing) > 0 && time.Since(met) >= clusterNodeTimeout*time.Millisecond {
			for _, m := range missing {
				if err := c.meet(ctx, m[0], m[1]); err != nil {
					return err
				}
			}
			met = time.Now()
		}
		return err
	})
}

// idOf returns the node ID of the node at addr, or "".
func (c *Cluster) idOf(addr string) string {
	for id, a := range c.addrByID {
		if a == addr {
			return id
		}
	}
	return ""
}

// await calls check every clusterPollInterval until it returns nil or ctx
// ends; the error then quotes check's last complaint.
func (c *Cluster) await(ctx context.Context, what string, check func(context.Context) error) error {
	start := time.Now()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waited %v for %s: %w (%v)", time.Since(start).Round(time.Millisecond), what, err, ctx.Err())
		case <-time.After(clusterPollInterval):
		}
	}
}

// allKnown reports whether every node lists every node, none of them still
// in handshake, and returns the pairs (a, b) where a lists nothing at b's
// address, not even a handshake.
func (c *Cluster) allKnown(ctx context.Context) (missing [][2]string, err error) {
	for _, srv := range c.nodes {
		view, verr := c.viewFrom(ctx, srv.Addr())
		if verr != nil {
			return missing, verr
		}
		for _, other := range c.nodes {
			if other != srv && !slices.ContainsFunc(view, func(n viewNode) bool { return n.addr == other.Addr() }) {
				missing = append(missing, [2]string{srv.Addr(), other.Addr()})
			}
		}
		if err != nil {
			continue
		}
		if len(view) != len(c.nodes) {
			err = fmt.Errorf("%s knows %d of %d nodes", srv.Addr(), len(view), len(c.nodes))
		}
		for _, n := range view {
			if n.has("handshake") && err == nil {
				err = fmt.Errorf("%s is in handshake with %s", srv.Addr(), n.addr)
			}
		}
	}
	if err == nil && len(missing) > 0 {
		err = fmt.Errorf("%s does not know %s", missing[0][0], missing[0][1])
	}
	return missing, err
}

// settled reports whether the cluster is healthy and stable, and returns the
// view all nodes share: every node says cluster_state:ok, knows every node
// and flags none as failing, all nodes agree on each node's role and slots,
// every master serving slots has c.replicas replicas, and each replica's
// link to its master is up.
func (c *Cluster) settled(ctx context.Context) (clusterView, error) {
	var shared clusterView
	for _, srv := range c.nodes {
		addr := srv.Addr()
		info, err := c.clients[addr].ClusterInfo(ctx).Result()
		if err != nil {
			return nil, fmt.Errorf("cluster info on %s: %w", addr, err)
		}
		if state := serverinfo.Parse(info)["cluster_state"]; state != "ok" {
			return nil, fmt.Errorf("%s says cluster_state:%s", addr, state)
		}
		view, err := c.viewFrom(ctx, addr)
		if err != nil {
			return nil, err
		}
		if len(view) != len(c.nodes) {
			return nil, fmt.Errorf("%s knows %d of %d nodes", addr, len(view), len(c.nodes))
		}
		for _, n := range view {
			for _, flag := range []string{"fail", "fail?", "handshake", "noaddr"} {
				if n.has(flag) {
					return nil, fmt.Errorf("%s flags %s %s", addr, n.addr, flag)
				}
			}
			if n.link != "connected" {
				return nil, fmt.Errorf("%s has its cluster bus link to %s %s", addr, n.addr, n.link)
			}
		}
		if shared == nil {
			shared = view
			continue
		}
		for _, n := range view {
			if m, _ := shared.byID(n.id); c.role(m) != c.role(n) {
				return nil, fmt.Errorf("%s says %s is %s, %s says it is %s", c.nodes[0].Addr(), c.addrOf(n), c.role(m), addr, c.role(n))
			}
		}
	}
	for _, m := range shared {
		if !m.has("master") || len(m.slots) == 0 {
			continue
		}
		if n := len(shared.replicasOf(m.id)); n != c.replicas {
			return nil, fmt.Errorf("master %s has %d replicas, want %d", c.addrOf(m), n, c.replicas)
		}
	}
	for _, n := range shared {
		if !n.has("slave") {
			continue
		}
		addr := c.addrOf(n)
		rdb, ok := c.clients[addr]
		if !ok {
			return nil, fmt.Errorf("replica %s is not a node of this cluster", addr)
		}
		info, err := rdb.Info(ctx, "replication").Result()
		if err != nil {
			return nil, fmt.Errorf("info replication on %s: %w", addr, err)
		}
		if status := serverinfo.Parse(info)["master_link_status"]; status != "up" {
			return nil, fmt.Errorf("replica %s has master_link_status:%s", addr, status)
		}
	}
	return shared, nil
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

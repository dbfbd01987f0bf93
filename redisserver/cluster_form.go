package redisserver

// Forming a cluster: the started nodes get their IDs, epochs and slots,
// meet, and are waited on until every node knows every other and they
// agree (StartCluster, through form).

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/rlbench/rlbench/serverinfo"
)

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

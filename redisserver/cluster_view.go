package redisserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// view returns the cluster as the first node (in the order of Addrs) that
// answers CLUSTER NODES sees it.
func (c *Cluster) view(ctx context.Context) (clusterView, error) {
	if c.isClosed() {
		return nil, errors.New("cluster is closed")
	}
	var errs []error
	for _, srv := range c.nodes {
		view, err := c.viewFrom(ctx, srv.Addr())
		if err == nil {
			return view, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no node answers: %w", errors.Join(errs...))
}

// viewFrom returns CLUSTER NODES as the node at addr answers it.
func (c *Cluster) viewFrom(ctx context.Context, addr string) (clusterView, error) {
	text, err := c.clients[addr].ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("cluster nodes on %s: %w", addr, err)
	}
	view, err := parseClusterNodes(text)
	if err != nil {
		return nil, fmt.Errorf("cluster nodes on %s: %w", addr, err)
	}
	return view, nil
}

// addrOf returns the address of n as Addrs spells it.
func (c *Cluster) addrOf(n viewNode) string {
	if addr, ok := c.addrByID[n.id]; ok {
		return addr
	}
	return n.addr
}

// clusterView is one node's answer to CLUSTER NODES.
type clusterView []viewNode

// viewNode is one line of CLUSTER NODES.
type viewNode struct {
	id       string
	addr     string   // ip:port, without the cluster bus port or hostname
	flags    []string // myself, master, slave, fail?, fail, handshake, noaddr, ...
	masterID string   // the master's ID for a replica, else ""
	link     string   // connected or disconnected
	slots    [][2]int // ranges of slots served, first and last inclusive
}

func (n viewNode) has(flag string) bool { return slices.Contains(n.flags, flag) }

// serves reports whether slot is in one of n's ranges.
func (n viewNode) serves(slot int) bool {
	return slices.ContainsFunc(n.slots, func(r [2]int) bool { return r[0] <= slot && slot <= r[1] })
}

// firstSlot returns the lowest slot n serves, or clusterSlots if none.
func (n viewNode) firstSlot() int {
	first := clusterSlots
	for _, r := range n.slots {
		first = min(first, r[0])
	}
	return first
}

func (v clusterView) byID(id string) (viewNode, bool) {
	for _, n := range v {
		if n.id == id {
			return n, true
		}
	}
	return viewNode{}, false
}

func (v clusterView) byAddr(c *Cluster, addr string) (viewNode, bool) {
	for _, n := range v {
		if c.addrOf(n) == addr {
			return n, true
		}
	}
	return viewNode{}, false
}

func (v clusterView) replicasOf(masterID string) []viewNode {
	var replicas []viewNode
	for _, n := range v {
		if n.masterID == masterID {
			replicas = append(replicas, n)
		}
	}
	return replicas
}

// role says what n is, in words that every node of a settled cluster must
// agree on: "master of slots 0-5460", "replica of 127.0.0.1:PORT", or
// "unknown" for the zero viewNode.
func (c *Cluster) role(n viewNode) string {
	switch {
	case n.id == "":
		return "unknown"
	case n.masterID != "":
		return "replica of " + c.addrOf(viewNode{id: n.masterID, addr: n.masterID})
	case !n.has("master"):
		return "neither master nor replica"
	}
	ranges := make([]string, len(n.slots))
	for i, r := range n.slots {
		ranges[i] = strconv.Itoa(r[0])
		if r[1] != r[0] {
			ranges[i] += "-" + strconv.Itoa(r[1])
		}
	}
	if len(ranges) == 0 {
		return "master of no slots"
	}
	return "master of slots " + strings.Join(ranges, ",")
}

// parseClusterNodes reads CLUSTER NODES: per line "<id> <ip:port@cport[,hostname]>
// <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state>
// <slot> <slot> ...", where a slot is "N", "N-M", or an "[N->-id]" or
// "[N-<-id]" migration marker, which is skipped.
func parseClusterNodes(text string) (clusterView, error) {
	var view clusterView
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 8 {
			return nil, fmt.Errorf("short line %q", line)
		}
		addr, _, _ := strings.Cut(fields[1], "@")
		addr, _, _ = strings.Cut(addr, ",")
		n := viewNode{id: fields[0], addr: addr, flags: strings.Split(fields[2], ","), link: fields[7]}
		if fields[3] != "-" {
			n.masterID = fields[3]
		}
		for _, slot := range fields[8:] {
			if strings.HasPrefix(slot, "[") {
				continue
			}
			lo, hi, isRange := strings.Cut(slot, "-")
			if !isRange {
				hi = lo
			}
			first, err1 := strconv.Atoi(lo)
			last, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("bad slot %q in line %q", slot, line)
			}
			n.slots = append(n.slots, [2]int{first, last})
		}
		view = append(view, n)
	}
	return view, nil
}

package clients

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"

	"github.com/rlbench/rlbench/strategies"
)

// masters returns the servers that take the workers' commands, by
// address: on a cluster the nodes CLUSTER SLOTS names first for a range, as
// go-redis' ForEachMaster and the pipelining clients' own routing find
// them (replicas take no command of rlbench's), else the client itself
// under "". CLUSTER SLOTS is asked of each node in turn until one answers
// (the client's own Do would pick any node, a replica that is gone
// included). When no master's address is one the client knows a node by,
// it returns every node.
func (a *pipelinedAdapter[C, P, R, M, D]) masters(ctx context.Context) (map[string]C, error) {
	if !a.cluster {
		return map[string]C{"": a.c}, nil
	}
	nodes := a.c.Nodes()
	var ranges []M
	err := errors.New("no node")
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		node := nodes[addr]
		if ranges, err = node.Do(ctx, a.d.command(node, strategies.Cmd{Name: "CLUSTER", Head: []string{"SLOTS"}})).ToArray(); err == nil {
			break
		}
		err = a.err(err)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster slots: %w", err)
	}
	masters := make(map[string]C)
	for _, r := range ranges {
		fields, _ := a.d.toArray(r)
		if len(fields) < 3 {
			continue
		}
		master, _ := a.d.toArray(fields[2])
		if len(master) < 2 {
			continue
		}
		host, _ := a.d.toString(master[0])
		port, _ := a.d.asInt64(master[1])
		addr := net.JoinHostPort(host, strconv.FormatInt(port, 10))
		if node, ok := nodes[addr]; ok {
			masters[addr] = node
		}
	}
	if len(masters) == 0 {
		return nodes, nil
	}
	return masters, nil
}

// loadEverywhere sends SCRIPT LOAD src to every master (masters), one after
// another as redis-py's RedisCluster sends it to its primaries, after the
// Tap is shown one round trip, as on one server: the client would send it
// to one node, any one. A reply that is not one (a network error) stops
// it. The reply is the first error reply, else the last master's (each
// answers the script's SHA-1). err is clusterScriptLoad's, returned as it
// is.
func (a *pipelinedAdapter[C, P, R, M, D]) loadEverywhere(ctx context.Context, cmds []strategies.Cmd, src string, err error) ([]strategies.Reply, error) {
	if err != nil {
		return nil, err
	}
	if err := tapRueidis(ctx, strategies.PipelineName(cmds, false)); err != nil {
		return nil, err
	}
	nodes, err := a.masters(ctx)
	if err != nil {
		return nil, fmt.Errorf("script load: %w", err)
	}
	var out strategies.Reply
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		node := nodes[addr]
		if out, err = a.reply(node.Do(ctx, a.d.command(node, strategies.Cmd{Name: "SCRIPT", Head: []string{"LOAD", src}}))); err != nil {
			return nil, fmt.Errorf("script load on %s: %w", addr, err)
		}
		if out.Err != nil {
			break
		}
	}
	return []strategies.Reply{out}, nil
}

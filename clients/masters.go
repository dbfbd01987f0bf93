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

// slotsMessage is a reply element of rueidis (*rueidis.RedisMessage) or
// valkey-go (*valkey.ValkeyMessage), of which the two adapters read CLUSTER
// SLOTS.
type slotsMessage[M any] interface {
	*M
	ToArray() ([]M, error)
	ToString() (string, error)
	AsInt64() (int64, error)
}

// clusterMasters returns the nodes (by address) that take the workers'
// commands on a cluster: those CLUSTER SLOTS names first for a range, as
// go-redis' ForEachMaster and the pipelining clients' own routing find
// them (replicas take no command of rlbench's). slots sends CLUSTER SLOTS
// to a node; it is asked of each node in turn until one answers (the
// client's own Do would pick any node, a replica that is gone included).
// When no master's address is one the client knows a node by, it returns
// every node. The rueidis and valkey-go adapters' masters share it.
func clusterMasters[N any, M any, PM slotsMessage[M]](nodes map[string]N, slots func(N) ([]M, error)) (map[string]N, error) {
	var ranges []M
	err := errors.New("no node")
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		if ranges, err = slots(nodes[addr]); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cluster slots: %w", err)
	}
	masters := make(map[string]N)
	for i := range ranges {
		fields, _ := PM(&ranges[i]).ToArray()
		if len(fields) < 3 {
			continue
		}
		master, _ := PM(&fields[2]).ToArray()
		if len(master) < 2 {
			continue
		}
		host, _ := PM(&master[0]).ToString()
		port, _ := PM(&master[1]).AsInt64()
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

// loadOnMasters sends SCRIPT LOAD to every master (masters, by address),
// one after another as redis-py's RedisCluster sends it to its primaries,
// after the Tap is shown one round trip, as on one server: a pipelining
// client would send it to one node, any one. load sends it to one node and
// returns its reply, or the error that is not a reply (a network error,
// which stops it). The reply is the first error reply, else the last
// master's (each answers the script's SHA-1). err is clusterScriptLoad's,
// returned as it is. The rueidis and valkey-go adapters share it.
func loadOnMasters[N any](ctx context.Context, cmds []strategies.Cmd, err error, masters func(context.Context) (map[string]N, error), load func(N) (strategies.Reply, error)) ([]strategies.Reply, error) {
	if err != nil {
		return nil, err
	}
	if err := tapRueidis(ctx, strategies.PipelineName(cmds, false)); err != nil {
		return nil, err
	}
	nodes, err := masters(ctx)
	if err != nil {
		return nil, fmt.Errorf("script load: %w", err)
	}
	var out strategies.Reply
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		if out, err = load(nodes[addr]); err != nil {
			return nil, fmt.Errorf("script load on %s: %w", addr, err)
		}
		if out.Err != nil {
			break
		}
	}
	return []strategies.Reply{out}, nil
}

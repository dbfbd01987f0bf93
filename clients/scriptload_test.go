package clients_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/strategies"
	// python-limits, the model that sends SCRIPT LOAD.
	_ "github.com/rlbench/rlbench/strategies/deployed"
)

// TestScriptLoadReachesEveryMaster checks, on each client that reaches a
// cluster, the rule of the adapters' Pipeline for a SCRIPT LOAD, which
// names no key: after SCRIPT FLUSH, python-limits' first decision (EVALSHA,
// NOSCRIPT, SCRIPT LOAD, EVALSHA, as redis-py's Script sends them)
// succeeds, and the Tap sees the round trips it sees on one server; then
// every master holds the script, as redis-py's RedisCluster leaves them:
// a decision on each of 30 more keys, spread over the masters by their
// slots, is one EVALSHA.
func TestScriptLoadReachesEveryMaster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	rdb := redistest.ClusterClient(t, cl)
	srv := redistest.Start(t)
	single := redistest.Client(t, srv)
	first, _ := tappedDecisions(t, "go-redis", clients.Options{Addr: srv.Addr()}, single.ScriptFlush)
	if !slices.Equal(first, []string{"EVALSHA", "SCRIPT", "EVALSHA"}) {
		t.Fatalf("on one server the Tap saw %q; want EVALSHA, SCRIPT, EVALSHA", first)
	}
	for _, name := range clients.Names {
		if !slices.Contains(clients.Topologies[name], clients.TopologyCluster) {
			continue
		}
		got, more := tappedDecisions(t, name, clients.Options{Cluster: cl.Addrs()}, rdb.ScriptFlush)
		if !slices.Equal(got, first) {
			t.Errorf("%s on a cluster: the Tap saw %q; want %q, as on one server", name, got, first)
		}
		if slices.ContainsFunc(more, func(rt string) bool { return rt != "EVALSHA" }) {
			t.Errorf("%s on a cluster: after the load, 30 decisions on other keys sent %q; want EVALSHA only (the script on every master)", name, more)
		}
		refusesLoadAmongOthers(t, name, clients.Options{Cluster: cl.Addrs()})
	}
}

// refusesLoadAmongOthers checks that the client name of o refuses a
// pipeline of a SCRIPT LOAD and another command (ErrLoadAmongOthers): the
// load goes to every master, the other to its key's.
func refusesLoadAmongOthers(t *testing.T, name string, o clients.Options) {
	t.Helper()
	c, err := clients.New(name, o)
	if err != nil {
		t.Fatalf("New(%q) error: %v", name, err)
	}
	defer c.Close()
	cmds := []strategies.Cmd{
		{Name: "SCRIPT", Head: []string{"LOAD", "return 1"}},
		{Name: "INCR", Keys: []string{redistest.Prefix(t) + name + ":mixed"}},
	}
	if _, err := c.Pipeline(t.Context(), cmds); !errors.Is(err, clients.ErrLoadAmongOthers) {
		t.Errorf("%s on a cluster: Pipeline(SCRIPT LOAD, INCR) error = %v; want ErrLoadAmongOthers", name, err)
	}
}

// tappedDecisions runs python-limits on the client name of o after flush
// (SCRIPT FLUSH): a decision on a fresh key, then one on each of 30
// others, and returns the round trips the Tap saw of the first, and of
// the others together. A decision that fails fails the test.
func tappedDecisions(t *testing.T, name string, o clients.Options, flush func(context.Context) *redis.StatusCmd) (first, more []string) {
	t.Helper()
	if err := flush(t.Context()).Err(); err != nil {
		t.Fatalf("script flush: %v", err)
	}
	c, err := clients.New(name, o)
	if err != nil {
		t.Fatalf("New(%q) error: %v", name, err)
	}
	defer c.Close()
	s, err := strategies.New("python-limits", strategies.Config{Limit: 100, Window: 60})
	if err != nil {
		t.Fatal(err)
	}
	var sent []string
	ctx := strategies.WithTap(t.Context(), &strategies.Tap{Sent: func(rt string) { sent = append(sent, rt) }})
	for i := range 31 {
		if i == 1 {
			first, sent = sent, nil
		}
		if _, err := s.Decide(ctx, c, fmt.Sprintf("%s%s:%d", redistest.Prefix(t), name, i)); err != nil {
			t.Fatalf("%s: decision %d: %v", name, i+1, err)
		}
	}
	return first, sent
}

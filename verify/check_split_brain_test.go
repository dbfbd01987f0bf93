package verify

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/netproxy"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/serverinfo"
	"github.com/rlbench/rlbench/strategies"
)

// TestCheckSplitBrain runs the split-brain check on a private Sentinel
// set-up with relays, on each client that reaches Sentinel: incr-expire's fresh key, cut off
// after its INCR reached the replica, has no TTL on the new master
// (leaks); lua, atomic, loses the increments the old master took (FAIL).
// naive's rejections do not increment: the increments the client was told
// of are its allowed decisions, at most the limit on each master (twice
// the limit), not every decision during the split. Each outcome is the documented one.
func TestCheckSplitBrain(t *testing.T) {
	t.Parallel()
	s, err := redisserver.StartSentinel(t.Context(), redisserver.SentinelOptions{Replicas: 1, Binary: os.Getenv(redistest.BinaryEnv),
		Relay: func(addr string) (redisserver.Relay, error) { return netproxy.Start(addr) }})
	if err != nil {
		t.Fatalf("StartSentinel error: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	master, err := s.MasterAddr(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	observer := connection.Admin{}.PlainClient(master)
	t.Cleanup(func() { observer.Close() })
	info, err := serverinfo.Read(t.Context(), observer)
	if err != nil {
		t.Fatal(err)
	}
	server := serverOf(master, info, false)
	server.Sentinel = true
	def := allChecks[slices.IndexFunc(allChecks, func(c checkDef) bool { return c.Name == CheckSplitBrain })]
	cfg := Config{Prefix: redistest.Prefix(t)}.withDefaults()
	for _, tc := range []struct {
		strategy, client string
		want             Outcome
	}{
		{"incr-expire", "go-redis", Leaks},
		{"lua", "rueidis", Fail},
		// valkey-go dials the nodes directly too (Sentinel.Direct): the
		// cut leaves its writes to the old master going.
		{"lua", "valkey-go", Fail},
		{"naive", "go-redis", Fail},
	} {
		strategy, _ := strategies.Lookup(tc.strategy)
		r := newRow(cfg, strategy, tc.client, server, nil, observer)
		r.sentinel = s
		r.endpoint = clients.Options{Sentinel: connection.Sentinel{Master: s.MasterName(), Addrs: s.SentinelAddrs(), Direct: s.Direct()}}
		cell := r.runCheck(t.Context(), def, nil)
		t.Logf("%s/%s: %s: %s", tc.strategy, tc.client, cell.Outcome, cell.Note)
		if cell.Outcome != tc.want {
			t.Errorf("split-brain check of %s/%s = %s (%s); want %s", tc.strategy, tc.client, cell.Outcome, cell.Note, tc.want)
		}
		if m := toldOf.FindStringSubmatch(cell.Note); tc.strategy == "naive" && (m == nil || must(strconv.ParseInt(m[1], 10, 64)) > 2*cfg.Limit) {
			t.Errorf("split-brain check of %s/%s: %q; want at most twice the limit (%d) increments told of: its rejections do not increment", tc.strategy, tc.client, cell.Note, 2*cfg.Limit)
		}
		if !slices.Contains(Expected(CheckSplitBrain, r.properties, server), cell.Outcome) {
			t.Errorf("split-brain check of %s/%s = %s; want one of the documented %v", tc.strategy, tc.client, cell.Outcome, Expected(CheckSplitBrain, r.properties, server))
		}
	}
	// Without a Sentinel set-up the check does not apply.
	if got := Expected(CheckSplitBrain, PropertiesOf(must(strategies.Lookup("lua"))), Server{RedisVersion: "7.0.15", Managed: true}); !slices.Equal(got, []Outcome{NotApplicable}) {
		t.Errorf("Expected(split-brain, lua, a private server) = %v; want [n/a]", got)
	}
}

// toldOf finds the increments told of in the split-brain check's note.
var toldOf = regexp.MustCompile(`told of (\d+) increments`)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

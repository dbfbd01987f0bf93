package verify

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/topology"
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
	cfg := Config{Prefix: redistest.Prefix(t), Target: topology.Spec{ManagedSentinel: "1", RedisServer: os.Getenv(redistest.BinaryEnv)}}.withDefaults()
	tg, err := topology.Open(t.Context(), cfg.spec()) // with relays, as Run opens it
	if err != nil {
		t.Fatalf("topology.Open error: %v", err)
	}
	t.Cleanup(tg.Close)
	observer, err := tg.NewAdmin(connection.Admin{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { observer.Close() })
	server := serverOf(tg)
	if !server.Sentinel {
		t.Fatalf("serverOf(a private Sentinel set-up) = %+v; want Sentinel", server)
	}
	def := allChecks[slices.IndexFunc(allChecks, func(c checkDef) bool { return c.Name == CheckSplitBrain })]
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
		r := newRow(cfg, strategy, tc.client, server, tg, observer)
		cell := r.runCheck(t.Context(), def, nil)
		t.Logf("%s/%s: %s: %s", tc.strategy, tc.client, cell.Outcome, cell.Note)
		if cell.Outcome != tc.want {
			t.Errorf("split-brain check of %s/%s = %s (%s); want %s", tc.strategy, tc.client, cell.Outcome, cell.Note, tc.want)
		}
		if m := toldOf.FindStringSubmatch(cell.Note); tc.strategy == "naive" && (m == nil || must(strconv.ParseInt(m[1], 10, 64)) > 2*cfg.Limit) {
			t.Errorf("split-brain check of %s/%s: %q; want at most twice the limit (%d) increments told of: its rejections do not increment", tc.strategy, tc.client, cell.Note, 2*cfg.Limit)
		}
		if !slices.Contains(Expected(CheckSplitBrain, r.info, server), cell.Outcome) {
			t.Errorf("split-brain check of %s/%s = %s; want one of the documented %v", tc.strategy, tc.client, cell.Outcome, Expected(CheckSplitBrain, r.info, server))
		}
	}
	// Without a Sentinel set-up the check does not apply.
	if got := Expected(CheckSplitBrain, must(strategies.Lookup("lua")), Server{RedisVersion: "7.0.15", Managed: true}); !slices.Equal(got, []Outcome{NotApplicable}) {
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

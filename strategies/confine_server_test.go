package strategies_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/strategies"
)

// TestScriptCommandsAreSafe asks a Redis 7.4 server (which knows the hash
// fields' TTL commands) for each command a user strategy may call: it is
// known, in none of the categories @dangerous, @admin and @pubsub, takes
// keys, except TIME, and the probe acl.Permitted sends has its arity.
func TestScriptCommandsAreSafe(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t, redistest.Start74(t))
	ctx := context.Background()
	for _, name := range strategies.ScriptCommands() {
		reply, err := rdb.Do(ctx, "command", "info", name).Slice()
		if err != nil || len(reply) != 1 {
			t.Fatalf("COMMAND INFO %s = %v, %v", name, reply, err)
		}
		info, ok := reply[0].([]any)
		if !ok || len(info) < 7 {
			t.Errorf("COMMAND INFO %s = %v; want the command known", name, reply[0])
			continue
		}
		arity, firstKey := info[1].(int64), info[3].(int64)
		categories := fmt.Sprint(info[6])
		for _, c := range []string{"@dangerous", "@admin", "@pubsub"} {
			if strings.Contains(categories, c) {
				t.Errorf("COMMAND INFO %s: categories %s; want none of @dangerous, @admin, @pubsub", name, categories)
			}
		}
		if (firstKey == 0) != (name == "time") {
			t.Errorf("COMMAND INFO %s: first key %d; want a key, except for TIME", name, firstKey)
		}
		probe, _ := strategies.ScriptProbe(name)
		if n := int64(len(probe) + 1); n != arity && (arity > 0 || n < -arity) {
			t.Errorf("ScriptProbe(%s) = %d arguments; want them to fit arity %d", name, len(probe), arity)
		}
		if slices.Contains(probe, "K") != (name != "time") {
			t.Errorf("ScriptProbe(%s) = %v; want a key K, except for TIME", name, probe)
		}
	}
}

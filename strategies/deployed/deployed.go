// Package deployed registers models of rate limiters that production runs
// and a Go tool cannot import: Envoy's rate-limit service, rack-attack,
// Rails' cache store, Python's limits, Kong, django-ratelimit, Laravel,
// rate-limit-redis, Spring Cloud Gateway, bucket4j, mennanov/limiters. Each model
// sends, per request, the command sequence read from the named project's
// source at the named version and file: the same commands, the same round
// trips (a pipeline is one write; separate round trips stay separate, so
// --crash-rate cuts between them as a process dies), the same key shape
// (stamped with the window where the source stamps) and the same TTL
// arithmetic. A model is not the project's code: it leaves out what does
// not reach Redis (local caches, configuration), and its Info says so.
// Import it for its side effect:
//
//	import _ "github.com/rlbench/rlbench/strategies/deployed"
package deployed

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/rlbench/rlbench/strategies"
)

// now is the client clock the models read, as their sources do.
var now = time.Now

// mustRegister registers i from init.
func mustRegister(i strategies.Info) {
	if err := strategies.Register(i); err != nil {
		panic("deployed: " + err.Error())
	}
}

// cmd builds a command on one key.
func cmd(name, key string, args ...string) strategies.Cmd {
	return strategies.Cmd{Name: name, Keys: []string{key}, Args: args}
}

// itoa formats an int64.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// firstReply checks a round trip's replies and returns the first; errors
// name the model and the command.
func firstReply(model string, cmds []strategies.Cmd, replies []strategies.Reply, err error) (strategies.Reply, error) {
	if err != nil {
		return strategies.Reply{}, fmt.Errorf("%s: %s: %w", model, strategies.PipelineName(cmds, false), err)
	}
	for i, r := range replies {
		if r.Err != nil {
			return strategies.Reply{}, fmt.Errorf("%s: %s: %w", model, cmds[i].Name, r.Err)
		}
	}
	return replies[0], nil
}

// intReply returns r's integer, or an error naming the model and command.
func intReply(model, command string, r strategies.Reply) (int64, error) {
	if !r.IsInt {
		return 0, fmt.Errorf("%s: %s: %w, got %+v", model, command, strategies.ErrBadReply, r)
	}
	return r.Int, nil
}

// send runs one round trip of one or more commands as a pipeline and
// returns its first reply.
func send(ctx context.Context, c strategies.Client, model string, cmds ...strategies.Cmd) (strategies.Reply, error) {
	replies, err := c.Pipeline(ctx, cmds)
	return firstReply(model, cmds, replies, err)
}

// countDecision is the decision of a counter at n.
func countDecision(n, limit int64) strategies.Decision {
	return strategies.Decision{Allowed: n <= limit, Count: n}
}

package deployed

import (
	"context"
	"fmt"

	"github.com/rlbench/rlbench/strategies"
)

// evalsha runs s on key with args as redis-py's Script does (limits
// registers its scripts with register_script): EVALSHA, and on NOSCRIPT,
// SCRIPT LOAD then EVALSHA again, each its own round trip. It returns the
// script's reply. On a cluster the client adapters send the SCRIPT LOAD,
// which names no key, to every master, as redis-py's RedisCluster sends it
// to every primary, so that the EVALSHA after it finds the script.
func evalsha(ctx context.Context, c strategies.Client, model string, s *strategies.Script, key string, args ...string) (strategies.Reply, error) {
	call := strategies.Cmd{Name: "EVALSHA", Head: []string{s.SHA1, "1"}, Keys: []string{key}, Args: args}
	replies, err := c.Pipeline(ctx, []strategies.Cmd{call})
	if err != nil {
		return strategies.Reply{}, fmt.Errorf("%s: evalsha: %w", model, err)
	}
	if re, ok := replies[0].Err.(strategies.ReplyError); ok && re.Prefix() == "NOSCRIPT" {
		load := strategies.Cmd{Name: "SCRIPT", Head: []string{"LOAD", s.Src}}
		if _, err := send(ctx, c, model, load); err != nil {
			return strategies.Reply{}, err
		}
		replies, err = c.Pipeline(ctx, []strategies.Cmd{call})
		if err != nil {
			return strategies.Reply{}, fmt.Errorf("%s: evalsha: %w", model, err)
		}
	}
	return firstReply(model, []strategies.Cmd{call}, replies, nil)
}

// eval runs src on key with args with EVAL, as lua-resty-redis's eval
// does (no script cache), and returns the script's reply.
func eval(ctx context.Context, c strategies.Client, model, src, key string, args ...string) (strategies.Reply, error) {
	return send(ctx, c, model, strategies.Cmd{Name: "EVAL", Head: []string{src, "1"}, Keys: []string{key}, Args: args})
}

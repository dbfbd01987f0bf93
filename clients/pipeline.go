package clients

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/strategies"
)

// ErrLoadAmongOthers is returned by Pipeline on a cluster for a pipeline
// that has a SCRIPT LOAD among other commands: the load goes to every
// master (clusterScriptLoad), the others to their keys' masters.
var ErrLoadAmongOthers = errors.New("SCRIPT LOAD goes to every master of a cluster: send it in a pipeline of its own")

// clusterScriptLoad returns the script of cmds when they are one SCRIPT
// LOAD, which names no key: on a cluster every adapter sends it to every
// master, as redis-py's RedisCluster does (SCRIPT LOAD, EXISTS and FLUSH
// are among its PRIMARIES commands) and go-redis' ClusterClient.ScriptLoad
// does (ForEachShard), so that the EVALSHA after it finds the script on its
// key's master; a cluster client would send it to one node, any one. ok is
// false for any other pipeline; err is ErrLoadAmongOthers. It allocates
// nothing, and the adapters call it on a cluster only.
func clusterScriptLoad(cmds []strategies.Cmd) (src string, ok bool, err error) {
	for i, c := range cmds {
		if len(c.Keys) > 0 || !strings.EqualFold(c.Name, "SCRIPT") || !strings.EqualFold(wordAfterName(c, 0), "LOAD") {
			continue
		}
		if len(cmds) > 1 {
			return "", false, fmt.Errorf("pipeline: command %d of %d: %w", i+1, len(cmds), ErrLoadAmongOthers)
		}
		if len(c.Head)+len(c.Args) != 2 {
			return "", false, nil // the server answers the wrong arity
		}
		return wordAfterName(c, 1), true, nil
	}
	return "", false, nil
}

// wordAfterName is the i-th word of c after its name, of Head then Args
// (c names no key), or "".
func wordAfterName(c strategies.Cmd, i int) string {
	switch {
	case i < len(c.Head):
		return c.Head[i]
	case i-len(c.Head) < len(c.Args):
		return c.Args[i-len(c.Head)]
	}
	return ""
}

// Pipeline sends cmds with go-redis' Pipelined: one write, not a
// transaction. The hook shows it to the Tap as one round trip. On a
// cluster a SCRIPT LOAD goes to every node (clusterScriptLoad).
func (c *goRedis) Pipeline(ctx context.Context, cmds []strategies.Cmd) ([]strategies.Reply, error) {
	if c.cluster != nil {
		if src, ok, err := clusterScriptLoad(cmds); err != nil || ok {
			return c.loadEverywhere(ctx, src, err)
		}
	}
	sent := make([]*redis.Cmd, len(cmds))
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, cmd := range cmds {
			sent[i] = p.Do(ctx, anyWords(cmd)...)
		}
		return nil
	})
	if err != nil && !isServerReply(err) {
		return nil, goRedisErr(err)
	}
	replies := goRedisReplies(sent)
	c.fallbacks.Add(noscripts(cmds, replies))
	return replies, nil
}

// loadEverywhere sends SCRIPT LOAD src with go-redis'
// ClusterClient.ScriptLoad, which sends it to every node of the cluster
// (ForEachShard: the masters, and any replicas), and which the hook shows
// to the Tap as one round trip, as Pipelined shows it on one server. err
// is clusterScriptLoad's, returned as it is.
func (c *goRedis) loadEverywhere(ctx context.Context, src string, err error) ([]strategies.Reply, error) {
	if err != nil {
		return nil, err
	}
	sha, err := c.cluster.ScriptLoad(ctx, src).Result()
	switch {
	case err != nil && !isServerReply(err):
		return nil, fmt.Errorf("script load: %w", goRedisErr(err))
	case err != nil:
		return []strategies.Reply{{Err: goRedisErr(err)}}, nil
	}
	return []strategies.Reply{{Str: sha}}, nil
}

// noscripts counts the EVALSHA commands of a pipeline answered NOSCRIPT:
// the strategy sends its script again (Conn.Fallbacks).
func noscripts(cmds []strategies.Cmd, replies []strategies.Reply) int64 {
	n := int64(0)
	for i, r := range replies {
		if re, ok := r.Err.(strategies.ReplyError); ok && re.Prefix() == "NOSCRIPT" && strings.EqualFold(cmds[i].Name, "EVALSHA") {
			n++
		}
	}
	return n
}

// Transaction sends MULTI, cmds and EXEC with go-redis' TxPipelined.
func (c *goRedis) Transaction(ctx context.Context, cmds []strategies.Cmd) ([]strategies.Reply, error) {
	sent := make([]*redis.Cmd, len(cmds))
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, cmd := range cmds {
			sent[i] = p.Do(ctx, anyWords(cmd)...)
		}
		return nil
	})
	switch {
	case err == redis.TxFailedErr:
		return nil, strategies.ErrTransactionAborted
	case err != nil && strings.HasPrefix(err.Error(), "EXECABORT"):
		return nil, fmt.Errorf("%w: %w", strategies.ErrTransactionAborted, goRedisErr(err))
	case err != nil && !isServerReply(err):
		return nil, goRedisErr(err)
	}
	return goRedisReplies(sent), nil
}

// isServerReply reports whether a pipeline's error is a command's reply
// (an error reply, or nil), which its Reply holds, rather than the round
// trip's.
func isServerReply(err error) bool {
	if err == redis.Nil {
		return true
	}
	_, ok := errors.AsType[redis.Error](err)
	return ok
}

func anyWords(cmd strategies.Cmd) []any {
	words := cmd.Words()
	out := make([]any, len(words))
	for i, w := range words {
		out[i] = w
	}
	return out
}

func goRedisReplies(sent []*redis.Cmd) []strategies.Reply {
	out := make([]strategies.Reply, len(sent))
	for i, cmd := range sent {
		switch err := cmd.Err(); {
		case err == redis.Nil:
			out[i] = strategies.Reply{Nil: true}
		case err != nil:
			out[i] = strategies.Reply{Err: goRedisErr(err)}
		default:
			out[i] = goRedisValue(cmd.Val())
		}
	}
	return out
}

// goRedisValue converts a value of go-redis' generic Cmd (RESP3).
func goRedisValue(v any) strategies.Reply {
	switch v := v.(type) {
	case nil:
		return strategies.Reply{Nil: true}
	case int64:
		return strategies.Reply{Int: v, IsInt: true}
	case string:
		return strategies.Reply{Str: v}
	case bool:
		if v {
			return strategies.Reply{Int: 1, IsInt: true}
		}
		return strategies.Reply{Int: 0, IsInt: true}
	case float64:
		return strategies.Reply{Str: strconv.FormatFloat(v, 'f', -1, 64)}
	case []any:
		arr := make([]strategies.Reply, len(v))
		for i, e := range v {
			arr[i] = goRedisValue(e)
		}
		return strategies.Reply{Array: arr}
	case redis.Error:
		return strategies.Reply{Err: strategies.ReplyError(v.Error())}
	}
	return strategies.Reply{Str: fmt.Sprint(v)}
}

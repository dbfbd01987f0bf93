package strategies

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
)

// NewScript returns a Script for src with its SHA-1 computed.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{Src: src, SHA1: hex.EncodeToString(sum[:])}
}

// limitWindowPreamble starts the scripts that take ARGV[1] = limit and
// ARGV[2] = window in seconds and read TIME: it lets them write after TIME
// on servers before 7.0, and refuses a limit or window that is not a
// positive integer before the first write. It defines limit and seconds.
const limitWindowPreamble = `if not redis.REDIS_VERSION_NUM then
  -- Before Redis 7.0 a script that called TIME may write only under
  -- effects replication (the default from 5.0 on).
  redis.replicate_commands()
end
local limit = tonumber(ARGV[1])
local seconds = tonumber(ARGV[2])
if not limit or limit < 1 or limit ~= math.floor(limit) then
  return redis.error_reply('ERR limit must be a positive integer')
end
if not seconds or seconds < 1 or seconds ~= math.floor(seconds) then
  return redis.error_reply('ERR window must be a positive integer')
end
`

// Args is a script's or function's ARGV, built once when a strategy is
// built, in the forms both adapters take, so that no decision converts it.
type Args struct {
	strs []string
	anys []any
}

// NewArgs returns Args holding args.
func NewArgs(args ...string) Args {
	anys := make([]any, len(args))
	for i, a := range args {
		anys[i] = a
	}
	return Args{strs: args, anys: anys}
}

// Strings returns the arguments as strings. The caller must not modify it.
func (a Args) Strings() []string { return a.strs }

// Any returns the arguments as a []any. The caller must not modify it.
func (a Args) Any() []any { return a.anys }

// evalScript runs s for the strategy named name with EvalInts and checks
// that the reply has at least want elements; errors name the strategy.
func evalScript(ctx context.Context, c Client, name string, s *Script, keys []string, args Args, want int) ([]int64, error) {
	r, err := c.EvalInts(ctx, s, keys, args)
	if err != nil {
		return nil, fmt.Errorf("%s: evalsha: %w", name, err)
	}
	if len(r) < want {
		return nil, fmt.Errorf("%s: evalsha: reply has %d elements; want %d", name, len(r), want)
	}
	return r, nil
}

// countDecision is the decision of a fixed-window script whose reply starts
// with the counter's value after its increment.
func countDecision(r []int64, limit int64) Decision {
	return Decision{Allowed: r[0] <= limit, Count: r[0]}
}

// flagDecision is the decision of a script that replies {allowed (0 or 1),
// count}.
func flagDecision(r []int64) Decision {
	return Decision{Allowed: r[0] == 1, Count: r[1]}
}

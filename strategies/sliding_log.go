package strategies

import (
	"context"
	"strconv"
)

func init() {
	register(Info{
		Name: "sliding-log",
		Summary: "sliding-window log in a sorted set, in one script: at most limit admitted in any window-long span; " +
			"members unique per request (TIME in µs + a sequence in <key>:seq); " +
			"heals: n/a (no counter; each admission sets the TTL)",
		Commands:    "EVALSHA (EVAL on NOSCRIPT): TIME; ZREMRANGEBYSCORE; ZCARD; when under the limit INCR <key>:seq, ZADD, PEXPIRE x2",
		EVALSHA:     true,
		Keys:        "K, K:seq",
		Atomic:      true,
		Heals:       false,
		FixedWindow: false,
		MinRedis:    "3.2.0", // redis.replicate_commands, to write after TIME before 5.0
		New: func(c Config) Strategy {
			return &slidingLog{cfg: c, args: NewArgs(strconv.FormatInt(c.Limit, 10), strconv.FormatInt(c.Window, 10))}
		},
	})
}

// slidingLogScript keeps one sorted-set entry per admitted request, scored
// by its time in microseconds from Redis TIME. It drops the entries a
// window old or older, counts the rest, and admits the request when fewer
// than limit remain. The member is the time and a number from a sequence
// counter (KEYS[2]), so two requests in the same microsecond are two
// entries, never one (ZADD k now now would collapse them). Each admission
// sets both keys to expire one window later, when every entry in the log
// is stale; a rejection writes nothing, and the TTL of the last admission
// still covers the log.
//
// The reply is {allowed (1 or 0), count}: count is the number of requests
// in the last window with this one, so a request is allowed exactly when
// count <= limit.
var slidingLogScript = NewScript(`-- KEYS[1]: log (sorted set); KEYS[2]: member sequence; ARGV[1]: limit; ARGV[2]: window in seconds
` + limitWindowPreamble + `local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - seconds * 1000000)
local n = redis.call('ZCARD', KEYS[1])
if n >= limit then
  return {0, n + 1}
end
local seq = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[1], now, string.format('%d-%d', now, seq))
redis.call('PEXPIRE', KEYS[1], seconds * 1000)
redis.call('PEXPIRE', KEYS[2], seconds * 1000)
return {1, n + 1}
`)

// slidingLog is a sliding-window log: unlike a fixed window it never admits
// more than Limit in any span of one Window, at the cost of one sorted-set
// entry per admitted request.
//
// Its second key, key + ":seq", starts with the run's prefix, so that the
// audit and the clean-up see it, and shares key's {hash-tag} when key has
// one, as every key from workload.KeyNames does, so that both land in one
// Redis Cluster slot.
type slidingLog struct {
	cfg  Config
	args Args // ARGV, built once: the limit and the window in seconds
}

func (*slidingLog) Name() string { return "sliding-log" }

func (s *slidingLog) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	r, err := evalScript(ctx, c, "sliding-log", slidingLogScript, []string{key, SlidingLogSeqKey(key)}, s.args, 2)
	if err != nil {
		return Decision{}, err
	}
	return flagDecision(r), nil
}

// SlidingLogSeqKey returns the name of the sequence counter that the
// sliding-log strategy keeps beside the log at key: key + ":seq".
func SlidingLogSeqKey(key string) string { return key + ":seq" }

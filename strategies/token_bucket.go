package strategies

import (
	"context"
	"strconv"
)

func init() {
	register(Info{
		Name: "token-bucket",
		Summary: "token bucket in a hash, in one script: capacity limit, refilled at limit per window, time from Redis TIME; " +
			"PEXPIRE at the refill-to-full time in ms, at least 1 (never rounded to 0); " +
			"heals: n/a (no counter; every decision sets the TTL)",
		Commands:    "EVALSHA (EVAL on NOSCRIPT): TIME; HMGET; HSET; PEXPIRE",
		EVALSHA:     true,
		Atomic:      true,
		Heals:       false,
		FixedWindow: false,
		MinRedis:    "4.0.0", // HSET with several fields
		New: func(c Config) Strategy {
			return &tokenBucket{cfg: c, args: NewArgs(strconv.FormatInt(c.Limit, 10), strconv.FormatInt(c.Window, 10))}
		},
	})
}

// tokenBucketScript keeps the bucket in a hash: tokens (a fraction) and ts,
// the Redis TIME of the last decision in microseconds. It refills the
// tokens for the time since ts, up to the capacity, takes one if there is
// one, writes the state back and sets the key to expire when the bucket
// would be full again: a missing key is a full bucket, so nothing is lost.
// That time is in milliseconds, rounded up and at least 1: an expiry in
// whole seconds would round a sub-second refill to 0, and a non-positive
// expiry deletes the key.
//
// A hash at the key without numeric tokens and ts fields is not a bucket:
// the script refuses it with a WRONGTYPE error and leaves it as it is.
//
// The reply is {allowed (1 or 0), count}: count is the number of tokens
// taken with this request (rounded up), so a request is allowed exactly
// when count <= limit.
var tokenBucketScript = NewScript(`-- KEYS[1]: bucket (hash of tokens, ts); ARGV[1]: limit (capacity, and refill per window); ARGV[2]: window in seconds
` + limitWindowPreamble + `local period = seconds * 1000000
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, ts = tonumber(state[1]), tonumber(state[2])
if not tokens or not ts then
  if state[1] or state[2] or redis.call('EXISTS', KEYS[1]) == 1 then
    return redis.error_reply('WRONGTYPE token-bucket: the hash at the key is not a token bucket (no numeric tokens and ts fields)')
  end
  tokens, ts = limit, now
end
if now > ts then
  tokens = math.min(limit, tokens + (now - ts) * limit / period)
  ts = now
end
local count = math.ceil(limit - tokens) + 1
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
  count = math.min(count, limit)
else
  count = math.max(count, limit + 1)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', string.format('%d', ts))
local px = math.ceil((limit - tokens) * period / limit / 1000)
px = math.max(1, math.min(px, seconds * 1000))
redis.call('PEXPIRE', KEYS[1], px)
return {allowed, count}
`)

// tokenBucket is a token bucket of capacity Limit refilled at Limit per
// Window: a burst of Limit, then one request every Window/Limit.
type tokenBucket struct {
	cfg  Config
	args Args // ARGV, built once: the limit and the window in seconds
}

func (*tokenBucket) Name() string { return "token-bucket" }

func (s *tokenBucket) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	r, err := evalScript(ctx, c, "token-bucket", tokenBucketScript, []string{key}, s.args, 2)
	if err != nil {
		return Decision{}, err
	}
	return flagDecision(r), nil
}

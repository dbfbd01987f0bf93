package strategies

import (
	"context"
	"strconv"
)

func init() {
	register(Info{
		Name: "gcra",
		Summary: "GCRA in the manner of go-redis/redis_rate: stores a theoretical arrival time, not a count; " +
			"limit per window, burst limit, time from Redis TIME; PX until the bucket is empty; " +
			"heals: n/a (no counter; every write sets the TTL)",
		Commands:    "EVALSHA (EVAL on NOSCRIPT): TIME; GET; SET PX (when allowed)",
		EVALSHA:     true,
		Atomic:      true,
		Heals:       false,
		FixedWindow: false,
		MinRedis:    "3.2.0", // redis.replicate_commands, to write after TIME before 5.0
		New: func(c Config) Strategy {
			return &gcra{cfg: c, args: NewArgs(strconv.FormatInt(c.Limit, 10), strconv.FormatInt(c.Window, 10))}
		},
	})
}

// gcraScript is the generic cell rate algorithm. The key holds the
// theoretical arrival time (TAT): the time at which the bucket would be
// empty again, in microseconds since 2017-01-01, an epoch recent enough
// that a double resolves well under a microsecond (1/16 µs until 2034). Each allowed request pushes
// the TAT one emission interval (window/limit) further; a request is
// allowed when the new TAT is at most one window ahead of now, which admits
// a burst of limit and then limit per window. A rejected request writes
// nothing. The key expires when the bucket is empty again, rounded up to
// the millisecond and never beyond the window, so it never outlives its
// use and never gets a TTL of 0.
//
// The reply is {allowed (1 or 0), count}: count is the number of emission
// intervals the bucket would hold with this request, so a request is
// allowed exactly when count <= limit. A slack of 1 µs absorbs rounding in
// the sums of non-integer intervals.
var gcraScript = NewScript(`-- KEYS[1]: GCRA key; ARGV[1]: limit (burst and requests per window); ARGV[2]: window in seconds
` + limitWindowPreamble + `local period = seconds * 1000000
local interval = period / limit
local t = redis.call('TIME')
local now = (t[1] - 1483228800) * 1000000 + t[2]
local tat = redis.call('GET', KEYS[1])
if tat then
  tat = tonumber(tat)
  if not tat then
    return redis.error_reply('ERR gcra: the value at the key is not a GCRA timestamp')
  end
  if tat < now then
    tat = now
  end
else
  tat = now
end
local new_tat = tat + interval
local count = math.ceil((new_tat - now - 1) / interval)
if count < 1 then
  count = 1
end
if count > limit then
  return {0, count}
end
local px = math.ceil((new_tat - now) / 1000)
px = math.max(1, math.min(px, seconds * 1000))
redis.call('SET', KEYS[1], string.format('%.17g', new_tat), 'PX', px)
return {1, count}
`)

// gcra is a GCRA limiter: rate Limit per Window, burst Limit. It has no
// window boundary, so it never admits the 2 x Limit that a fixed window
// allows around one.
type gcra struct {
	cfg  Config
	args Args // ARGV, built once: the limit and the window in seconds
}

func (*gcra) Name() string { return "gcra" }

func (s *gcra) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	r, err := evalScript(ctx, c, "gcra", gcraScript, []string{key}, s.args, 2)
	if err != nil {
		return Decision{}, err
	}
	return flagDecision(r), nil
}

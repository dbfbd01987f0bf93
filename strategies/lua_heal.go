package strategies

import (
	"context"
	"strconv"
)

func init() {
	register(Info{
		Name:        "lua-heal",
		Summary:     "the seed script, healed: INCR, EXPIRE whenever TTL < 0, returns {n, TTL}; a counter that lost its TTL gets one back",
		Commands:    "EVALSHA (EVAL on NOSCRIPT): INCR; TTL; EXPIRE (when TTL < 0)",
		EVALSHA:     true,
		Atomic:      true,
		Heals:       true,
		FixedWindow: true,
		MinRedis:    "2.6.0",
		New: func(c Config) Strategy {
			return &luaHeal{cfg: c, args: NewArgs(strconv.FormatInt(c.Window, 10))}
		},
	})
}

// healBody is the healing fixed-window script, written against KEYS and
// ARGV so that the function strategy can run the very same text as a Redis
// Function. It validates the window before its first write and sets the
// expiry whenever the counter has none: on creation, and on a counter that
// lost its TTL (TTL -1). A running window is never extended. It returns the
// count and the TTL in seconds.
const healBody = `-- KEYS[1]: rate-limit key; ARGV[1]: window length in seconds
local seconds = tonumber(ARGV[1])
if not seconds or seconds < 1 or seconds ~= math.floor(seconds) then
  return redis.error_reply('ERR window must be a positive integer')
end
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('TTL', KEYS[1])
if ttl < 0 then
  redis.call('EXPIRE', KEYS[1], seconds)
  ttl = seconds
end
return {n, ttl}
`

// healScript runs healBody with EVALSHA.
var healScript = NewScript(healBody)

// luaHeal is the seed script with the one change that makes it heal: the
// expiry is set whenever the counter has none, not only when n == 1.
type luaHeal struct {
	cfg  Config
	args Args // ARGV, built once: the window in seconds
}

func (*luaHeal) Name() string { return "lua-heal" }

func (s *luaHeal) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	r, err := evalScript(ctx, c, "lua-heal", healScript, []string{key}, s.args, 1)
	if err != nil {
		return Decision{}, err
	}
	return countDecision(r, s.cfg.Limit), nil
}

package strategies

import (
	"context"
	"strconv"
)

func init() {
	register(Info{
		Name:        "lua",
		Summary:     "the second seed's script: INCR, EXPIRE when n == 1, returns {n, TTL}; a key already immortal stays so",
		Commands:    "EVALSHA (EVAL on NOSCRIPT): INCR; EXPIRE (when n == 1); TTL",
		EVALSHA:     true,
		Atomic:      true,
		Heals:       false,
		FixedWindow: true,
		MinRedis:    "2.6.0",
		New: func(c Config) Strategy {
			return &lua{cfg: c, args: NewArgs(strconv.FormatInt(c.Window, 10))}
		},
	})
}

// SeedScript is the second seed's script, verbatim in behaviour: it validates
// the window before its first write, sets the expiry only when INCR created
// the counter, and returns the count with the remaining TTL.
var SeedScript = NewScript(`-- KEYS[1]: rate-limit key; ARGV[1]: window length in seconds
local seconds = tonumber(ARGV[1])
if not seconds or seconds < 1 or seconds ~= math.floor(seconds) then
  return redis.error_reply('Window must be a positive integer')
end
local n = redis.call('INCR', KEYS[1])
if n == 1 then
  redis.call('EXPIRE', KEYS[1], seconds)
end
return {n, redis.call('TTL', KEYS[1])}
`)

// lua runs the seed script. A counter that is already immortal stays so:
// n is never 1 again.
type lua struct {
	cfg  Config
	args Args // ARGV, built once: the window in seconds
}

func (*lua) Name() string { return "lua" }

func (s *lua) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	r, err := evalScript(ctx, c, "lua", SeedScript, []string{key}, s.args, 1)
	if err != nil {
		return Decision{}, err
	}
	return countDecision(r, s.cfg.Limit), nil
}

package deployed

import (
	"context"

	"github.com/rlbench/rlbench/strategies"
)

func init() {
	mustRegister(strategies.Info{
		Name: "python-limits",
		Summary: "model of alisaifee/limits (Flask-Limiter, slowapi) FixedWindowRateLimiter on RedisStorage, " +
			"limits/resources/redis/lua_scripts/incr_expire.lua at commit d76f62d, run through redis-py's register_script: " +
			"EVALSHA of INCR, EXPIRE when the count is 1, the count; on NOSCRIPT, SCRIPT LOAD then EVALSHA. The script " +
			"is the model's own, with the same commands. On a cluster the SCRIPT LOAD, which names no key, goes to every " +
			"primary, as redis-py's RedisCluster sends it (the client adapters do so for any keyless SCRIPT LOAD). A key " +
			"that lost its TTL is never given one again",
		Commands:    "EVALSHA (SCRIPT LOAD, then EVALSHA, on NOSCRIPT): INCR; EXPIRE (when 1)",
		EVALSHA:     true,
		Atomic:      true,
		FixedWindow: true,
		MinRedis:    "2.6.0",
		ACLCommands: []string{"evalsha", "script|load", "incr", "expire"},
		New:         func(c strategies.Config) strategies.Strategy { return &pythonLimits{c} },
	})
}

// limitsIncrExpire has incr_expire.lua's commands: INCR KEYS[1]; EXPIRE
// KEYS[1] ARGV[1] when the count is 1; it returns the count.
var limitsIncrExpire = strategies.NewScript(`-- rlbench's model of limits' incr_expire.lua
local count = redis.call('INCR', KEYS[1])
if tonumber(count) == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
return count
`)

// pythonLimits sends what RedisStorage.incr sends for a fixed window:
// lua_incr_expire([key], [expiry]); hit() is allowed when the count is at
// most the limit.
type pythonLimits struct{ cfg strategies.Config }

func (*pythonLimits) Name() string { return "python-limits" }

func (s *pythonLimits) Decide(ctx context.Context, c strategies.Client, key string) (strategies.Decision, error) {
	r, err := evalsha(ctx, c, "python-limits", limitsIncrExpire, key, itoa(s.cfg.Window))
	if err != nil {
		return strategies.Decision{}, err
	}
	n, err := intReply("python-limits", "EVALSHA", r)
	if err != nil {
		return strategies.Decision{}, err
	}
	return countDecision(n, s.cfg.Limit), nil
}

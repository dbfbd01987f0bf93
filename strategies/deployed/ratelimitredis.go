package deployed

import (
	"context"
	"fmt"

	"github.com/rlbench/rlbench/strategies"
)

func init() {
	mustRegister(strategies.Info{
		Name: "rate-limit-redis",
		Summary: "model of express-rate-limit/rate-limit-redis (Node) RedisStore#increment, source/lib.ts " +
			"(retryableIncrement) and source/scripts.ts at commit 04b1eee, resetExpiryOnChange off: EVALSHA of INCR, " +
			"PTTL, PEXPIRE windowMs when the PTTL is negative, {hits, PTTL}; EVAL when EVALSHA fails (for any error in the " +
			"source; on NOSCRIPT in the model, as the adapters' EvalInts). The script is the " +
			"model's own, with the same commands. A key that lost its TTL gets one on its next request",
		Commands:    "EVALSHA (EVAL on NOSCRIPT): INCR; PTTL; PEXPIRE (when PTTL < 0)",
		EVALSHA:     true,
		Atomic:      true,
		Heals:       true,
		FixedWindow: true,
		MinRedis:    "2.6.0",
		ACLCommands: []string{"evalsha", "eval", "incr", "pttl", "pexpire"},
		New: func(c strategies.Config) strategies.Strategy {
			return &rateLimitRedis{c, strategies.NewArgs("0", itoa(c.Window*1000))}
		},
	})
}

// rateLimitRedisIncrement has the increment script's commands: INCR,
// PTTL, and PEXPIRE ARGV[2] when the PTTL is negative or ARGV[1] is "1";
// it returns {hits, time to expire}.
var rateLimitRedisIncrement = strategies.NewScript(`-- rlbench's model of rate-limit-redis's increment script
local hits = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 or ARGV[1] == '1' then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
  ttl = tonumber(ARGV[2])
end
return {hits, ttl}
`)

// rateLimitRedis sends what retryableIncrement sends: EVALSHA sha 1 key
// resetExpiryOnChange windowMs, and EVAL of the script when it fails,
// which the adapters' EvalInts does; express-rate-limit blocks when the
// hits are over the limit.
type rateLimitRedis struct {
	cfg  strategies.Config
	args strategies.Args
}

func (*rateLimitRedis) Name() string { return "rate-limit-redis" }

func (s *rateLimitRedis) Decide(ctx context.Context, c strategies.Client, key string) (strategies.Decision, error) {
	keys := [1]string{key}
	r, err := c.EvalInts(ctx, rateLimitRedisIncrement, keys[:], s.args)
	if err != nil {
		return strategies.Decision{}, fmt.Errorf("rate-limit-redis: evalsha: %w", err)
	}
	if len(r) != 2 {
		return strategies.Decision{}, fmt.Errorf("rate-limit-redis: evalsha: %w, got %v", strategies.ErrBadReply, r)
	}
	return countDecision(r[0], s.cfg.Limit), nil
}

package deployed

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/strategies"
)

func init() {
	mustRegister(strategies.Info{
		Name: "spring-gateway",
		Summary: "model of spring-cloud/spring-cloud-gateway's RedisRateLimiter, spring-cloud-gateway-server-webflux " +
			".../filter/ratelimit/RedisRateLimiter.java (getKeys, isAllowed) at commit 376e364 and " +
			"META-INF/scripts/request_rate_limiter.lua at commit eea8e83, run by Spring Data Redis' " +
			"DefaultReactiveScriptExecutor: EVALSHA, EVAL on NOSCRIPT, of a token bucket in two keys: GET tokens, GET " +
			"timestamp, SETEX both for floor(2 x capacity / rate) seconds, the time from TIME (seconds and microseconds); " +
			"replenishRate --limit/--window per second, burstCapacity --limit, requestedTokens 1, keys K.tokens and " +
			"K.timestamp (the source's request_rate_limiter.{route.id}. is K.). The script is the model's own, with the " +
			"same commands; the gateway's fail-open on a Redis error (allowed, -1 tokens left) is left out. Every call " +
			"sets both TTLs, twice the fill time: nothing to heal",
		Commands:    "EVALSHA (EVAL on NOSCRIPT): TIME; GET; GET; SETEX; SETEX",
		EVALSHA:     true,
		Atomic:      true,
		MinRedis:    "3.2.0", // redis.replicate_commands, to write after TIME before 5.0
		Keys:        "K.tokens, K.timestamp",
		TTLWindows:  2,
		KeysBeside:  true,
		ACLCommands: []string{"evalsha", "eval", "time", "get", "setex"},
		New: func(c strategies.Config) strategies.Strategy {
			rate := float64(c.Limit) / float64(c.Window)
			return &springGateway{c, strategies.NewArgs(javaDouble(rate), itoa(c.Limit), "", "1")}
		},
	})
}

// springRequestRateLimiter has request_rate_limiter.lua's commands and
// arithmetic: KEYS tokens and timestamp; ARGV replenishRate,
// burstCapacity, now ("" for Redis TIME) and requested; it returns
// {allowed, tokens left}, the tokens truncated to an integer by Redis.
var springRequestRateLimiter = strategies.NewScript(`-- rlbench's model of Spring Cloud Gateway's request_rate_limiter.lua
redis.replicate_commands()
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
if not now then
  local t = redis.call('TIME')
  now = t[1] + (t[2] / 1000000)
end
local requested = tonumber(ARGV[4])
local ttl = math.floor(capacity / rate * 2)
local last_tokens = tonumber(redis.call('GET', KEYS[1])) or capacity
local last_refreshed = tonumber(redis.call('GET', KEYS[2])) or 0
local filled = math.min(capacity, last_tokens + math.max(0, now - last_refreshed) * rate)
local allowed = filled >= requested
local new_tokens = filled
if allowed then
  new_tokens = filled - requested
end
if ttl > 0 then
  redis.call('SETEX', KEYS[1], ttl, new_tokens)
  redis.call('SETEX', KEYS[2], ttl, now)
end
return {allowed and 1 or 0, new_tokens}
`)

// javaDouble formats f as Java's Double.toString does between 1e-3 and
// 1e7 ("0.5", "5.0"), which isAllowed sends (replenishRate + ""); outside
// that range, the same number in Go's notation, which Lua reads alike.
func javaDouble(f float64) string {
	if f < 1e-3 || f >= 1e7 {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// springGateway sends what RedisRateLimiter.isAllowed sends:
// redisTemplate.execute(script, getKeys(id, routeId), [replenishRate,
// burstCapacity, "", requestedTokens]); allowed is the reply's first
// element equal to 1.
type springGateway struct {
	cfg  strategies.Config
	args strategies.Args
}

func (*springGateway) Name() string { return "spring-gateway" }

func (s *springGateway) Decide(ctx context.Context, c strategies.Client, key string) (strategies.Decision, error) {
	keys := [2]string{key + ".tokens", key + ".timestamp"}
	r, err := c.EvalInts(ctx, springRequestRateLimiter, keys[:], s.args)
	if err != nil {
		return strategies.Decision{}, fmt.Errorf("spring-gateway: evalsha: %w", err)
	}
	if len(r) != 2 {
		return strategies.Decision{}, fmt.Errorf("spring-gateway: evalsha: %w, got %v", strategies.ErrBadReply, r)
	}
	if r[0] != 1 {
		return strategies.Decision{Allowed: false, Count: s.cfg.Limit + 1}, nil
	}
	// The tokens taken with this request, as the published adapters count
	// them: the capacity less what is left.
	return strategies.Decision{Allowed: true, Count: s.cfg.Limit - r[1]}, nil
}

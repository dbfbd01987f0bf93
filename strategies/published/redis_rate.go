package published

import (
	"context"
	"strings"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/strategies"
)

func init() {
	mustRegister(strategies.Info{
		Name:     "redis_rate",
		Summary:  "go-redis/redis_rate v10's GCRA: Limiter.Allow(key, Limit{Rate: --limit, Burst: --limit, Period: --window})",
		Commands: Observed["redis_rate"],
		EVALSHA:  true,
		Atomic:   true,
		MinRedis: "3.2.0", // redis.replicate_commands
		Clients:  GoRedisClients,
		Module:   "github.com/go-redis/redis_rate/v10",
		Keys:     "K (redis_rate's rate:K, rate: dropped)",
		New:      func(c strategies.Config) strategies.Strategy { return &redisRate{cfg: c} },
	})
}

// redisRate calls redis_rate.Limiter.Allow. The limiter's key is "rate:"
// + the key it is given, with no option to change it; unprefixed hands it
// a client that drops that "rate:", so that the key is the cell's own.
type redisRate struct {
	cfg      strategies.Config
	limiters perClient[*redis_rate.Limiter]
}

func (*redisRate) Name() string { return "redis_rate" }

func (s *redisRate) Decide(ctx context.Context, c strategies.Client, key string) (strategies.Decision, error) {
	rdb, err := goRedisOf("redis_rate", c)
	if err != nil {
		return strategies.Decision{}, err
	}
	l, _ := s.limiters.get(rdb, "", func() (*redis_rate.Limiter, error) {
		return redis_rate.NewLimiter(unprefixed{rdb}), nil
	})
	limit := redis_rate.Limit{Rate: int(s.cfg.Limit), Burst: int(s.cfg.Limit), Period: time.Duration(s.cfg.Window) * time.Second}
	res, err := l.Allow(ctx, key, limit)
	if err != nil {
		return strategies.Decision{}, wrap("redis_rate: allow", err)
	}
	return rankDecision(res.Allowed > 0, s.cfg.Limit, int64(res.Remaining)), nil
}

// redisRatePrefix is the prefix redis_rate puts before every key.
const redisRatePrefix = "rate:"

// unprefixed is the client redis_rate's Limiter calls (it asks for the
// seven methods below): each passes the call on to go-redis with
// redisRatePrefix dropped from its keys.
type unprefixed struct{ rdb redis.UniversalClient }

func trim(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strings.TrimPrefix(k, redisRatePrefix)
	}
	return out
}

func (u unprefixed) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return u.rdb.Eval(ctx, script, trim(keys), args...)
}

func (u unprefixed) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return u.rdb.EvalSha(ctx, sha1, trim(keys), args...)
}

func (u unprefixed) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return u.rdb.EvalRO(ctx, script, trim(keys), args...)
}

func (u unprefixed) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return u.rdb.EvalShaRO(ctx, sha1, trim(keys), args...)
}

func (u unprefixed) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return u.rdb.ScriptExists(ctx, hashes...)
}

func (u unprefixed) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return u.rdb.ScriptLoad(ctx, script)
}

func (u unprefixed) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return u.rdb.Del(ctx, trim(keys)...)
}

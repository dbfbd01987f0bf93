package published

import (
	"context"
	"time"

	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/goredisstore.v9"

	"github.com/rlbench/rlbench/strategies"
)

func init() {
	mustRegister(strategies.Info{
		Name: "throttled",
		Summary: "throttled/throttled v2's GCRA: GCRARateLimiterCtx.RateLimitCtx(key, 1) on store/goredisstore.v9, " +
			"MaxRate --limit per --window, MaxBurst --limit - 1",
		Commands: Observed["throttled"],
		Atomic:   false,
		MinRedis: "2.6.0",
		Clients:  GoRedisClients,
		Module:   "github.com/throttled/throttled/v2",
		Keys:     "K (key prefix \"\")",
		New:      func(c strategies.Config) strategies.Strategy { return &throttledGCRA{cfg: c} },
	})
}

// throttledGCRA calls throttled's GCRA limiter on its go-redis v9 store,
// built once per client with an empty key prefix, so that the key it
// writes is the decision's.
type throttledGCRA struct {
	cfg      strategies.Config
	limiters perClient[*throttled.GCRARateLimiterCtx]
}

func (*throttledGCRA) Name() string { return "throttled" }

func (s *throttledGCRA) Decide(ctx context.Context, c strategies.Client, key string) (strategies.Decision, error) {
	rdb, err := goRedisOf("throttled", c)
	if err != nil {
		return strategies.Decision{}, err
	}
	l, err := s.limiters.get(rdb, "", func() (*throttled.GCRARateLimiterCtx, error) {
		store, err := goredisstore.NewCtx(rdb, "")
		if err != nil {
			return nil, err
		}
		// MaxBurst is the requests allowed beyond the first: limit at once.
		quota := throttled.RateQuota{
			MaxRate:  throttled.PerDuration(int(s.cfg.Limit), time.Duration(s.cfg.Window)*time.Second),
			MaxBurst: int(s.cfg.Limit) - 1,
		}
		return throttled.NewGCRARateLimiterCtx(store, quota)
	})
	if err != nil {
		return strategies.Decision{}, wrap("throttled: new limiter", err)
	}
	limited, res, err := l.RateLimitCtx(ctx, key, 1)
	if err != nil {
		return strategies.Decision{}, wrap("throttled: rate limit", err)
	}
	return rankDecision(!limited, s.cfg.Limit, int64(res.Remaining)), nil
}

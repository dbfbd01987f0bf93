package published

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ulule/limiter/v3"
	ululeredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/rlbench/rlbench/strategies"
)

func init() {
	mustRegister(strategies.Info{
		Name: "ulule",
		Summary: "ulule/limiter v3's fixed window: limiter.New(store, Rate{Period: --window, Limit: --limit}).Get(key) " +
			"on drivers/store/redis",
		Commands:    Observed["ulule"],
		EVALSHA:     true,
		Atomic:      true,
		FixedWindow: true,
		MinRedis:    "2.6.0",
		Clients:     GoRedisClients,
		Module:      "github.com/ulule/limiter/v3",
		Keys:        "K (store Prefix: K up to its last ':')",
		New:         func(c strategies.Config) strategies.Strategy { return &ulule{cfg: c} },
	})
}

// ulule calls limiter.Limiter.Get on ulule's redis store. The store names
// a key Prefix + ":" + key; the decision's key K is split at its last ':'
// into the two, so that the key the store writes is K itself. The store is
// built once per client and prefix (it loads its scripts when built).
type ulule struct {
	cfg      strategies.Config
	limiters perClient[*limiter.Limiter]
}

func (*ulule) Name() string { return "ulule" }

func (s *ulule) Decide(ctx context.Context, c strategies.Client, key string) (strategies.Decision, error) {
	rdb, err := goRedisOf("ulule", c)
	if err != nil {
		return strategies.Decision{}, err
	}
	i := strings.LastIndexByte(key, ':')
	if i < 0 {
		return strategies.Decision{}, fmt.Errorf("ulule: key %q has no ':' to split into the store's prefix and key", key)
	}
	prefix, id := key[:i], key[i+1:]
	l, err := s.limiters.get(rdb, prefix, func() (*limiter.Limiter, error) {
		store, err := ululeredis.NewStoreWithOptions(rdb, limiter.StoreOptions{Prefix: prefix})
		if err != nil {
			return nil, err
		}
		return limiter.New(store, limiter.Rate{Period: time.Duration(s.cfg.Window) * time.Second, Limit: s.cfg.Limit}), nil
	})
	if err != nil {
		return strategies.Decision{}, wrap("ulule: new store", err)
	}
	lc, err := l.Get(ctx, id)
	if err != nil {
		return strategies.Decision{}, wrap("ulule: get", err)
	}
	return rankDecision(!lc.Reached, s.cfg.Limit, lc.Remaining), nil
}

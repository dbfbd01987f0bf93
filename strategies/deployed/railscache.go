package deployed

import (
	"context"

	"github.com/rlbench/rlbench/strategies"
)

func init() {
	mustRegister(strategies.Info{
		Name: "rails-cache",
		Summary: "model of rails/rails ActiveSupport::Cache::RedisCacheStore#increment with expires_in (what Rails' rate_limit " +
			"calls), activesupport/lib/active_support/cache/redis_cache_store.rb (increment, write_key_expiry) at commit " +
			"0646620 (Rails 6): INCRBY, then TTL, then EXPIRE when the TTL is negative, three round trips on one key with no " +
			"stamp. A client lost after INCRBY leaves a key with no TTL until the next request gives it one",
		Commands:    "INCRBY; TTL; EXPIRE (when TTL < 0)",
		Atomic:      false,
		Heals:       true,
		FixedWindow: true,
		MinRedis:    "2.6.0",
		ACLCommands: []string{"incrby", "ttl", "expire"},
		New:         func(c strategies.Config) strategies.Strategy { return &railsCache{c} },
	})
}

// railsCache sends what RedisCacheStore#increment sends: c.incrby(key,
// amount), then write_key_expiry: client.ttl(key), and client.expire(key,
// expires_in) when it is negative, each its own round trip.
type railsCache struct{ cfg strategies.Config }

func (*railsCache) Name() string { return "rails-cache" }

func (s *railsCache) Decide(ctx context.Context, c strategies.Client, key string) (strategies.Decision, error) {
	const model = "rails-cache"
	r, err := send(ctx, c, model, cmd("INCRBY", key, "1"))
	if err != nil {
		return strategies.Decision{}, err
	}
	n, err := intReply(model, "INCRBY", r)
	if err != nil {
		return strategies.Decision{}, err
	}
	if r, err = send(ctx, c, model, cmd("TTL", key)); err != nil {
		return strategies.Decision{}, err
	}
	ttl, err := intReply(model, "TTL", r)
	if err != nil {
		return strategies.Decision{}, err
	}
	if ttl < 0 {
		if _, err := send(ctx, c, model, cmd("EXPIRE", key, itoa(s.cfg.Window))); err != nil {
			return strategies.Decision{}, err
		}
	}
	return countDecision(n, s.cfg.Limit), nil
}

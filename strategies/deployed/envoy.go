package deployed

import (
	"context"

	"github.com/rlbench/rlbench/strategies"
)

func init() {
	mustRegister(strategies.Info{
		Name: "envoy-ratelimit",
		Summary: "model of envoyproxy/ratelimit (Envoy's, Istio's rate-limit service), src/redis/fixed_cache_impl.go " +
			"(pipelineAppend) and src/limiter/cache_key.go (GenerateCacheKey) at commit 0184b1a: one pipeline, not MULTI, " +
			"of INCRBY and EXPIRE on a key stamped with the window's start (domain_k_v_<start>); expiry jitter off " +
			"(EXPIRATION_JITTER_MAX_SECONDS=0) and no local cache. A lost EXPIRE is repaired by the next hit in the same " +
			"window; the last hit's leaks the key of a passed window: memory, not lockout",
		Commands:    "INCRBY+EXPIRE (one pipeline)",
		Atomic:      false,
		MinRedis:    "2.6.0",
		Keys:        "K_<window start, Unix seconds>",
		Stamp:       strategies.StampUnix,
		ACLCommands: []string{"incrby", "expire"},
		New:         func(c strategies.Config) strategies.Strategy { return &envoy{c} },
	})
}

// envoy sends what fixedRateLimitCacheImpl.DoLimit sends for one
// descriptor with one limit: pipelineAppend's INCRBY key hits and EXPIRE
// key divider (+ jitter, here 0), in one PipeDo. The key ends with the
// window's start, (now / divider) * divider.
type envoy struct{ cfg strategies.Config }

func (*envoy) Name() string { return "envoy-ratelimit" }

func (s *envoy) Decide(ctx context.Context, c strategies.Client, key string) (strategies.Decision, error) {
	start := now().Unix() / s.cfg.Window * s.cfg.Window
	k := key + "_" + itoa(start)
	r, err := send(ctx, c, "envoy-ratelimit", cmd("INCRBY", k, "1"), cmd("EXPIRE", k, itoa(s.cfg.Window)))
	if err != nil {
		return strategies.Decision{}, err
	}
	n, err := intReply("envoy-ratelimit", "INCRBY", r)
	if err != nil {
		return strategies.Decision{}, err
	}
	return countDecision(n, s.cfg.Limit), nil
}

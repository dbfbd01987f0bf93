package deployed

import (
	"context"

	"github.com/rlbench/rlbench/strategies"
)

func init() {
	mustRegister(strategies.Info{
		Name: "rack-attack",
		Summary: "model of rack/rack-attack's throttle on a Redis store, lib/rack/attack/cache.rb (key_and_expiry, do_count) " +
			"and lib/rack/attack/store_proxy/redis_proxy.rb (increment) at commit 0f6ef47: a pipeline (not MULTI) of INCRBY " +
			"and EXPIRE period - now % period + 1, on a key that carries the window's index (now / period); the source puts " +
			"the index before the discriminator (prefix:<index>:key), the model after K. A lost EXPIRE is repaired by the next " +
			"request in the window; the last one's leaks a passed window's key: memory, not lockout",
		Commands:    "INCRBY+EXPIRE (one pipeline)",
		Atomic:      false,
		MinRedis:    "2.6.0",
		Keys:        "K:<window index, Unix seconds / window>",
		Stamp:       strategies.StampIndex,
		TTLSlack:    1,
		ACLCommands: []string{"incrby", "expire"},
		New:         func(c strategies.Config) strategies.Strategy { return &rackAttack{c} },
	})
}

// rackAttack sends what Cache#count sends through RedisProxy#increment:
// pipelined { incrby(key, 1); expire(key, expires_in) }, with expires_in =
// period - (now % period) + 1 (the +1 of rack-attack PR #85) and the key
// carrying now / period.
type rackAttack struct{ cfg strategies.Config }

func (*rackAttack) Name() string { return "rack-attack" }

func (s *rackAttack) Decide(ctx context.Context, c strategies.Client, key string) (strategies.Decision, error) {
	t := now().Unix()
	k := key + ":" + itoa(t/s.cfg.Window)
	expiresIn := s.cfg.Window - t%s.cfg.Window + 1
	r, err := send(ctx, c, "rack-attack", cmd("INCRBY", k, "1"), cmd("EXPIRE", k, itoa(expiresIn)))
	if err != nil {
		return strategies.Decision{}, err
	}
	n, err := intReply("rack-attack", "INCRBY", r)
	if err != nil {
		return strategies.Decision{}, err
	}
	return countDecision(n, s.cfg.Limit), nil
}

package strategies

import (
	"context"
	"fmt"
)

func init() {
	register(Info{
		Name:        "incr-expire",
		Summary:     "the two-command gap: a client lost between INCR and EXPIRE leaves an immortal key",
		Commands:    "INCR; EXPIRE (when n == 1)",
		Atomic:      false,
		Heals:       false,
		FixedWindow: true,
		MinRedis:    "1.0.0",
		New:         func(c Config) Strategy { return &incrExpire{c} },
	})
}

// incrExpire is the two-command shape: the expiry is a second round trip,
// sent only by the request that created the counter. If that client dies
// between the two, n == 1 never happens again and the key never expires.
type incrExpire struct{ cfg Config }

func (*incrExpire) Name() string { return "incr-expire" }

func (s *incrExpire) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	n, err := c.Incr(ctx, key)
	if err != nil {
		return Decision{}, fmt.Errorf("incr-expire: incr: %w", err)
	}
	if n == 1 {
		if _, err := c.Expire(ctx, key, s.cfg.Window); err != nil {
			return Decision{}, fmt.Errorf("incr-expire: expire: %w", err)
		}
	}
	return Decision{Allowed: n <= s.cfg.Limit, Count: n}, nil
}

package strategies

import (
	"context"
	"fmt"
)

func init() {
	register(Info{
		Name:        "naive",
		Summary:     "the first seed's read-then-write limiter; a key expiring between GET and INCR becomes immortal",
		Commands:    "GET; SET EXAT (when missing); INCR",
		Atomic:      false,
		Heals:       false,
		FixedWindow: true,
		CountIsRead: true,
		MinRedis:    "6.2.0", // SET ... EXAT
		New:         func(c Config) Strategy { return &naive{c} },
	})
}

// naive is the first seed's limiter. The only TTL is set in the create branch,
// so a key that expires between the GET and the INCR is recreated by INCR
// with no TTL: an immortal counter.
type naive struct{ cfg Config }

func (*naive) Name() string { return "naive" }

func (s *naive) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	n, ok, err := c.Get(ctx, key)
	if err != nil {
		return Decision{}, fmt.Errorf("naive: get: %w", err)
	}
	if !ok {
		if err := c.SetExAt(ctx, key, 1, now().Unix()+s.cfg.Window); err != nil {
			return Decision{}, fmt.Errorf("naive: set: %w", err)
		}
		// The first request creates the counter at 1 with the window's
		// expiry; later requests increment it. Limit >= 1, so it is allowed.
		return Decision{Allowed: true, Count: 0}, nil
	}
	if n >= s.cfg.Limit {
		return Decision{Allowed: false, Count: n}, nil
	}
	if _, err := c.Incr(ctx, key); err != nil {
		return Decision{}, fmt.Errorf("naive: incr: %w", err)
	}
	return Decision{Allowed: true, Count: n}, nil
}

package strategies

import (
	"context"
	"fmt"
)

func init() {
	register(Info{
		Name:        "multi-nx",
		Summary:     "the first seed's fix: one transaction; EXPIRE NX never extends a window and restores a lost TTL",
		Commands:    "MULTI; INCR; EXPIRE NX; EXEC",
		Atomic:      true,
		Heals:       true,
		FixedWindow: true,
		// MULTI does not roll back: on a hash or list, INCR fails with
		// WRONGTYPE, EXEC still runs EXPIRE NX, and the user's key gets
		// the window's TTL (it is deleted when that runs out).
		ChangesWrongType: true,
		MinRedis:         "7.0.0", // EXPIRE ... NX
		New:              func(c Config) Strategy { return &multiNX{c} },
	})
}

// multiNX is the first seed's fix: the increment and an EXPIRE that only
// sets a TTL where there is none run as one transaction. Traffic never
// extends a running window, and a key that lost its TTL gets one back.
type multiNX struct{ cfg Config }

func (*multiNX) Name() string { return "multi-nx" }

func (s *multiNX) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	n, err := c.IncrExpireNX(ctx, key, s.cfg.Window)
	if err != nil {
		return Decision{}, fmt.Errorf("multi-nx: %w", err)
	}
	return Decision{Allowed: n <= s.cfg.Limit, Count: n}, nil
}

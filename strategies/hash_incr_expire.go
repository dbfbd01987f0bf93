package strategies

import (
	"context"
	"fmt"
)

func init() {
	register(Info{
		Name:        "hash-incr-expire",
		Summary:     "the two-command gap one level down: a client lost between HINCRBY and HEXPIRE leaves an immortal field",
		Commands:    "HINCRBY; HEXPIRE FIELDS 1 (when n == 1)",
		Atomic:      false,
		Heals:       false,
		FixedWindow: true,
		MinRedis:    "7.4.0", // HEXPIRE
		Layout:      LayoutHashField,
		New:         func(c Config) Strategy { return &hashIncrExpire{c, newFieldSet(c.Fields)} },
	})
}

// hashIncrExpire is incr-expire on a hash field: the field's expiry is a
// second round trip, sent only by the request that created the field. If
// that client dies between the two, the field never expires, and neither
// does the hash that holds it.
type hashIncrExpire struct {
	cfg    Config
	fields fieldSet
}

func (*hashIncrExpire) Name() string { return "hash-incr-expire" }

func (s *hashIncrExpire) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	field := s.fields[s.fields.pick()]
	n, err := c.HIncrBy(ctx, key, field, 1)
	if err != nil {
		return Decision{}, fmt.Errorf("hash-incr-expire: hincrby: %w", err)
	}
	if n == 1 {
		if _, err := c.HExpire(ctx, key, field, s.cfg.Window); err != nil {
			return Decision{}, fmt.Errorf("hash-incr-expire: hexpire: %w", err)
		}
	}
	return Decision{Allowed: n <= s.cfg.Limit, Count: n}, nil
}

package strategies

import (
	"context"
	"fmt"
)

func init() {
	register(Info{
		Name:        "hash-multi-nx",
		Summary:     "multi-nx on a hash field: one transaction; HEXPIRE NX never extends a field's window and restores a lost TTL",
		Commands:    "MULTI; HINCRBY; HEXPIRE NX FIELDS 1; EXEC",
		Atomic:      true,
		Heals:       true,
		FixedWindow: true,
		// Unlike EXPIRE NX, HEXPIRE fails with WRONGTYPE on a key that is
		// not a hash: EXEC runs both commands, and both leave it alone.
		MinRedis: "7.4.0", // HEXPIRE
		Layout:   LayoutHashField,
		New:      func(c Config) Strategy { return &hashMultiNX{c, newFieldSet(c.Fields)} },
	})
}

// hashMultiNX is the first seed's fix for hash fields: the increment and a
// field expiry that only sets a TTL where there is none run as one
// transaction.
type hashMultiNX struct {
	cfg    Config
	fields fieldSet
}

func (*hashMultiNX) Name() string { return "hash-multi-nx" }

func (s *hashMultiNX) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	n, err := c.HIncrExpireNX(ctx, key, s.fields[s.fields.pick()], s.cfg.Window)
	if err != nil {
		return Decision{}, fmt.Errorf("hash-multi-nx: %w", err)
	}
	return Decision{Allowed: n <= s.cfg.Limit, Count: n}, nil
}

package rlbench

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
	// The published limiters register their strategies.
	_ "github.com/rlbench/rlbench/strategies/published"
	// The models of deployed limiters register theirs.
	_ "github.com/rlbench/rlbench/strategies/deployed"
)

// ErrOutsidePrefix is returned when a user strategy's first decision
// touched a key outside the cell's prefix.
var ErrOutsidePrefix = errors.New("touches a key outside the cell's prefix")

// checkUserStrategy makes the cell's first decisions of a user strategy
// (--script, --function, --sequence) before its load, on the cell's client
// (as the temporary ACL user, when the guard has one: see package
// usercode), and deletes their keys. It shows a script that fails to load
// or replies in another shape; a key the server refused (outside the
// prefix: the parse-time check lets none through that it can see) is
// ErrOutsidePrefix, naming the file. It also learns the shape of the
// strategy's counter (c.shape), whatever its claims, for the figures
// that need one.
func (c *cell) checkUserStrategy(ctx context.Context) error {
	info := c.info
	if info.Source == "" {
		return nil
	}
	key := keyspace.Key(c.prefix, 0)
	first, err := c.impl.Decide(ctx, c.conn, key)
	if err == nil {
		c.shape, err = c.probeShape(ctx, key, first)
	}
	if cerr := c.target.Cleanup(context.WithoutCancel(ctx), c.prefix); cerr != nil && err == nil {
		err = cerr
	}
	if re, ok := errors.AsType[strategies.ReplyError](err); ok && c.guard.Kind() == results.GuardStaticACL && keyRefused(string(re)) {
		return fmt.Errorf("%s (%s): %w %q: %w", c.strategy, info.Source, ErrOutsidePrefix, c.prefix, err)
	}
	if err != nil {
		return fmt.Errorf("first decision: %w", err)
	}
	return nil
}

// userShape is what a user strategy's first decisions showed of its
// counter, claimed or not.
type userShape struct {
	// ranked: a fresh key's first decision was allowed with count 1, so
	// that its counts are each request's rank in its window, as the
	// over-admission figure (admission.Tracker) reads them.
	ranked bool
	// increments: ranked, and each decision, a rejection included, is one
	// increment of a string counter at the decision's key, as the exact
	// counts (lost and phantom increments, failover.Watch) compare them.
	increments bool
}

// probeShape learns the shape of a user strategy's counter from first,
// the decision just made on the fresh key: whether its count was 1 and the
// key holds it; then, with the counter raised to the limit, whether the
// next decision is rejected at limit+1 and leaves the counter there. Its
// reads and the raise go through the target's admin connection; what it
// cannot read (another type at the key) is a shape it does not have.
func (c *cell) probeShape(ctx context.Context, key string, first strategies.Decision) (userShape, error) {
	if !first.Allowed || first.Count != 1 {
		return userShape{}, nil
	}
	shape := userShape{ranked: true}
	admin := c.target.Admin
	if n, err := admin.Get(ctx, key).Int64(); err != nil || n != 1 {
		return shape, nil
	}
	if err := admin.IncrBy(ctx, key, c.cfg.Limit-1).Err(); err != nil {
		return shape, nil
	}
	d, err := c.impl.Decide(ctx, c.conn, key)
	if err != nil {
		return shape, err
	}
	n, nerr := admin.Get(ctx, key).Int64()
	shape.increments = nerr == nil && !d.Allowed && d.Count == c.cfg.Limit+1 && n == d.Count
	return shape, nil
}

// keyRefused reports whether a reply is the server's refusal of a key the
// ACL user may not touch: NOPERM from a command (and from a script on Redis
// 6.2), "The user executing the script can't access ... keys" from a script
// on Redis 7, "ACL failure in script: No permissions to access a key" on
// Valkey 8.
func keyRefused(reply string) bool {
	for _, s := range []string{"NOPERM", "user executing the script can't access", "No permissions to access a key"} {
		if strings.Contains(reply, s) {
			return true
		}
	}
	return false
}

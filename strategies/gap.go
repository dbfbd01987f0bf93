package strategies

import (
	"context"
)

// Gap is called by a non-atomic strategy between two of its commands, the
// moment where a client can die or a key can expire. strategy and step name
// the spot, e.g. ("incr-expire", "after INCR"). A Gap that sleeps widens the
// race; one that returns an error makes the strategy stop right there, as a
// client that died would, and the strategy returns that error.
type Gap func(ctx context.Context, strategy, step string) error

// ErrCrashed is what a Gap returns to simulate a client that died between
// two commands. Reports count it as "crashed" (results.KindCrashed).
var ErrCrashed error = crashed{}

// crashed is ErrCrashed's type, which names its kind for reports
// (results.KindedError).
type crashed struct{}

func (crashed) Error() string     { return "client died between commands (simulated)" }
func (crashed) ErrorKind() string { return "crashed" }

type gapKey struct{}

// WithGap returns a context whose decisions call g between the commands of
// non-atomic strategies. Atomic strategies have no gap and never call it.
func WithGap(ctx context.Context, g Gap) context.Context {
	return context.WithValue(ctx, gapKey{}, g)
}

// gap calls the context's Gap, if any.
func gap(ctx context.Context, strategy, step string) error {
	if g, ok := ctx.Value(gapKey{}).(Gap); ok && g != nil {
		return g(ctx, strategy, step)
	}
	return nil
}

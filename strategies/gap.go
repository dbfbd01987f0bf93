package strategies

import (
	"context"
)

// Gap is called between two round trips of a decision, the moment where a
// client can die or a key can expire: after one command's reply has
// arrived and before the next command leaves. The client adapters call it
// (see Tap), so it reaches every strategy, a published library's included,
// without the strategy's help. strategy names the strategy deciding, step
// the spot, e.g. ("incr-expire", "after INCR"). A Gap that sleeps widens the
// race; one that returns an error stops the decision right there, as a
// client that died would: the next command is never sent, and the decision
// returns that error.
type Gap func(ctx context.Context, strategy, step string) error

// ErrCrashed is what a Gap returns to simulate a client that died between
// two commands. Reports count it as "crashed" (results.KindCrashed).
var ErrCrashed error = crashed{}

// crashed is ErrCrashed's type, which names its kind for reports
// (results.KindedError).
type crashed struct{}

func (crashed) Error() string     { return "client died between commands (simulated)" }
func (crashed) ErrorKind() string { return "crashed" }

// WithGap returns a context whose decisions call g between their round
// trips: WithTap with a Tap of g alone. Like every Tap, it serves one
// goroutine's decisions at a time.
func WithGap(ctx context.Context, g Gap) context.Context {
	return WithTap(ctx, &Tap{Gap: g})
}

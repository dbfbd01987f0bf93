package strategies

import (
	"context"
)

// Tap watches the round trips of one goroutine's decisions as the client
// sends them. The adapters in package clients call Before for each command
// they send, or once for a pipeline or a transaction that leaves as one
// write; a go-redis hook does it for the published libraries' own calls.
// Connection set-up (HELLO, AUTH, SELECT, CLIENT) is not a round trip of a
// decision and is not shown.
//
// Every Strategy that New builds starts each Decide by resetting the Tap in
// its context, so a Tap knows which round trip is a decision's first. A Tap
// is not safe for concurrent use: give each goroutine its own.
type Tap struct {
	// Gap, when not nil, is called before every round trip of a decision
	// but the first: after the previous reply, before this one leaves. An
	// error stops the round trip from being sent (see Gap).
	Gap Gap
	// Sent, when not nil, receives each round trip as it leaves: one
	// command's name, e.g. "EVALSHA", or a pipeline's or transaction's
	// names joined with "+", e.g. "TIME+GET" or "MULTI+INCR+EXPIRE+EXEC".
	Sent func(roundTrip string)

	strategy string // the strategy deciding
	n        int    // round trips sent in this decision
	last     string // the last round trip sent
}

type tapKey struct{}

// WithTap returns a context whose decisions t watches.
func WithTap(ctx context.Context, t *Tap) context.Context {
	return context.WithValue(ctx, tapKey{}, t)
}

// TapFrom returns the context's Tap, or nil.
func TapFrom(ctx context.Context) *Tap {
	t, _ := ctx.Value(tapKey{}).(*Tap)
	return t
}

// Before is called by a client adapter before roundTrip leaves. It calls
// the Gap when a round trip of the same decision went before, and returns
// its error: the adapter must then not send roundTrip, and must return the
// error as the command's.
func (t *Tap) Before(ctx context.Context, roundTrip string) error {
	if t.n > 0 && t.Gap != nil {
		if err := t.Gap(ctx, t.strategy, "after "+t.last); err != nil {
			return err
		}
	}
	t.n++
	t.last = roundTrip
	if t.Sent != nil {
		t.Sent(roundTrip)
	}
	return nil
}

// begin starts a decision of strategy.
func (t *Tap) begin(strategy string) {
	t.strategy, t.n, t.last = strategy, 0, ""
}

// tapped is a Strategy that resets its context's Tap at the start of each
// decision, and knows the Info it was built from (InfoOf); Info.Build
// wraps every strategy in it. Like the strategies, it is
// used by pointer: a value of two words in an interface would add the
// compiler's pointer wrapper, a stack frame more, to every decision (stack
// depth is what decides whether 10,000 workers each need 4 or 8 KiB).
type tapped struct {
	Strategy
	info Info
}

// builtFrom returns the Info s was built from.
func (s *tapped) builtFrom() Info { return s.info }

func (s *tapped) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	if t := TapFrom(ctx); t != nil {
		t.begin(s.Name())
	}
	return s.Strategy.Decide(ctx, c, key)
}

// tappedPreparer is tapped for a strategy that is also a Preparer.
type tappedPreparer struct {
	tapped
	p Preparer
}

func (s *tappedPreparer) Prepare(ctx context.Context, c Client) error { return s.p.Prepare(ctx, c) }

// withTap wraps s, built from info, so that its decisions reset their
// context's Tap.
func withTap(s Strategy, info Info) Strategy {
	if p, ok := s.(Preparer); ok {
		return &tappedPreparer{tapped{s, info}, p}
	}
	return &tapped{s, info}
}

// InfoOf returns the Info that s was built from (Info.Build,
// Registry.New), through the wrappers around it that return what they
// wrap from an Unwrap method; for another strategy, the built-in one
// registered under its name. It reads no registry for a strategy built
// from one: a run's user strategy is known to the run's Registry alone.
func InfoOf(s Strategy) (Info, bool) {
	for {
		switch w := s.(type) {
		case interface{ builtFrom() Info }:
			return w.builtFrom(), true
		case interface{ Unwrap() Strategy }:
			s = w.Unwrap()
			continue
		}
		info, err := Lookup(s.Name())
		return info, err == nil
	}
}

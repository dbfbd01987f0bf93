package verify

import "context"

// CheckFirst: the first request is allowed; a fixed-window counter is at 1
// with a TTL within a second of the window; any other strategy's keys have
// a TTL.
const CheckFirst = "first"

func init() {
	register(checkDef{
		Check:    Check{Name: CheckFirst, Doc: "the first request is allowed, the count is 1, and the TTL is the window"},
		run:      checkFirst,
		expected: passUnlessNoTTL,
	})
}

func checkFirst(ctx context.Context, t *trial) Cell {
	if cell, ok := t.allowedFresh(ctx, t.key("k"), "first request", "after the first request"); !ok {
		return cell
	}
	return t.ttlsSet(ctx)
}

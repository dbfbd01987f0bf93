package verify

import "context"

// CheckRepeated: in one window, exactly Limit requests are allowed, then
// every one is rejected.
const CheckRepeated = "repeated"

func init() {
	register(checkDef{
		Check:    Check{Name: CheckRepeated, Doc: "exactly limit requests are allowed, then the rest are rejected"},
		window:   longWindow,
		run:      checkRepeated,
		expected: passUnlessNoTTL,
	})
}

func checkRepeated(ctx context.Context, t *trial) Cell {
	if cell, ok := t.sequence(ctx, t.key("k"), 3, ""); !ok {
		return cell
	}
	return t.ttlsSet(ctx)
}

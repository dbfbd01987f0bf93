package verify

import (
	"context"
	"time"
)

// CheckExpiry: after the window the strategy admits again; a fixed-window
// counter starts again at 1 with a fresh TTL.
const CheckExpiry = "expiry"

func init() {
	register(checkDef{
		Check:    Check{Name: CheckExpiry, Doc: "after the window, the counter starts again with a fresh TTL"},
		run:      checkExpiry,
		expected: passUnlessNoTTL,
	})
}

// hashFieldReclaim is how long the expiry check waits, after a hash
// field's HPTTL says it expired, before the request that must find it gone.
const hashFieldReclaim = time.Second

func checkExpiry(ctx context.Context, t *trial) Cell {
	key := t.key("k")
	if cell, ok := t.sequence(ctx, key, 1, "before the window ends: "); !ok {
		return cell
	}
	window := time.Duration(t.window) * time.Second
	if t.info.FixedWindow {
		start := time.Now()
		p, err := t.waitGone(ctx, key, window+expiryGrace)
		if err != nil {
			return failf("%v", err)
		}
		if p != -2 {
			return failf("key still there %s after the window's requests (PTTL %s); want it expired", time.Since(start).Round(time.Millisecond), pttlText(p))
		}
		if t.hashFields() {
			// Seen once on Redis 7.4.1 (hash-lua on rueidis): HPTTL already
			// said -2, yet the next script's HINCRBY went on from the old
			// count. Give the server's active expiry a second to reclaim
			// the field before the request that must start afresh.
			if err := sleep(ctx, hashFieldReclaim); err != nil {
				return failf("%v", err)
			}
		}
	} else if err := sleep(ctx, window+300*time.Millisecond); err != nil {
		return failf("%v", err)
	}
	if cell, ok := t.allowedFresh(ctx, key, "request after the window", "in the new window"); !ok {
		return cell
	}
	return t.ttlsSet(ctx)
}

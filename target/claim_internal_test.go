package target

import (
	"errors"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/redistest"
)

// TestClaimRenewAndRelease checks what a claim does to its key: a renewal
// gives it its whole TTL again, or takes it again once it vanished, and
// leaves another run's claim alone; the release deletes only the run's own.
func TestClaimRenewAndRelease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	c, err := takeClaim(ctx, rdb, prefix, "run-a")
	if err != nil || c == nil {
		t.Fatalf("takeClaim(run-a) = %v, %v; want a claim", c, err)
	}
	defer c.release()
	key := ClaimKey(prefix)
	if again, err := takeClaim(ctx, rdb, prefix, "run-a"); again != nil || err != nil {
		t.Errorf("takeClaim(run-a) again = %v, %v; want nil, nil (the run holds it already)", again, err)
	}
	if _, err := takeClaim(ctx, rdb, prefix, "run-b"); !errors.Is(err, errClaimed) {
		t.Errorf("takeClaim(run-b) = %v; want errClaimed", err)
	}

	// Renewed: the whole TTL again.
	rdb.PExpire(ctx, key, time.Second)
	if err := c.renewOnce(ctx); err != nil || rdb.PTTL(ctx, key).Val() < claimTTL-5*time.Second {
		t.Errorf("renewOnce = %v, PTTL %s; want nil and about %s", err, rdb.PTTL(ctx, key).Val(), claimTTL)
	}
	// Vanished (a tenant's DEL): taken again.
	rdb.Del(ctx, key)
	if err := c.renewOnce(ctx); err != nil || rdb.Get(ctx, key).Val() != c.value {
		t.Errorf("renewOnce after a DEL = %v, GET %q; want the claim taken again", err, rdb.Get(ctx, key).Val())
	}
	// Another run's now: left alone, by the renewal and by the release.
	rdb.Set(ctx, key, "run run-b (elsewhere)", time.Hour)
	if err := c.renewOnce(ctx); !errors.Is(err, errClaimed) {
		t.Errorf("renewOnce over run-b's claim = %v; want errClaimed", err)
	}
	c.release()
	if v := rdb.Get(ctx, key).Val(); v != "run run-b (elsewhere)" || rdb.PTTL(ctx, key).Val() < 59*time.Minute {
		t.Errorf("after release, GET %s = %q (PTTL %s); want run-b's claim as it was", key, v, rdb.PTTL(ctx, key).Val())
	}
	// The run's own: deleted.
	own, err := takeClaim(ctx, rdb, prefix+"own:", "run-a")
	if err != nil {
		t.Fatal(err)
	}
	own.release()
	if n := rdb.Exists(ctx, ClaimKey(prefix+"own:")).Val(); n != 0 {
		t.Errorf("after release, the run's claim exists (%d); want it deleted", n)
	}
}

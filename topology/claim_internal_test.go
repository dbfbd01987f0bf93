package topology

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/redisserver"
)

// TestClaimRenewAndRelease checks what a claim does to its key: a renewal
// gives it its whole TTL again, and finds it lost once it vanished (on a
// server rlbench did not start) or holds another run's value, which it
// leaves alone; the release deletes only the run's own.
func TestClaimRenewAndRelease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	c, err := takeClaim(ctx, rdb, prefix, "run-a", false)
	if err != nil || c == nil {
		t.Fatalf("takeClaim(run-a) = %v, %v; want a claim", c, err)
	}
	defer c.release()
	key := keyspace.ClaimKey(prefix)
	if again, err := takeClaim(ctx, rdb, prefix, "run-a", false); again != nil || err != nil {
		t.Errorf("takeClaim(run-a) again = %v, %v; want nil, nil (the run holds it already)", again, err)
	}
	if _, err := takeClaim(ctx, rdb, prefix, "run-b", false); !errors.Is(err, errClaimed) {
		t.Errorf("takeClaim(run-b) = %v; want errClaimed", err)
	}

	// Renewed: the whole TTL again.
	rdb.PExpire(ctx, key, time.Second)
	if err := c.renewOnce(ctx); err != nil || rdb.PTTL(ctx, key).Val() < claimTTL-5*time.Second {
		t.Errorf("renewOnce = %v, PTTL %s; want nil and about %s", err, rdb.PTTL(ctx, key).Val(), claimTTL)
	}
	if c.lost.Err() != nil {
		t.Fatalf("claim lost after a renewal: %v", context.Cause(c.lost))
	}
	// Another run's now: lost, and left alone by the renewal and by the
	// release.
	rdb.Set(ctx, key, "run run-b (elsewhere)", time.Hour)
	if err := c.renewOnce(ctx); !errors.Is(err, ErrClaimLost) || !strings.Contains(err.Error(), "run run-b (elsewhere)") {
		t.Errorf("renewOnce over run-b's claim = %v; want ErrClaimLost naming run-b's value", err)
	}
	if err := context.Cause(c.lost); !errors.Is(err, ErrClaimLost) {
		t.Errorf("context.Cause(lost) = %v; want ErrClaimLost", err)
	}
	c.release()
	if v := rdb.Get(ctx, key).Val(); v != "run run-b (elsewhere)" || rdb.PTTL(ctx, key).Val() < 59*time.Minute {
		t.Errorf("after release, GET %s = %q (PTTL %s); want run-b's claim as it was", key, v, rdb.PTTL(ctx, key).Val())
	}
	// Vanished (a tenant's DEL): lost, on a server rlbench did not start;
	// taken again on one it started (a restart fault empties it).
	for _, retake := range []bool{false, true} {
		p := prefix + map[bool]string{false: "gone:", true: "retake:"}[retake]
		c, err := takeClaim(ctx, rdb, p, "run-a", retake)
		if err != nil {
			t.Fatal(err)
		}
		rdb.Del(ctx, keyspace.ClaimKey(p))
		err = c.check(ctx)
		if got := rdb.Get(ctx, keyspace.ClaimKey(p)).Val(); retake && (err != nil || got != c.value) {
			t.Errorf("check after a DEL (retake) = %v, GET %q; want the claim taken again", err, got)
		} else if !retake && (!errors.Is(err, ErrClaimLost) || got != "") {
			t.Errorf("check after a DEL = %v, GET %q; want ErrClaimLost, the key left gone", err, got)
		}
		c.release()
	}
	// The run's own: deleted.
	own, err := takeClaim(ctx, rdb, prefix+"own:", "run-a", false)
	if err != nil {
		t.Fatal(err)
	}
	own.release()
	if n := rdb.Exists(ctx, keyspace.ClaimKey(prefix+"own:")).Val(); n != 0 {
		t.Errorf("after release, the run's claim exists (%d); want it deleted", n)
	}
}

// TestClaimOutOfMemory is issue 34, item 13: a server out of memory
// (maxmemory reached, noeviction), which refuses every command queued
// inside MULTI, left the claim behind and would let it expire. It now
// renews the claim and deletes it at the release; on redis-server, and
// on each shared build (6.2, 7.4, Valkey) when there are some.
func TestClaimOutOfMemory(t *testing.T) {
	t.Parallel()
	t.Run("redis-server", func(t *testing.T) { claimOutOfMemory(t, "") })
	t.Run("builds", func(t *testing.T) {
		for _, bin := range redistest.Builds(t) {
			t.Run(filepath.Base(filepath.Dir(bin)), func(t *testing.T) { claimOutOfMemory(t, bin) })
		}
	})
}

// claimOutOfMemory is TestClaimOutOfMemory on the server binary ("":
// redis-server on PATH).
func claimOutOfMemory(t *testing.T, binary string) {
	srv, err := redisserver.Start(t.Context(), redisserver.Options{Binary: binary, Args: []string{"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	c, err := takeClaim(ctx, rdb, prefix, "run-a", false)
	if err != nil || c == nil {
		t.Fatalf("takeClaim = %v, %v", c, err)
	}
	defer c.release()
	value := strings.Repeat("x", 64<<10)
	for i := 0; ; i++ {
		err := rdb.Set(ctx, prefix+"fill:"+string(rune('a'+i%26))+strings.Repeat("k", i/26), value, 0).Err()
		if err != nil && strings.HasPrefix(err.Error(), "OOM") {
			break
		}
		if err != nil || i > 10000 {
			t.Fatalf("filling the server: SET #%d = %v; want an OOM error in time", i, err)
		}
	}
	key := keyspace.ClaimKey(prefix)
	rdb.PExpire(ctx, key, 5*time.Second)
	if err := c.renewOnce(ctx); err != nil || rdb.PTTL(ctx, key).Val() < claimTTL-5*time.Second {
		t.Errorf("renewOnce out of memory = %v, PTTL %s; want nil and about %s", err, rdb.PTTL(ctx, key).Val(), claimTTL)
	}
	c.release()
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Errorf("after release out of memory, EXISTS %s = %d; want the claim deleted", key, n)
	}
}

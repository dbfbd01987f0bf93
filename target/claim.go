package target

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
)

// claimTTL is the life of a run's claim on its prefix; the run renews it
// every claimTTL/3 while it holds it. A run killed with SIGKILL leaves a
// claim that expires this long after its last renewal.
const claimTTL = 30 * time.Second

// ClaimKey is the key by which a run claims prefix: one key, on the one
// node that serves it on a cluster.
func ClaimKey(prefix string) string { return prefix + audit.ClaimName }

// claim is a run's hold on its prefix: the key ClaimKey(prefix), set with
// SET NX before the empty-prefix check, so that of two runs started
// together on one prefix exactly one proceeds. It is renewed while the run
// runs and deleted at its end, only while it still holds the run's value.
type claim struct {
	rdb   redis.UniversalClient
	key   string
	value string
	stop  chan struct{}
	done  sync.WaitGroup
	once  sync.Once // release
}

// claimValue is what a run writes in its claim: its run id first, then
// what finds it (process and host) and since when.
func claimValue(runID string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("run %s (pid %d on %s, since %s)", runID, os.Getpid(), host, time.Now().UTC().Format(time.RFC3339Nano))
}

// errClaimed is returned by takeClaim when another run holds the prefix.
var errClaimed = errors.New("another run holds the prefix")

// takeClaim claims prefix for the run runID through rdb. It returns nil,
// with no error, when the run already holds it (two targets of one run
// naming one server); the holder's value, wrapped in errClaimed, when
// another run does.
func takeClaim(ctx context.Context, rdb redis.UniversalClient, prefix, runID string) (*claim, error) {
	c := &claim{rdb: rdb, key: ClaimKey(prefix), value: claimValue(runID), stop: make(chan struct{})}
	for range 2 { // a second time if the holder's claim expires between SET NX and GET
		ok, err := rdb.SetNX(ctx, c.key, c.value, claimTTL).Result()
		if err != nil {
			return nil, fmt.Errorf("set %s nx: %w", c.key, err)
		}
		if ok {
			c.done.Add(1)
			go c.renew()
			return c, nil
		}
		holder, err := rdb.Get(ctx, c.key).Result()
		switch {
		case errors.Is(err, redis.Nil):
			continue
		case err != nil:
			return nil, fmt.Errorf("get %s: %w", c.key, err)
		case holder == c.value:
			// This very SET NX took it, and its reply was lost (a
			// cluster client sends it again after a timeout).
			c.done.Add(1)
			go c.renew()
			return c, nil
		case holderRunID(holder) == runID:
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %s", errClaimed, holder)
	}
	return nil, fmt.Errorf("set %s nx: the key came and went twice", c.key)
}

// holderRunID is the run id at the start of a claim's value.
func holderRunID(value string) string {
	var id string
	fmt.Sscanf(value, "run %s", &id)
	return id
}

// renew extends the claim every claimTTL/3 until release, as long as it
// holds the run's value; one that vanished (a tenant's DEL or FLUSHALL) is
// taken again, one that another run holds is left to it.
func (c *claim) renew() {
	defer c.done.Done()
	tick := time.NewTicker(claimTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), claimTTL/3)
		err := c.renewOnce(ctx)
		cancel()
		if errors.Is(err, errClaimed) {
			return
		}
	}
}

// renewOnce gives the claim its whole TTL again, or takes it again when it
// vanished; errClaimed when another run holds it now.
func (c *claim) renewOnce(ctx context.Context) error {
	err := c.ifHeld(ctx, func(p redis.Pipeliner) { p.PExpire(ctx, c.key, claimTTL) })
	if errors.Is(err, redis.Nil) {
		err = c.rdb.SetNX(ctx, c.key, c.value, claimTTL).Err()
	}
	return err
}

// ifHeld runs fn in a transaction (WATCH, GET, MULTI, fn, EXEC) when the
// claim still holds the run's value: redis.Nil when it is gone,
// errClaimed when another run's value is there.
func (c *claim) ifHeld(ctx context.Context, fn func(redis.Pipeliner)) error {
	return c.rdb.Watch(ctx, func(tx *redis.Tx) error {
		v, err := tx.Get(ctx, c.key).Result()
		if err != nil {
			return err
		}
		if v != c.value {
			return errClaimed
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			fn(p)
			return nil
		})
		return err
	}, c.key)
}

// release stops the renewal and deletes the claim if it still holds the
// run's value; once, however often it is called. A nil claim (one the run
// did not take) does nothing.
func (c *claim) release() {
	if c == nil {
		return
	}
	c.once.Do(func() {
		close(c.stop)
		c.done.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), claimTTL/3)
		defer cancel()
		// A claim left behind by a failure here expires within claimTTL.
		err := c.ifHeld(ctx, func(p redis.Pipeliner) { p.Del(ctx, c.key) })
		if err != nil && strings.Contains(err.Error(), "NOPERM") {
			// A user who may not WATCH or GET it, whom the pre-flight
			// refuses moments after the claim was taken: deleted blind.
			_ = c.rdb.Del(ctx, c.key).Err()
		}
	})
}

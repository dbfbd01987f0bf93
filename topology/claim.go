package topology

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/excerpt"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/serverinfo"
)

// claimTTL is the life of a run's claim on its prefix; the run renews it
// every claimTTL/3 while it holds it. A run killed with SIGKILL leaves a
// claim that expires this long after its last renewal.
const claimTTL = 30 * time.Second

// ErrClaimLost is returned, wrapped, once a run finds that its claim on
// its prefix holds another run's value, or is gone (deleted, or expired
// while the server would not renew it) on a server that rlbench did not
// start: from then on the keys under the prefix may be another run's, and
// the run stops its load and deletes nothing (Target.ClaimLost).
var ErrClaimLost = errors.New("the run lost its claim on its prefix")

// claim is a run's hold on its prefix: the key keyspace.ClaimKey(prefix), set with
// SET NX before the empty-prefix check, so that of two runs started
// together on one prefix exactly one proceeds. It is renewed while the run
// runs and deleted at its end, only while it still holds the run's value.
type claim struct {
	rdb   redis.UniversalClient
	key   string
	value string
	// retake is set on a server rlbench started, which a restart fault
	// empties: a claim gone there is taken again, not lost.
	retake bool
	// serverRunID is the INFO run_id of the node that held the claim when
	// the run took it ("" when unknown): a claim gone from a node whose
	// run_id changed since went with the restart that emptied it, and is
	// taken again (serverRestarted).
	serverRunID string
	stop        chan struct{}
	done        sync.WaitGroup
	once        sync.Once // release
	// lost is cancelled, with ErrClaimLost as its cause, once the claim
	// is found lost (lose).
	lost context.Context
	lose context.CancelCauseFunc
}

// claimValue is what a run writes in its claim (keyspace.ClaimValue): its
// run id first, then this process and host, and since now.
func claimValue(runID string) string {
	host, _ := os.Hostname()
	return keyspace.ClaimValue(runID, os.Getpid(), host, time.Now())
}

// errClaimed is returned by takeClaim when another run holds the prefix.
var errClaimed = errors.New("another run holds the prefix")

// takeClaim claims prefix for the run runID through rdb. It returns nil,
// with no error, when the run already holds it (two targets of one run
// naming one server); the holder's value, wrapped in errClaimed, when
// another run does. retake is claim.retake.
func takeClaim(ctx context.Context, rdb redis.UniversalClient, prefix, runID string, retake bool) (*claim, error) {
	c := &claim{rdb: rdb, key: keyspace.ClaimKey(prefix), value: claimValue(runID), retake: retake, stop: make(chan struct{})}
	c.lost, c.lose = context.WithCancelCause(context.Background())
	for range 2 { // a second time if the holder's claim expires between SET NX and GET
		ok, err := rdb.SetNX(ctx, c.key, c.value, claimTTL).Result()
		if err != nil {
			return nil, fmt.Errorf("set %s nx: %w", c.key, err)
		}
		if ok {
			c.serverRunID = c.nodeRunID(ctx)
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
			c.serverRunID = c.nodeRunID(ctx)
			c.done.Add(1)
			go c.renew()
			return c, nil
		case keyspace.ClaimRunID(holder) == runID:
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %s", errClaimed, holder)
	}
	return nil, fmt.Errorf("set %s nx: the key came and went twice", c.key)
}

// renew extends the claim every claimTTL/3 until release, as long as it
// holds the run's value. A claim found lost (renewOnce) stops the
// renewal: the run is told through c.lost.
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
		if errors.Is(err, ErrClaimLost) {
			return
		}
	}
}

// The claim's scripts compare the claim's value with the run's and act on
// it in one step. They have no shebang line, so a server out of memory
// (maxmemory, noeviction) still runs them: it refuses only the commands
// flagged as growing memory (DEL and PEXPIRE are not), where it refuses
// every command queued inside MULTI. Each returns 1 when it acted, 0 when
// the key is gone, and the value found when it is another's.
var (
	renewScript   = redis.NewScript(compareAnd("redis.call('PEXPIRE', KEYS[1], ARGV[2])"))
	releaseScript = redis.NewScript(compareAnd("redis.call('DEL', KEYS[1])"))
)

// compareAnd is the script that runs call when KEYS[1] holds ARGV[1].
func compareAnd(call string) string {
	return "local v = redis.call('GET', KEYS[1])\n" +
		"if v == ARGV[1] then " + call + " return 1 end\n" +
		"if v then return v end\n" +
		"return 0\n"
}

// renewOnce gives the claim its whole TTL again. A claim gone is taken
// again on a server rlbench started (retake), or on one that restarted
// since the run took it (serverRestarted); otherwise, and when another
// run's value is there, the claim is lost: c.lost is cancelled and the
// error wraps ErrClaimLost. Another error (a server that does not answer)
// is returned as it is: the claim may still be held.
func (c *claim) renewOnce(ctx context.Context) error {
	err := c.compareAnd(ctx, renewScript, func(p redis.Pipeliner) { p.PExpire(ctx, c.key, claimTTL) })
	if errors.Is(err, redis.Nil) && (c.retake || c.serverRestarted(ctx)) {
		ok, serr := c.rdb.SetNX(ctx, c.key, c.value, claimTTL).Result()
		if serr != nil || ok {
			return serr
		}
		err = c.compareAnd(ctx, renewScript, func(p redis.Pipeliner) { p.PExpire(ctx, c.key, claimTTL) })
	}
	return c.lostIf(err)
}

// nodeRunID is the INFO run_id of the node that serves the claim's key
// (its master on a cluster); "" when it cannot be read.
func (c *claim) nodeRunID(ctx context.Context) string {
	var node interface {
		Info(ctx context.Context, section ...string) *redis.StringCmd
	} = c.rdb
	if cc, ok := c.rdb.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, c.key)
		if err != nil {
			return ""
		}
		node = m
	}
	info, err := node.Info(ctx, "server").Result()
	if err != nil {
		return ""
	}
	return serverinfo.Parse(info)["run_id"]
}

// serverRestarted reports whether the node that serves the claim's key
// restarted since the run took it (its run_id changed): a claim gone
// there went with the restart, which emptied the server (a restart that
// kept the data, from a dump, kept the claim too), and no run holds it.
func (c *claim) serverRestarted(ctx context.Context) bool {
	if c.serverRunID == "" {
		return false
	}
	now := c.nodeRunID(ctx)
	return now != "" && now != c.serverRunID
}

// lostIf returns err, after marking the claim lost when err says so
// (redis.Nil: gone; errClaimed: another's).
func (c *claim) lostIf(err error) error {
	var why string
	switch {
	case errors.Is(err, redis.Nil):
		why = "the key is gone (deleted, or expired while the server did not renew it)"
	case errors.Is(err, errClaimed):
		why = "it holds another value: " + strings.TrimPrefix(err.Error(), errClaimed.Error()+": ")
	case err != nil && strings.Contains(err.Error(), "WRONGTYPE"):
		why = "the key holds another type of value"
	default:
		return err
	}
	lost := fmt.Errorf("%w: key %s: %s", ErrClaimLost, c.key, why)
	c.lose(lost)
	return context.Cause(c.lost) // the first loss found
}

// compareAnd runs script on the claim (compare-and-act, checked by the
// claim's value): nil when it acted, redis.Nil when the key is gone,
// errClaimed with the value found when another run's is there. A user
// who may not run scripts, or their commands (NOPERM), gets the same through a transaction
// (WATCH, GET, MULTI, fn, EXEC), which a server out of memory refuses.
func (c *claim) compareAnd(ctx context.Context, script *redis.Script, fn func(redis.Pipeliner)) error {
	v, err := script.Run(ctx, c.rdb, []string{c.key}, c.value, claimTTL.Milliseconds()).Result()
	if err != nil && (strings.Contains(err.Error(), "NOPERM") || strings.Contains(err.Error(), "can't run this command")) {
		// Redis 7 says the latter of a command the user may not send
		// from a script.
		return c.ifHeld(ctx, fn)
	}
	if err != nil {
		return err
	}
	switch v := v.(type) {
	case int64:
		if v == 0 {
			return redis.Nil
		}
		return nil
	case string:
		return fmt.Errorf("%w: %s", errClaimed, excerpt.Text(v))
	}
	return fmt.Errorf("%s: unexpected reply %v", c.key, v)
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
			return fmt.Errorf("%w: %s", errClaimed, excerpt.Text(v))
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			fn(p)
			return nil
		})
		return err
	}, c.key)
}

// check renews the claim now, and returns an error wrapping ErrClaimLost
// when it is lost (or was found lost before): the run calls it before it
// deletes keys. A nil claim (one the run did not take) is held.
func (c *claim) check(ctx context.Context) error {
	if c == nil {
		return nil
	}
	if err := context.Cause(c.lost); err != nil {
		return err
	}
	if err := c.renewOnce(ctx); errors.Is(err, ErrClaimLost) {
		return err
	}
	return nil
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
		err := c.compareAnd(ctx, releaseScript, func(p redis.Pipeliner) { p.Del(ctx, c.key) })
		if err != nil && strings.Contains(err.Error(), "NOPERM") {
			// A user who may not WATCH or GET it, whom the pre-flight
			// refuses moments after the claim was taken: deleted blind.
			_ = c.rdb.Del(ctx, c.key).Err()
		}
	})
}

// ClaimLost is done once the run's claim on its prefix on t is found lost
// (ErrClaimLost is then its context.Cause): the run stops its load then,
// and deletes nothing. It is never done when t holds no claim of its own.
func (t *Target) ClaimLost() context.Context {
	if t.claim == nil {
		return context.Background()
	}
	return t.claim.lost
}

// CheckClaim renews the run's claim on its prefix on t at once, and
// returns an error wrapping ErrClaimLost when it is lost: the run calls it
// before each deletion of its keys. Another failure (a server that does
// not answer) is not a loss, and gives nil.
func (t *Target) CheckClaim(ctx context.Context) error { return t.claim.check(ctx) }

package deployed

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/strategies"
)

func init() {
	mustRegister(strategies.Info{
		Name: "bucket4j",
		Summary: "model of bucket4j/bucket4j's bucket4j-redis on Lettuce, bucket4j-redis/bucket4j-lettuce " +
			".../cas/LettuceBasedProxyManager.java (compareAndSwapFuture), bucket4j-redis-common .../consts/LuaScripts.java " +
			"and .../AbstractRedisProxyManagerBuilder.java at commit 1d5b840, bucket4j-core .../compare_and_swap/" +
			"AbstractCompareAndSwapBasedProxyManager.java at commit 5517792 and .../proxy/DefaultBucketProxy.java at commit " +
			"078ca3e, with the default expiration strategy, none (ExpirationAfterWriteStrategy.none(): buckets stored " +
			"forever), and no retry limit: tryConsume(1) on a bucket of capacity --limit refilled greedily --limit per " +
			"--window, client clock in ms. GET K; on a missing key, GET again (bucket not found, then " +
			"CreateInitialStateAndExecuteCommand) and EVAL of SET NX; on a bucket with a token, EVAL of the compare-and-swap " +
			"(GET, SET when equal); none when no token is left; a failed swap starts again at GET; each its own round " +
			"trip. The scripts are the model's own, with the same commands; the bucket's state, binary in bucket4j, is " +
			"text here. No key ever gets a TTL (with an expiration strategy, SET NX PX and PSETEX would set one): every " +
			"bucket stays, leaked memory, yet nobody is locked out, as a bucket refills",
		Commands:    "GET; GET (missing); EVAL: SET NX (missing) or GET, SET (swap, when a token is left)",
		Atomic:      false,
		MinRedis:    "2.6.12",
		NoTTL:       true,
		ACLCommands: []string{"get", "eval", "set"},
		New:         func(c strategies.Config) strategies.Strategy { return &bucket4j{c} },
	})
}

// bucket4jSetNX and bucket4jCompareAndSwap have the commands of
// LuaScripts.SCRIPT_SET_NX and SCRIPT_COMPARE_AND_SWAP, the scripts
// compareAndSwapFuture sends when the expiration strategy gives no TTL:
// 1 when they set, else 0.
const (
	bucket4jSetNX          = "if redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 1 else return 0 end"
	bucket4jCompareAndSwap = "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]); return 1 else return 0 end"
)

// bucket4j sends what a BucketProxy's tryConsume(1) sends through
// LettuceBasedProxyManager: the compare-and-swap loop of
// AbstractCompareAndSwapBasedProxyManager.execute around TryConsumeCommand,
// and after it answers "bucket not found", the same loop around
// CreateInitialStateAndExecuteCommand (DefaultBucketProxy.execute).
type bucket4j struct{ cfg strategies.Config }

func (*bucket4j) Name() string { return "bucket4j" }

func (s *bucket4j) Decide(ctx context.Context, c strategies.Client, key string) (strategies.Decision, error) {
	const model = "bucket4j"
	create := false // CreateInitialStateAndExecuteCommand: a missing bucket is made full
	for {
		r, err := send(ctx, c, model, cmd("GET", key))
		if err != nil {
			return strategies.Decision{}, err
		}
		nowNS := now().UnixMilli() * int64(time.Millisecond) // TimeMeter.SYSTEM_MILLISECONDS
		var b bucket4jState
		switch {
		case r.Nil && !create:
			create = true // TryConsumeCommand: bucket not found, nothing written
			continue
		case r.Nil:
			b = bucket4jState{tokens: s.cfg.Limit, refillNS: nowNS}
		default:
			if b, err = parseBucket4j(r.Str); err != nil {
				return strategies.Decision{}, fmt.Errorf("%s: GET: %w", model, err)
			}
		}
		b.refill(nowNS, s.cfg.Limit, s.cfg.Window*int64(time.Second))
		if b.tokens < 1 {
			return strategies.Decision{Allowed: false, Count: s.cfg.Limit + 1}, nil // not modified: no write
		}
		b.tokens--
		next := b.String()
		if r.Nil {
			r, err = eval(ctx, c, model, bucket4jSetNX, key, next)
		} else {
			r, err = eval(ctx, c, model, bucket4jCompareAndSwap, key, r.Str, next)
		}
		if err != nil {
			return strategies.Decision{}, err
		}
		swapped, err := intReply(model, "EVAL", r)
		if err != nil {
			return strategies.Decision{}, err
		}
		if swapped == 1 {
			return strategies.Decision{Allowed: true, Count: s.cfg.Limit - b.tokens}, nil
		}
	}
}

// bucket4jState is a bucket of one bandwidth: the tokens available, when
// it was last refilled (client clock, ns) and the refill's rounding error,
// which bucket4j keeps so that no fraction of a token is lost.
type bucket4jState struct{ tokens, refillNS, rounding int64 }

func (b bucket4jState) String() string {
	return itoa(b.tokens) + ":" + itoa(b.refillNS) + ":" + itoa(b.rounding)
}

// errNotBucket4j is returned for a value at the key that is not a bucket.
var errNotBucket4j = errors.New("the value at the key is not a bucket4j model's bucket")

func parseBucket4j(v string) (bucket4jState, error) {
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		return bucket4jState{}, errNotBucket4j
	}
	var n [3]int64
	for i, p := range parts {
		var err error
		if n[i], err = strconv.ParseInt(p, 10, 64); err != nil || n[i] < 0 {
			return bucket4jState{}, errNotBucket4j
		}
	}
	return bucket4jState{tokens: n[0], refillNS: n[1], rounding: n[2]}, nil
}

// refill adds the tokens of the time since the last refill, greedily (a
// fraction of a period gives its share), up to capacity, as bucket4j's
// greedy refill does: tokens x elapsed / period, the remainder carried.
func (b *bucket4jState) refill(nowNS, capacity, periodNS int64) {
	elapsed := nowNS - b.refillNS
	if elapsed <= 0 {
		return
	}
	b.refillNS = nowNS
	if elapsed >= periodNS || b.rounding >= periodNS {
		b.tokens, b.rounding = capacity, 0
		return
	}
	hi, lo := bits.Mul64(uint64(capacity), uint64(elapsed))
	lo, carry := bits.Add64(lo, uint64(b.rounding), 0)
	added, rem := bits.Div64(hi+carry, lo, uint64(periodNS)) // < capacity: fits
	b.tokens += int64(added)
	b.rounding = int64(rem)
	if b.tokens >= capacity {
		b.tokens, b.rounding = capacity, 0
	}
}

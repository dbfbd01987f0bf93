package deployed

import (
	"context"
	"strconv"

	"github.com/rlbench/rlbench/strategies"
)

func init() {
	mustRegister(strategies.Info{
		Name: "laravel",
		Summary: "model of laravel/framework's RateLimiter as the ThrottleRequests middleware calls it (tooManyAttempts, " +
			"then hit), src/Illuminate/Cache/RateLimiter.php at commit 035c723 on RedisStore (add, increment, put, forget), " +
			"src/Illuminate/Cache/RedisStore.php at commit 0038ef2: GET K; at the limit GET K:timer, and DEL K when it is " +
			"gone; then EVAL add of K:timer, EVAL add of K (EXISTS, SETEX), INCRBY K, and SETEX K 1 when INCRBY made a " +
			"key add did not: each its own round trip. The add script is the model's own, with the same commands. " +
			"Repair is partial: a counter at the limit whose timer is gone is deleted; one below it with no TTL stays",
		Commands:    "GET; GET timer, DEL (at the limit); EVAL add timer; EVAL add (EXISTS, SETEX); INCRBY; SETEX (repair)",
		Atomic:      false,
		Heals:       true,
		FixedWindow: true,
		// tooManyAttempts reads; only hit increments.
		RejectsUnincremented: true,
		MinRedis:             "2.6.0",
		Keys:                 "K, K:timer",
		ACLCommands:          []string{"get", "del", "eval", "exists", "setex", "incrby"},
		New:                  func(c strategies.Config) strategies.Strategy { return &laravel{c} },
	})
}

// laravelAdd has the commands of RedisStore::add's script: SETEX KEYS[1]
// ARGV[2] ARGV[1] when EXISTS KEYS[1] is 0; a true reply when it set.
const laravelAdd = "return redis.call('EXISTS', KEYS[1]) < 1 and redis.call('SETEX', KEYS[1], ARGV[2], ARGV[1])"

type laravel struct{ cfg strategies.Config }

func (*laravel) Name() string { return "laravel" }

// Decide is tooManyAttempts($key, $maxAttempts) and, when it is false,
// hit($key, $decaySeconds).
func (s *laravel) Decide(ctx context.Context, c strategies.Client, key string) (strategies.Decision, error) {
	const model = "laravel"
	timer := key + ":timer"
	decay := itoa(s.cfg.Window)
	r, err := send(ctx, c, model, cmd("GET", key))
	if err != nil {
		return strategies.Decision{}, err
	}
	attempts, _ := strconv.ParseInt(r.Str, 10, 64) // a missing key is 0
	if attempts >= s.cfg.Limit {
		if r, err = send(ctx, c, model, cmd("GET", timer)); err != nil {
			return strategies.Decision{}, err
		}
		if !r.Nil {
			return strategies.Decision{Allowed: false, Count: attempts}, nil
		}
		if _, err := send(ctx, c, model, cmd("DEL", key)); err != nil { // resetAttempts
			return strategies.Decision{}, err
		}
	}
	availableAt := itoa(now().Unix() + s.cfg.Window)
	if _, err := eval(ctx, c, model, laravelAdd, timer, availableAt, decay); err != nil {
		return strategies.Decision{}, err
	}
	if r, err = eval(ctx, c, model, laravelAdd, key, "0", decay); err != nil {
		return strategies.Decision{}, err
	}
	added := !r.Nil && (r.Str != "" || r.Int != 0)
	if r, err = send(ctx, c, model, cmd("INCRBY", key, "1")); err != nil {
		return strategies.Decision{}, err
	}
	hits, err := intReply(model, "INCRBY", r)
	if err != nil {
		return strategies.Decision{}, err
	}
	if !added && hits == 1 {
		if _, err := send(ctx, c, model, cmd("SETEX", key, decay, "1")); err != nil {
			return strategies.Decision{}, err
		}
	}
	return strategies.Decision{Allowed: true, Count: hits}, nil
}

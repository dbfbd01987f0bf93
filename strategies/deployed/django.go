package deployed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"time"

	"github.com/rlbench/rlbench/strategies"
)

// djangoFudge is django-ratelimit's EXPIRATION_FUDGE: seconds added to the
// period for the key's TTL.
const djangoFudge = 5

func init() {
	mustRegister(strategies.Info{
		Name: "django-ratelimit",
		Summary: "model of jsocol/django-ratelimit on Django's Redis cache, django_ratelimit/core.py (get_usage, _get_window, " +
			"_make_cache_key) at commit 0a6a7d3, with Django's RedisCache add (SET NX EX) and incr (EXISTS, then INCRBY): " +
			"SET k 1 NX EX period+5; when not set, EXISTS k, then INCRBY k 1, separate round trips; EXISTS 0 fails closed " +
			"(rejected, as RATELIMIT_FAIL_OPEN off). The key hashes the window's end (jittered by crc32 of the key) with " +
			"SHA-256, so its name shows no stamp. A key expiring between EXISTS and INCRBY comes back with no TTL",
		Commands:    "SET NX EX; EXISTS (when not set); INCRBY (when it exists)",
		Atomic:      false,
		MinRedis:    "2.6.12",
		Keys:        "K:<sha256 of K and the window's end>",
		Stamp:       strategies.StampHashed,
		TTLSlack:    djangoFudge,
		ACLCommands: []string{"set", "exists", "incrby"},
		WindowEnd: func(key string, window int64, t time.Time) time.Time {
			// The key changes when _get_window's end passes: at its end
			// second's close.
			return time.Unix((&django{strategies.Config{Window: window}}).window(key, t.Unix())+1, 0)
		},
		New: func(c strategies.Config) strategies.Strategy { return &django{c} },
	})
}

// django sends what get_usage(increment=True) sends through Django's
// RedisCache: cache.add(key, 1, period + EXPIRATION_FUDGE), and when it
// did not add, cache.incr(key): client.exists(key) (ValueError when 0),
// then client.incr(key, 1), which redis-py sends as INCRBY.
type django struct{ cfg strategies.Config }

func (*django) Name() string { return "django-ratelimit" }

// window is _get_window: the end of the current period, offset by
// crc32(value) % period so that keys' windows do not all end together.
func (s *django) window(value string, ts int64) int64 {
	period := s.cfg.Window
	if period == 1 {
		return ts
	}
	w := ts - ts%period + int64(crc32.ChecksumIEEE([]byte(value)))%period
	if w < ts {
		return w + period
	}
	return w
}

func (s *django) Decide(ctx context.Context, c strategies.Client, key string) (strategies.Decision, error) {
	const model = "django-ratelimit"
	sum := sha256.Sum256([]byte(key + itoa(s.window(key, now().Unix()))))
	k := key + ":" + hex.EncodeToString(sum[:])
	r, err := send(ctx, c, model, cmd("SET", k, "1", "NX", "EX", itoa(s.cfg.Window+djangoFudge)))
	if err != nil {
		return strategies.Decision{}, err
	}
	if !r.Nil {
		return countDecision(1, s.cfg.Limit), nil
	}
	if r, err = send(ctx, c, model, cmd("EXISTS", k)); err != nil {
		return strategies.Decision{}, err
	}
	if exists, err := intReply(model, "EXISTS", r); err != nil || exists == 0 {
		return strategies.Decision{Allowed: false}, err
	}
	if r, err = send(ctx, c, model, cmd("INCRBY", k, "1")); err != nil {
		return strategies.Decision{}, err
	}
	n, err := intReply(model, "INCRBY", r)
	if err != nil {
		return strategies.Decision{}, err
	}
	return countDecision(n, s.cfg.Limit), nil
}

package clients

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// The hash-field commands of both adapters (Redis >= 7.4), for the
// strategies whose counter is a field of a hash (strategies.LayoutHashField).

func (c *goRedis) HIncrBy(ctx context.Context, key, field string, n int64) (int64, error) {
	v, err := c.rdb.HIncrBy(ctx, key, field, n).Result()
	return v, goRedisErr(err)
}

func (c *goRedis) HExpire(ctx context.Context, key, field string, seconds int64) (int64, error) {
	return firstInt(c.rdb.HExpire(ctx, key, time.Duration(seconds)*time.Second, field).Result())
}

func (c *goRedis) HTTL(ctx context.Context, key, field string) (int64, error) {
	return firstInt(c.rdb.HTTL(ctx, key, field).Result())
}

// HIncrExpireNX sends MULTI, HINCRBY, HEXPIRE NX and EXEC in one
// TxPipelined round trip.
func (c *goRedis) HIncrExpireNX(ctx context.Context, key, field string, seconds int64) (int64, error) {
	var incr *redis.IntCmd
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		incr = p.HIncrBy(ctx, key, field, 1)
		p.HExpireWithArgs(ctx, key, time.Duration(seconds)*time.Second, redis.HExpireArgs{NX: true}, field)
		return nil
	})
	if err != nil {
		return 0, goRedisErr(err)
	}
	return incr.Val(), nil
}

// firstInt is the one element of a one-field reply.
func firstInt(v []int64, err error) (int64, error) {
	if err != nil {
		return 0, goRedisErr(err)
	}
	if len(v) != 1 {
		return 0, fmt.Errorf("reply has %d elements; want 1", len(v))
	}
	return v[0], nil
}

func (a *rueidisAdapter) HIncrBy(ctx context.Context, key, field string, n int64) (int64, error) {
	v, err := a.do(ctx, "HINCRBY", a.c.B().Hincrby().Key(key).Field(field).Increment(n).Build()).AsInt64()
	return v, rueidisErr(err)
}

func (a *rueidisAdapter) HExpire(ctx context.Context, key, field string, seconds int64) (int64, error) {
	cmd := a.c.B().Hexpire().Key(key).Seconds(seconds).Fields().Numfields(1).Field(field).Build()
	return rueidisFirstInt(a.do(ctx, "HEXPIRE", cmd).AsIntSlice())
}

func (a *rueidisAdapter) HTTL(ctx context.Context, key, field string) (int64, error) {
	cmd := a.c.B().Httl().Key(key).Fields().Numfields(1).Field(field).Build()
	return rueidisFirstInt(a.do(ctx, "HTTL", cmd).AsIntSlice())
}

// HIncrExpireNX sends MULTI, HINCRBY, HEXPIRE NX and EXEC as one DoMulti
// slice, written contiguously on the shared connection (see IncrExpireNX).
func (a *rueidisAdapter) HIncrExpireNX(ctx context.Context, key, field string, seconds int64) (int64, error) {
	if err := tapRueidis(ctx, "MULTI+HINCRBY+HEXPIRE NX+EXEC"); err != nil {
		return 0, err
	}
	b := a.c.B()
	resps := a.c.DoMulti(ctx,
		b.Multi().Build(),
		b.Hincrby().Key(key).Field(field).Increment(1).Build(),
		b.Hexpire().Key(key).Seconds(seconds).Nx().Fields().Numfields(1).Field(field).Build(),
		b.Exec().Build(),
	)
	return execFirst(resps)
}

// execFirst returns the first reply of a MULTI; X; Y; EXEC round trip,
// an integer, or the most specific error.
func execFirst(resps []rueidis.RedisResult) (int64, error) {
	exec, err := resps[3].ToArray()
	if err != nil {
		// The EXEC error says why; a MULTI or queued command's error is
		// more specific.
		for _, r := range resps[:3] {
			if e := r.Error(); e != nil {
				return 0, rueidisErr(e)
			}
		}
		return 0, rueidisErr(err)
	}
	if len(exec) != 2 {
		return 0, fmt.Errorf("exec: reply has %d elements; want 2", len(exec))
	}
	n, err := exec[0].AsInt64()
	return n, rueidisErr(err)
}

// rueidisFirstInt is firstInt for rueidis.
func rueidisFirstInt(v []int64, err error) (int64, error) {
	if err != nil {
		return 0, rueidisErr(err)
	}
	if len(v) != 1 {
		return 0, fmt.Errorf("reply has %d elements; want 1", len(v))
	}
	return v[0], nil
}

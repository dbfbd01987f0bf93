package clients

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The go-redis adapter's hash-field commands (Redis >= 7.4), for the
// strategies whose counter is a field of a hash (strategies.LayoutHashField);
// the rueidis and valkey-go adapter's are in pipelined_replies.go, redigo's
// in redigo.go.

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

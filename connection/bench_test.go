package connection_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/redisserver"
)

// BenchmarkTLSCost isolates what TLS costs a client: INCR on one private
// server reached over plain TCP and over TLS (one-way, P-256 certificate),
// through the options connection.Settings builds, with go-redis (a pool of one
// connection per goroutine) and rueidis (auto-pipelined). Compare the
// plain and tls rows of each client with benchstat.
func BenchmarkTLSCost(b *testing.B) {
	plain := start(b, nil)
	secure := start(b, &redisserver.TLSOptions{})
	files, _ := secure.TLS()
	servers := []struct {
		name     string
		addr     string
		settings connection.Settings
	}{
		{"plain", plain.Addr(), connection.Settings{}},
		{"tls", secure.Addr(), connection.Settings{TLS: &connection.TLSFiles{CACert: files.CACert}}},
	}
	for _, srv := range servers {
		for _, client := range []string{"go-redis", "rueidis"} {
			b.Run(fmt.Sprintf("%s-%s", client, srv.name), func(b *testing.B) {
				incr := newIncr(b, client, srv.addr, srv.settings)
				var n atomic.Int64
				b.ReportAllocs()
				b.SetParallelism(8)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					key := "bench:" + strconv.FormatInt(n.Add(1), 10)
					for pb.Next() {
						if err := incr(key); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// newIncr returns a function that INCRs a key with the named client,
// closed at the end of b.
func newIncr(b *testing.B, client, addr string, s connection.Settings) func(key string) error {
	ctx := context.Background()
	switch client {
	case "go-redis":
		o, err := s.GoRedis(addr)
		if err != nil {
			b.Fatal(err)
		}
		o.PoolSize, o.DisableIdentity = 8*runtime.GOMAXPROCS(0), true
		rdb := redis.NewClient(o)
		b.Cleanup(func() { rdb.Close() })
		return func(key string) error { return rdb.Incr(ctx, key).Err() }
	default:
		o, err := s.Rueidis([]string{addr})
		if err != nil {
			b.Fatal(err)
		}
		o.ForceSingleClient, o.DisableCache = true, true
		c, err := rueidis.NewClient(o)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		return func(key string) error { return c.Do(ctx, c.B().Incr().Key(key).Build()).Error() }
	}
}

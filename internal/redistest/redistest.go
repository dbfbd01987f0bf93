// Package redistest is the one helper rlbench's integration tests use to get
// a Redis: a private redis-server per test on a free loopback port, a go-redis
// client to it for independent assertions, and a key prefix unique to the test.
//
// A missing redis-server fails the test loudly instead of skipping it, so that
// a green run always means the integration tests ran.
package redistest

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rlbench/rlbench/redisserver"
)

// BinaryEnv names the environment variable that, if set, gives the path of the
// redis-server (or valkey-server) binary Start runs instead of redis-server on PATH.
const BinaryEnv = "RLBENCH_REDIS_SERVER"

// Start starts a private redis-server for tb and closes it in tb.Cleanup.
// The binary is $RLBENCH_REDIS_SERVER if set, else redis-server on PATH.
// If it cannot be found, Start fails the test (it does not skip) and says to
// run scripts/test.sh or apt-get install redis-server.
func Start(tb testing.TB) *redisserver.Server {
	tb.Helper()
	return StartWith(tb, redisserver.Options{})
}

// StartWith is Start with opts, e.g. Args that the test needs; an empty
// opts.Binary is Start's binary.
func StartWith(tb testing.TB, opts redisserver.Options) *redisserver.Server {
	tb.Helper()
	if opts.Binary == "" {
		opts.Binary = os.Getenv(BinaryEnv)
	}
	srv, err := redisserver.Start(tb.Context(), opts)
	started(tb, err, srv.Close)
	return srv
}

// started fails tb loudly when a server did not start (saying what to do
// when redis-server is missing), and otherwise closes it in tb.Cleanup.
func started(tb testing.TB, err error, close func() error) {
	tb.Helper()
	if errors.Is(err, redisserver.ErrNotFound) {
		tb.Fatalf("redistest: integration tests need redis-server: %v\n"+
			"run scripts/test.sh, or apt-get install redis-server, or set %s=/path/to/redis-server", err, BinaryEnv)
	}
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(func() {
		if err := close(); err != nil {
			tb.Errorf("redistest: %v", err)
		}
	})
}

// Client returns a go-redis client to srv, closed in tb.Cleanup, for
// assertions made independently of the code under test.
func Client(tb testing.TB, srv *redisserver.Server) *redis.Client {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{
		Addr:                     srv.Addr(),
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	tb.Cleanup(func() {
		if err := rdb.Close(); err != nil {
			tb.Errorf("redistest: close client to %s: %v", srv.Addr(), err)
		}
	})
	return rdb
}

// Prefix returns a key prefix unique to the test: "rlbench-test:", then
// tb.Name() with every character outside [A-Za-z0-9_-] replaced by '_', then
// ":". Subtests get distinct prefixes because their names differ.
func Prefix(tb testing.TB) string {
	tb.Helper()
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, tb.Name())
	return "rlbench-test:" + name + ":"
}

// KeysUnder returns the keys of rdb's database that start with prefix
// (every key for ""), sorted, by a SCAN of the whole database: no glob
// pattern, so that a prefix holding *, ? or [ means itself.
func KeysUnder(tb testing.TB, rdb *redis.Client, prefix string) []string {
	tb.Helper()
	var keys []string
	iter := rdb.Scan(tb.Context(), 0, "*", 1000).Iterator()
	for iter.Next(tb.Context()) {
		if strings.HasPrefix(iter.Val(), prefix) {
			keys = append(keys, iter.Val())
		}
	}
	if err := iter.Err(); err != nil {
		tb.Fatalf("redistest: SCAN: %v", err)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

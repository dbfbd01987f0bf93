package redistest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/serverinfo"
)

// Redis74Env names the environment variable that gives the path of a
// redis-server >= 7.4 (hash-field TTLs: HEXPIRE, HTTL) for Start74.
const Redis74Env = "RLBENCH_REDIS_74"

// Start74 starts a private redis-server >= 7.4 for tb, as Start does: the
// binary is $RLBENCH_REDIS_74 if set, else the newest redis-7.4* or later
// build found in a shared/redis folder beside a parent of the working
// directory (../shared/redis from the repository). Debian's redis-server
// 7.0 has no hash-field TTLs, so when neither is there Start74 skips tb,
// naming Redis74Env. args are the server's extra arguments (redisserver.Options.Args).
func Start74(tb testing.TB, args ...string) *redisserver.Server {
	tb.Helper()
	binary := Binary74(tb)
	srv, err := redisserver.Start(tb.Context(), redisserver.Options{Binary: binary, Args: args})
	started(tb, err, srv.Close)
	if !serverinfo.VersionAtLeast(srv.Info().RedisVersion, "7.4.0") {
		tb.Skipf("%s is Redis %s; hash-field TTLs need 7.4 (set %s)", binary, srv.Info().RedisVersion, Redis74Env)
	}
	return srv
}

// Binary74 is the redis-server >= 7.4 that Start74 runs, for a test
// whose server another package starts: $RLBENCH_REDIS_74 if set, else the
// newest shared build; when neither is there it skips tb, as Start74 does.
func Binary74(tb testing.TB) string {
	tb.Helper()
	binary := os.Getenv(Redis74Env)
	if binary == "" {
		binary = findRedis74()
	}
	if binary == "" {
		tb.Skipf("no redis-server >= 7.4 for hash-field TTLs: set %s=/path/to/redis-server (7.4 or later)", Redis74Env)
	}
	return binary
}

// findRedis74 returns the newest shared redis-7.4+ build, or "".
func findRedis74() string {
	if dir := sharedBuilds(); dir != "" {
		found, _ := filepath.Glob(filepath.Join(dir, "redis-*", "redis-server"))
		found = slices.DeleteFunc(found, func(bin string) bool {
			v := filepath.Base(filepath.Dir(bin))[len("redis-"):]
			return !serverinfo.VersionAtLeast(v, "7.4.0")
		})
		if len(found) > 0 {
			slices.SortFunc(found, func(a, b string) int {
				if serverinfo.VersionAtLeast(filepath.Base(filepath.Dir(a))[len("redis-"):], filepath.Base(filepath.Dir(b))[len("redis-"):]) {
					return 1
				}
				return -1
			})
			return found[len(found)-1]
		}
	}
	return ""
}

package redistest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// BuildsEnv names the environment variable that gives the folder of other
// server builds the version matrices run: one subfolder per build, holding
// redis-server or valkey-server. Default: the first shared/redis folder
// found beside a parent of the working directory (../shared/redis from the
// repository, as in CI).
const BuildsEnv = "RLBENCH_REDIS_BUILDS"

// Builds returns the server binaries under BuildsEnv (or the shared
// folder), sorted, or skips tb naming BuildsEnv: a user's machine has none.
func Builds(tb testing.TB) []string {
	tb.Helper()
	dir := os.Getenv(BuildsEnv)
	if dir == "" {
		dir = sharedBuilds()
	}
	var bins []string
	for _, pattern := range []string{"*/redis-server", "*/valkey-server"} {
		found, _ := filepath.Glob(filepath.Join(dir, pattern))
		bins = append(bins, found...)
	}
	if dir == "" || len(bins) == 0 {
		tb.Skipf("no server builds: set %s to a folder of <build>/redis-server (or valkey-server)", BuildsEnv)
	}
	slices.Sort(bins)
	return bins
}

// sharedBuilds returns the first shared/redis folder beside a parent of the
// working directory, or "".
func sharedBuilds() string {
	wd, _ := os.Getwd()
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if fi, err := os.Stat(filepath.Join(d, "shared", "redis")); err == nil && fi.IsDir() {
			return filepath.Join(d, "shared", "redis")
		}
	}
	return ""
}

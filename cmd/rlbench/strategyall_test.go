package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/serverinfo"
	"github.com/rlbench/rlbench/strategies"
)

// TestStrategyAllOnOlderServer is issue 22, item 19: --strategy all on
// Debian's Redis 7.0 exited 2 because the hash-field strategies need 7.4.
// all means every strategy the target supports: the others are left out,
// on a line naming them and why; a strategy named on the command line is
// still refused.
func TestStrategyAllOnOlderServer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	version := srv.Info().Version
	if serverinfo.VersionAtLeast(version, "7.4.0") {
		t.Skipf("redis-server on PATH is %s; the test needs one before 7.4 (Debian's is 7.0)", version)
	}
	base := []string{"--addr", srv.Addr(), "--client", "go-redis", "--clients", "2", "--keys", "2", "--duration", "100ms", "-q"}
	args := append([]string{"--strategy", "all", "--prefix", redistest.Prefix(t) + "all:"}, base...)
	res := mustRun(t, exitOK, args...)
	want := "--strategy all leaves out hash-incr-expire, hash-lua, hash-multi-nx: they need Redis >= 7.4.0 (redis " + version + " lacks HEXPIRE"
	if !strings.Contains(res.stderr, want) {
		t.Errorf("run(%q) stderr lacks %q:\n%s", args, want, res.stderr)
	}
	rows := tableRows(t, res.stdout)
	for _, s := range strategies.BuiltinNames() {
		_, ran := rows[s+"/go-redis"]
		if hash := strings.HasPrefix(s, "hash-"); ran == hash {
			t.Errorf("run(%q): %s ran = %t; want %t\n%s", args, s, ran, !hash, res.stdout)
		}
	}

	for _, list := range []string{"lua,hash-lua", "all,hash-lua"} {
		args := append([]string{"--strategy", list, "--prefix", redistest.Prefix(t) + "named:"}, base...)
		res := mustRun(t, exitUsage, args...)
		if !strings.Contains(res.stderr, "strategy hash-lua needs Redis >= 7.4.0") {
			t.Errorf("run(%q) stderr = %q; want the refusal of hash-lua", args, res.stderr)
		}
	}
}

// TestStrategyAllEveryBuild runs --strategy all on every server build of
// the version matrix (Redis 6.2, 7.4, Valkey 8.0 where they are): it
// succeeds, and each strategy either ran or is named on a line that says
// why it was left out.
func TestStrategyAllEveryBuild(t *testing.T) {
	t.Parallel()
	for _, bin := range redistest.Builds(t) {
		t.Run(filepath.Base(filepath.Dir(bin)), func(t *testing.T) {
			t.Parallel()
			args := []string{"--redis-server", bin, "--strategy", "all", "--client", "go-redis", "--clients", "2", "--keys", "2", "--duration", "50ms", "-q"}
			res := mustRun(t, exitOK, args...)
			rows := tableRows(t, res.stdout)
			var leftOut []string
			for line := range strings.Lines(res.stderr) {
				if _, list, ok := strings.Cut(line, "--strategy all leaves out "); ok {
					names, _, _ := strings.Cut(list, ":")
					leftOut = append(leftOut, strings.Split(names, ", ")...)
				}
			}
			for _, s := range strategies.BuiltinNames() {
				_, ran := rows[s+"/go-redis"]
				if out := slices.Contains(leftOut, s); ran == out {
					t.Errorf("%s: %s ran = %t, left out = %t; want one of them\nstderr:\n%s", bin, s, ran, out, res.stderr)
				}
			}
		})
	}
}

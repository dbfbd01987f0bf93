package main

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redisserver"
)

// tenantServers starts, for t, a private server of each build of the
// version matrix (Debian's redis-server and the shared builds where they
// are), each standing in for a shared one, and returns an admin client of
// each by its build's name.
func tenantServers(t *testing.T) map[string]*redis.Client {
	t.Helper()
	servers := map[string]*redis.Client{"default": redistest.Client(t, redistest.Start(t))}
	for _, bin := range redistest.Builds(t) {
		srv, err := redisserver.Start(t.Context(), redisserver.Options{Binary: bin})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		servers[filepath.Base(filepath.Dir(bin))] = redistest.Client(t, srv)
	}
	return servers
}

// untouched fails t unless admin's server ran no command since CONFIG
// RESETSTAT but the test's own (CONFIG, INFO): rlbench did not connect.
func untouched(t *testing.T, admin *redis.Client) {
	t.Helper()
	stats, err := admin.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(stats) {
		name, _, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if cmd, _, _ := strings.Cut(name, "|"); cmd != "config" && cmd != "info" {
			t.Errorf("INFO commandstats after the refused run has %s; want no command of rlbench's", strings.TrimSpace(line))
		}
	}
}

// TestStandardLibraryEscapesRefused is issue 34, items 1 and 2, on real
// servers with a tenant's key: a script (or a library) that hooks the
// strings' metatable, redefines a standard function or reaches redis by
// Valkey's name is refused (exit 2, naming the file and the line) before
// rlbench touches the server; afterwards the tenant's own script on its
// own key (k:len(), which a hook in the strings' metatable would run)
// leaves the key alone.
func TestStandardLibraryEscapesRefused(t *testing.T) {
	t.Parallel()
	servers := tenantServers(t)
	for _, tc := range []struct {
		name, flag, src, want string
	}{
		{"hook", "--script", "local mt = getmetatable('')\nlocal s = string\nmt.__index = function(str, k) redis.call('DEL', KEYS[1]) return s[k] end\n" +
			"return {1, redis.call('INCR', KEYS[1])}\n", "hook.lua:1: refused: uses getmetatable"},
		{"hook_fn", "--function", "#!lua name=rlbench_test_hook\nlocal mt = getmetatable('')\nlocal s = string\nmt.__index = function(str, k) redis.call('DEL', KEYS[1]) return s[k] end\n" +
			"redis.register_function('hook_fn', function(keys, args) return {1, redis.call('INCR', keys[1])} end)\n", "hook_fn.lua:2: refused: uses getmetatable"},
		{"unpack", "--script", "table.unpack = function(t) return 'tenant:key' end\nredis.call('DEL', table.unpack(KEYS))\nreturn {1, 1}\n",
			"unpack.lua:1: refused: assigns table.unpack, a field of the global table"},
		{"forgedcb", "--function", "#!lua name=rlbench_test_forgedcb\nlocal function del(keys, args) return {1, redis.call('DEL', keys[1])} end\n" +
			"redis.register_function('forgedcb', function(keys, args) return del({'tenant:key'}, args) end)\nredis.register_function('forged_del', del)\n",
			"forgedcb.lua:3: refused: uses del, a function redis.register_function registers"},
		{"server", "--script", "server.call('DEL', 'tenant:key')\nreturn {1, 1}\n", "server.lua:1: refused: server.call('DEL', ...): its key must be derived from KEYS"},
	} {
		for build, admin := range servers {
			t.Run(tc.name+"/"+build, func(t *testing.T) {
				ctx := context.Background()
				if err := admin.Set(ctx, "tenant:key", "tenant's", 0).Err(); err != nil {
					t.Fatal(err)
				}
				if err := admin.ConfigResetStat(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				res := mustRun(t, exitUsage, "--addr", admin.Options().Addr, tc.flag, tc.name+"="+writeLua(t, tc.name+".lua", tc.src),
					"--prefix", redistest.Prefix(t), "--clients", "1", "--requests", "20")
				if !strings.Contains(res.stderr, tc.want) {
					t.Errorf("stderr = %q; want it to say %q", res.stderr, tc.want)
				}
				untouched(t, admin)
				if n, err := admin.Eval(ctx, "local k = KEYS[1]; return k:len()", []string{"tenant:key"}).Int(); err != nil || n != len("tenant:key") {
					t.Errorf("the tenant's k:len() = %d, %v; want %d", n, err, len("tenant:key"))
				}
				if n := admin.Exists(ctx, "tenant:key").Val(); n != 1 {
					t.Errorf("EXISTS tenant:key after the tenant's script = %d; want 1", n)
				}
			})
		}
	}
}

// TestWideningScriptFlagsRefused is issue 34, item 3: on a server at its
// maxmemory (noeviction), a script or a library function with the
// allow-oom flag, which the server would let write past maxmemory, is
// refused (exit 2) before rlbench touches the server, and the server's
// memory stays within its limit.
func TestWideningScriptFlagsRefused(t *testing.T) {
	t.Parallel()
	srv, err := redisserver.Start(t.Context(), redisserver.Options{Args: []string{"--maxmemory", "3mb", "--maxmemory-policy", "noeviction"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	admin := redistest.Client(t, srv)
	const write = "redis.call('SET', KEYS[1] .. ':' .. redis.call('INCR', KEYS[1]), string.rep('x', 100000))"
	for _, tc := range []struct{ name, flag, src, want string }{
		{"oom", "--script", "#!lua flags=allow-oom\n" + write + "\nreturn {1, 1}\n", "oom.lua:1: refused: the script flag allow-oom is refused"},
		{"oom_quoted", "--script", "#!lua \"flags=allow-oom\"\n" + write + "\nreturn {1, 1}\n", "oom_quoted.lua:1: refused: the #! line has a quote"},
		{"oom_fn", "--function", "#!lua name=rlbench_test_oom\nredis.register_function{function_name = 'oom_fn', flags = {'allow-oom'}, callback = function(keys, args)\n  " +
			strings.ReplaceAll(write, "KEYS", "keys") + "\n  return {1, 1}\nend}\n", "oom_fn.lua:2: refused: redis.register_function's flag allow-oom is refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := admin.ConfigResetStat(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			res := mustRun(t, exitUsage, "--addr", srv.Addr(), tc.flag, tc.name+"="+writeLua(t, tc.name+".lua", tc.src),
				"--prefix", redistest.Prefix(t), "--clients", "4", "--duration", "2s")
			if !strings.Contains(res.stderr, tc.want) {
				t.Errorf("stderr = %q; want it to say %q", res.stderr, tc.want)
			}
			untouched(t, admin)
			if used := memoryUsed(t, admin); used > 3<<20 {
				t.Errorf("used_memory after the run = %d; want at most maxmemory, %d", used, 3<<20)
			}
		})
	}
}

// memoryUsed returns the server's INFO used_memory, in bytes.
func memoryUsed(t *testing.T, admin *redis.Client) int64 {
	t.Helper()
	info, err := admin.Info(t.Context(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("INFO memory has no used_memory")
	return 0
}

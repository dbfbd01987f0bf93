package acl_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rlbench/rlbench/acl"
	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/saturation"
	"github.com/rlbench/rlbench/serverinfo"
	"github.com/rlbench/rlbench/strategies"
)

// newClient returns a go-redis client logged in as user, closed at the end of tb.
func newClient(tb testing.TB, addr, user, password string) *redis.Client {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{
		Addr: addr, Username: user, Password: password, MaxRetries: -1,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}

// createUser runs SetUser's line on the server as admin.
func createUser(t *testing.T, admin *redis.Client, line string) {
	t.Helper()
	var args []any
	for _, w := range strings.Fields(line) {
		args = append(args, w)
	}
	if err := admin.Do(t.Context(), args...).Err(); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
}

// runAs does, as user, everything a run of strategy with every fault does:
// the pre-flight checks, decisions on both clients, the self-check, the
// faults that act through the connection, the audit and the clean-up.
func runAs(t *testing.T, addr, user, password, prefix, strategy string, cmds []acl.Command) {
	t.Helper()
	ctx := t.Context()
	rdb := newClient(t, addr, user, password)
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING as %s: %v", user, err)
	}
	if _, err := acl.Supported(ctx, rdb, cmds); err != nil {
		t.Errorf("Supported() as %s = %v; want nil", user, err)
	}
	if err := acl.Permitted(ctx, rdb, prefix+"probe", cmds); err != nil {
		t.Errorf("Permitted() as %s = %v; want nil", user, err)
	}
	const clientName = "rlbench-acl-test"
	for _, cname := range clients.Names {
		c, err := clients.New(cname, clients.Options{Addr: addr, Username: user, Password: password, ClientName: clientName})
		if err != nil {
			t.Fatalf("clients.New(%s) as %s: %v", cname, user, err)
		}
		s, err := strategies.New(strategy, strategies.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := s.(strategies.Preparer); ok {
			if err := p.Prepare(ctx, c); err != nil {
				t.Errorf("%s: Prepare as %s: %v", cname, user, err)
			}
		}
		for i := range 2 {
			if _, err := s.Decide(ctx, c, prefix+cname); err != nil {
				t.Errorf("%s: decision #%d as %s: %v", cname, i+1, user, err)
			}
		}
		c.Close()
	}
	if _, err := saturation.Take(ctx, rdb); err != nil {
		t.Errorf("self-check INFO as %s: %v", user, err)
	}
	if err := rdb.ConfigGet(ctx, "maxclients").Err(); err != nil {
		t.Errorf("CONFIG GET maxclients as %s: %v", user, err)
	}
	target := faults.Subject{Admin: rdb, ClientName: clientName, Capabilities: faults.Capabilities{Private: true}}
	for _, f := range []faults.Fault{{Kind: faults.ScriptFlush}, {Kind: faults.Stall, Arg: time.Millisecond}, {Kind: faults.KillClients}} {
		if _, err := faults.Inject(ctx, f, target); err != nil {
			t.Errorf("fault %s as %s: %v", f, user, err)
		}
	}
	if _, err := audit.Run(ctx, rdb, prefix, strategies.DefaultWindow); err != nil {
		t.Errorf("audit as %s: %v", user, err)
	}
	if n, err := audit.Cleanup(ctx, rdb, prefix); err != nil || n == 0 {
		t.Errorf("clean-up as %s = %d, %v; want the run's keys removed", user, n, err)
	}
	// And nothing more: other keys and other commands are refused.
	if err := rdb.Incr(ctx, "outside-the-prefix").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("INCR outside the prefix as %s = %v; want NOPERM", user, err)
	}
	if err := rdb.FlushAll(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("FLUSHALL as %s = %v; want NOPERM", user, err)
	}
}

// everyStrategy creates, for each strategy the server runs, the user that
// SetUser describes for it and every fault, and runs it with runAs.
func everyStrategy(t *testing.T, srv *redisserver.Server) {
	admin := redistest.Client(t, srv)
	for _, info := range strategies.All() {
		t.Run(info.Name, func(t *testing.T) {
			if !serverinfo.VersionAtLeast(srv.Info().RedisVersion, info.MinRedis) {
				t.Skipf("%s needs Redis %s; the server is %s %s", info.Name, info.MinRedis, srv.Info().Name, srv.Info().Version)
			}
			prefix := redistest.Prefix(t)
			cmds, err := acl.Commands(acl.Needs{Strategies: []string{info.Name}, Faults: faults.Kinds})
			if err != nil {
				t.Fatal(err)
			}
			user := "bench-" + info.Name
			createUser(t, admin, acl.SetUser(user, "pw-"+info.Name, prefix, cmds))
			runAs(t, srv.Addr(), user, "pw-"+info.Name, prefix, info.Name, cmds)
		})
	}
}

// TestUserRunsEveryStrategy proves the command lists complete: a user
// with exactly SetUser's line runs each strategy on both clients, with
// rlbench's own commands and every fault's.
func TestUserRunsEveryStrategy(t *testing.T) {
	t.Parallel()
	everyStrategy(t, redistest.Start(t))
}

// TestPermittedNamesTheMissingCommand: a user lacking one command, or the
// keys, is refused by the pre-flight check, which names the command and
// quotes the server.
func TestPermittedNamesTheMissingCommand(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	cmds, err := acl.Commands(acl.Needs{Strategies: []string{"lua"}, Faults: []string{faults.Stall}})
	if err != nil {
		t.Fatal(err)
	}
	lacking := slices.DeleteFunc(slices.Clone(cmds), func(c acl.Command) bool { return c.Name == "unlink" || c.Name == "client|pause" })
	createUser(t, admin, acl.SetUser("partial", "pw", prefix, lacking))
	rdb := newClient(t, srv.Addr(), "partial", "pw")

	err = acl.Permitted(t.Context(), rdb, prefix+"probe", cmds)
	var me *acl.MissingError
	if !errors.As(err, &me) || !me.Denied || !slices.Equal(me.Commands, []string{"client|pause", "unlink"}) {
		t.Fatalf("Permitted() = %v; want a MissingError denying client|pause and unlink", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "UNLINK (NOPERM") || !strings.Contains(msg, "CLIENT PAUSE (NOPERM") {
		t.Errorf("Permitted() = %q; want UNLINK and CLIENT PAUSE named with the server's NOPERM", msg)
	}
	// The keys: a probe key outside the prefix is refused too.
	err = acl.Permitted(t.Context(), rdb, "elsewhere", lacking)
	if !errors.As(err, &me) || !me.Denied || !slices.Contains(me.Commands, "incr") || !strings.Contains(err.Error(), "key") {
		t.Errorf("Permitted(key outside the prefix) = %v; want INCR denied for its key", err)
	}
	// Nothing ran: the probe key does not exist.
	if n, err := admin.Exists(t.Context(), prefix+"probe").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS probe key = %d, %v; want 0: the check must not write", n, err)
	}
}

func TestSupported(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	// Every strategy the server runs (the hash-field ones need 7.4).
	var names []string
	for _, info := range strategies.All() {
		if serverinfo.VersionAtLeast(srv.Info().RedisVersion, info.MinRedis) {
			names = append(names, info.Name)
		}
	}
	all, err := acl.Commands(acl.Needs{Strategies: names, Faults: faults.Kinds, Cluster: true, Sentinel: true, DB: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := acl.Supported(ctx, rdb, all); err != nil || !slices.Equal(acl.Names(got), acl.Names(all)) {
		t.Errorf("Supported(every command) on %s %s = %v, %v; want them all", srv.Info().Name, srv.Info().Version, acl.Names(got), err)
	}
	bogus := append(slices.Clone(all), acl.Command{Name: "nosuchcommand"}, acl.Command{Name: "client|nosuchsub"})
	var me *acl.MissingError
	if _, err := acl.Supported(ctx, rdb, bogus); !errors.As(err, &me) || me.Denied || !slices.Equal(me.Commands, []string{"nosuchcommand", "client|nosuchsub"}) {
		t.Errorf("Supported(unknown commands) = %v; want a MissingError naming both", err)
	}

	// A server without UNLINK (renamed away, as on Redis 3.2): DEL instead.
	old, err := redisserver.Start(ctx, redisserver.Options{Binary: os.Getenv(redistest.BinaryEnv), Args: []string{"--rename-command", "unlink", ""}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { old.Close() })
	got, err := acl.Supported(ctx, newClient(t, old.Addr(), "", ""), all)
	if err != nil || slices.Contains(acl.Names(got), "unlink") || !slices.Contains(acl.Names(got), "del") {
		t.Errorf("Supported() without UNLINK = %v, %v; want DEL in its place", acl.Names(got), err)
	}
}

// TestVersionMatrix runs, on every build: Supported and SupportedOptions
// for each strategy, which must find nothing missing where the strategy's
// MinRedis claims support and something missing where it does not (so the
// claim follows from the server), and each strategy as its least-privilege
// user.
func TestVersionMatrix(t *testing.T) {
	t.Parallel()
	for _, bin := range redistest.Builds(t) {
		t.Run(filepath.Base(filepath.Dir(bin)), func(t *testing.T) {
			t.Parallel()
			srv, err := redisserver.Start(t.Context(), redisserver.Options{Binary: bin})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			rdb := newClient(t, srv.Addr(), "", "")
			for _, info := range strategies.All() {
				cmds, err := acl.Commands(acl.Needs{Strategies: []string{info.Name}, Faults: faults.Kinds})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				_, err = acl.Supported(ctx, rdb, cmds)
				cancel()
				if err == nil {
					err = acl.SupportedOptions(t.Context(), rdb, redistest.Prefix(t)+"probe", acl.Options([]string{info.Name}))
				}
				claimed := serverinfo.VersionAtLeast(srv.Info().RedisVersion, info.MinRedis)
				t.Logf("%s on %s %s (MinRedis %s): %v", info.Name, srv.Info().Name, srv.Info().Version, info.MinRedis, err)
				switch {
				case claimed && err != nil:
					t.Errorf("%s on %s %s: Supported() = %v; want nil (MinRedis %s)", info.Name, srv.Info().Name, srv.Info().Version, err, info.MinRedis)
				case !claimed && err == nil:
					t.Errorf("%s on %s %s: Supported() and SupportedOptions() = nil; want what the server lacks below MinRedis %s", info.Name, srv.Info().Name, srv.Info().Version, info.MinRedis)
				}
			}
			everyStrategy(t, srv)
		})
	}
}

// TestHashFieldRefusedBefore74: on a server without hash-field TTLs (the
// 7.0 on PATH), the pre-flight check refuses each hash-field strategy,
// naming the commands the server lacks, the strategy and the version it
// needs.
func TestHashFieldRefusedBefore74(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	if serverinfo.VersionAtLeast(srv.Info().RedisVersion, "7.4.0") {
		t.Skipf("the server is %s %s, which has hash-field TTLs; set %s to a redis-server before 7.4", srv.Info().Name, srv.Info().Version, redistest.BinaryEnv)
	}
	rdb := redistest.Client(t, srv)
	// A run's own sequence, known to its registry alone, is named with
	// the version it needs too.
	reg := strategies.NewRegistry()
	if err := reg.RegisterSequence("mine-hash=HINCRBY {key} f 1 | HEXPIRE {key} {window} NX FIELDS 1 f"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hash-incr-expire", "hash-multi-nx", "hash-lua", "mine-hash"} {
		cmds, err := acl.Commands(acl.Needs{Strategies: []string{name}, Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		_, err = acl.Supported(t.Context(), rdb, cmds)
		var me *acl.MissingError
		if !errors.As(err, &me) || me.Denied || !slices.Contains(me.Commands, "hexpire") {
			t.Fatalf("Supported(%s) on %s = %v; want a MissingError naming hexpire", name, srv.Info().Version, err)
		}
		for _, want := range []string{"does not know HEXPIRE", "strategy " + name + " needs Redis >= 7.4.0"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Supported(%s) = %q; want it to say %q", name, err, want)
			}
		}
	}
}

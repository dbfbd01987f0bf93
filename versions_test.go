package rlbench_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/acl"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/serverinfo"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/verify"
	"github.com/rlbench/rlbench/workload"
)

// TestEveryBuild is the version matrix of docs/strategies.md: on each server build
// (Redis 6.2, 7.4, Valkey 8.0 in CI), `verify` of every strategy on both
// clients is as documented, a short load of every strategy the server runs
// completes without an error, and every other strategy is refused at
// pre-flight, before any write, naming what the server lacks.
func TestEveryBuild(t *testing.T) {
	t.Parallel()
	for _, bin := range redistest.Builds(t) {
		t.Run(filepath.Base(filepath.Dir(bin)), func(t *testing.T) {
			t.Parallel()
			t.Run("verify", func(t *testing.T) {
				t.Parallel()
				m, err := verify.Run(t.Context(), verify.Config{Target: rlbench.TargetSpec{RedisServer: bin}})
				if err != nil {
					t.Fatalf("verify.Run(%s) = %v", bin, err)
				}
				// A cell that could not judge (a loaded machine read too late
				// on every try) fails verify, but is not the strategy's fault.
				if len(m.Wrong()) > 0 || !m.Complete() {
					var b strings.Builder
					_ = verify.Text(m)(&b)
					t.Errorf("verify on %s %s: not as documented:\n%s", m.Server.Name, m.Server.Version, b.String())
				}
				if want := len(strategies.BuiltinNames()) * len(clients.Names); len(m.Rows) < want {
					t.Errorf("verify on %s: %d rows; want every strategy x client (%d)", bin, len(m.Rows), want)
				}
			})
			t.Run("load", func(t *testing.T) {
				t.Parallel()
				loadEveryStrategy(t, bin)
			})
		})
	}
}

// loadEveryStrategy runs a short load of each strategy on each client it
// supports, on a private server of bin: one run per client of the
// strategies the server's version claims, and one refused run for each of
// the others.
func loadEveryStrategy(t *testing.T, bin string) {
	srv, err := redisserver.Start(t.Context(), redisserver.Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	info := srv.Info()
	accepted := map[string][]string{} // by client
	var refused []string
	for _, s := range strategies.All() {
		switch {
		case s.Source != "": // a user script that another test registered
		case !serverinfo.VersionAtLeast(info.RedisVersion, s.MinRedis):
			refused = append(refused, s.Name)
		default:
			for _, c := range clients.Names {
				if s.Clients == nil || slices.Contains(s.Clients, c) {
					accepted[c] = append(accepted[c], s.Name)
				}
			}
		}
	}
	cfg := func(names []string, client string) rlbench.Config {
		return rlbench.Config{
			Strategies: names, Clients: []string{client}, Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}},
			Workload: workload.Config{Workers: 4, Keys: 10, Requests: 200, Prefix: redistest.Prefix(t)},
		}
	}
	for _, client := range clients.Names {
		rep, err := rlbench.Run(t.Context(), cfg(accepted[client], client), rlbench.Options{})
		if err != nil {
			t.Fatalf("Run(%v on %s) on %s %s = %v", accepted[client], client, info.Name, info.Version, err)
		}
		if len(rep.Runs) != len(accepted[client]) {
			t.Errorf("Run(%v on %s) on %s %s: %d cells; want %d", accepted[client], client, info.Name, info.Version, len(rep.Runs), len(accepted[client]))
		}
		for _, r := range rep.Runs {
			if r.Errors != 0 || r.Decisions != 200 {
				t.Errorf("%s/%s on %s %s: %d decisions, %d errors; want 200 and 0", r.Strategy, r.Client, info.Name, info.Version, r.Decisions, r.Errors)
			}
		}
	}
	for _, name := range refused {
		_, err := rlbench.Run(t.Context(), cfg([]string{name}, clients.Names[0]), rlbench.Options{})
		var missing *acl.MissingError
		if usageField(err) != "Strategies" || !errors.As(err, &missing) || missing.Denied {
			t.Errorf("Run(%s) on %s %s = %v; want a Strategies UsageError saying what the server lacks", name, info.Name, info.Version, err)
			continue
		}
		for _, c := range missing.Commands {
			if word := strings.ToUpper(strings.ReplaceAll(c, "|", " ")); !strings.Contains(err.Error(), word) {
				t.Errorf("Run(%s) on %s %s = %q; want it to name %s", name, info.Name, info.Version, err, word)
			}
		}
		t.Logf("%s on %s %s: %v", name, info.Name, info.Version, err)
	}
	if n := redistest.Client(t, srv).DBSize(t.Context()).Val(); n != 0 {
		t.Errorf("DBSIZE on %s %s after the runs = %d; want 0", info.Name, info.Version, n)
	}
}

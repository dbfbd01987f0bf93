package rlbench_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/proctest"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/workload"
)

// tenantLibrary is another tenant's library on the server, which no run
// may touch.
const tenantLibrary = "#!lua name=tenant\nredis.register_function('tenant_fn', function(keys, args) return 1 end)\n"

// libraryCodes returns the libraries on rdb, by name, with their code.
func libraryCodes(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	libs, err := rdb.FunctionList(t.Context(), redis.FunctionListQuery{WithCode: true}).Result()
	if err != nil {
		t.Fatalf("FUNCTION LIST: %v", err)
	}
	out := map[string]string{}
	for _, l := range libs {
		out[l.Name] = l.Code
	}
	return out
}

// TestFunctionLibraryLifecycle is issue 21, item 8: a run of the function
// strategy left library rlbench loaded and never said so. Now the client
// that loads it deletes it at the end and the report says so; a library
// loaded, with the same code, before the run is left as it was; another
// tenant's library is never touched.
func TestFunctionLibraryLifecycle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		preload  bool // rlbench's library is loaded before the run, by someone else
		wantLeft bool // ... and stays
		wantLog  string
	}{
		{name: "loaded by the run", wantLog: "library rlbench: loaded by rlbench, deleted at the end (FUNCTION DELETE)"},
		{name: "loaded before", preload: true, wantLeft: true, wantLog: "library rlbench: loaded, with the same code, before the run: left as it was"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			rdb := redistest.Client(t, srv)
			ctx := t.Context()
			if err := rdb.FunctionLoad(ctx, tenantLibrary).Err(); err != nil {
				t.Fatal(err)
			}
			var before string
			if tc.preload {
				before = preloadLibrary(t, srv.Addr())
			}
			var log bytes.Buffer
			rep, err := rlbench.Run(ctx, rlbench.Config{
				Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}, Strategies: []string{"function"}, Clients: clients.Names,
				Workload: workload.Config{Workers: 2, Keys: 5, Requests: 200, Prefix: redistest.Prefix(t)},
			}, rlbench.Options{Log: &log})
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
			libs := libraryCodes(t, rdb)
			if libs["tenant"] != tenantLibrary {
				t.Errorf("after the run, the tenant's library is %q; want it untouched", libs["tenant"])
			}
			if code, left := libs[strategies.FunctionLibrary]; left != tc.wantLeft || tc.preload && code != before {
				t.Errorf("after the run, library %s loaded: %t; want %t (as it was before the run)", strategies.FunctionLibrary, left, tc.wantLeft)
			}
			for _, r := range rep.Runs {
				want := []results.Library{{Name: strategies.FunctionLibrary, Loaded: !tc.preload, Deleted: !tc.preload}}
				if len(r.Libraries) != 1 || r.Libraries[0] != want[0] {
					t.Errorf("%s/%s: Libraries = %+v; want %+v", r.Strategy, r.Client, r.Libraries, want)
				}
			}
			if n := strings.Count(log.String(), tc.wantLog); n != len(clients.Names) {
				t.Errorf("the log says %q %d times; want once per client\n%s", tc.wantLog, n, log.String())
			}
			if text := cellText(t, rep, rep.Runs[0]); !strings.Contains(text, "function/go-redis "+tc.wantLog) {
				t.Errorf("the text report lacks %q:\n%s", "function/go-redis "+tc.wantLog, text)
			}
		})
	}
}

// preloadLibrary loads rlbench's library as another run (or the user)
// would, and leaves it there: its code.
func preloadLibrary(t *testing.T, addr string) string {
	t.Helper()
	c, err := clients.New("go-redis", clients.Options{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := strategies.New("function", strategies.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.(strategies.Preparer).Prepare(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	return libraryCodes(t, rdb)[strategies.FunctionLibrary]
}

// TestFunctionLibraryReloadReported is issue 21, item 8: after a tenant's
// FUNCTION FLUSH during the run, rlbench loaded its library again
// silently. The reload is counted, said in the summary and the JSON, and
// the library reloaded is deleted at the end.
func TestFunctionLibraryReloadReported(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	load, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	var rep *results.Report
	go func() {
		var err error
		rep, err = rlbench.Run(load, rlbench.Config{
			Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}, Strategies: []string{"function"},
			Workload: workload.Config{Workers: 2, Keys: 5, Duration: 2 * time.Minute, Prefix: redistest.Prefix(t)},
		}, rlbench.Options{})
		done <- err
	}()
	// The tenant flushes every library once the run has loaded rlbench's
	// and decides with it.
	waitFor(t, "library rlbench loaded", func() bool { _, ok := libraryCodes(t, rdb)[strategies.FunctionLibrary]; return ok })
	waitFor(t, "a decision", func() bool { return calls(t, rdb, "fcall") > 0 })
	if err := rdb.FunctionFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "library rlbench loaded again", func() bool { _, ok := libraryCodes(t, rdb)[strategies.FunctionLibrary]; return ok })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v; want it interrupted", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run still runs 60s after its interrupt")
	}
	if len(rep.Runs) != 1 || len(rep.Runs[0].Libraries) != 1 {
		t.Fatalf("Run gave %d runs (%+v); want 1 with its library", len(rep.Runs), rep.Runs)
	}
	if l := rep.Runs[0].Libraries[0]; l.Reloads < 1 || !l.Loaded || !l.Deleted {
		t.Errorf("Libraries[0] = %+v; want reloads >= 1, loaded and deleted", l)
	}
	var text bytes.Buffer
	if err := results.Text(rep)(&text); err != nil || !strings.Contains(text.String(), "vanished during the run") {
		t.Errorf("the text report does not say the library vanished:\n%s", text.String())
	}
	if _, left := libraryCodes(t, rdb)[strategies.FunctionLibrary]; left {
		t.Errorf("after the run, library %s is loaded; want it deleted", strategies.FunctionLibrary)
	}
}

// waitFor polls cond until it holds, for at most 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	proctest.WaitFor(t, what, cond)
}

// calls is the number of calls of cmd the server has served (INFO
// commandstats).
func calls(t *testing.T, rdb *redis.Client, cmd string) int64 {
	t.Helper()
	info, err := rdb.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(info, "cmdstat_"+cmd+":calls=")
	if !ok {
		return 0
	}
	var n int64
	for _, c := range rest {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// TestUserFunctionLibraryDeleted is TestFunctionLibraryLifecycle for a
// --function library of the user's: loaded by the run, deleted at its end.
func TestUserFunctionLibraryDeleted(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	if err := rdb.FunctionLoad(t.Context(), tenantLibrary).Err(); err != nil {
		t.Fatal(err)
	}
	const name, lib = "example_fixed_window", "rlbench_example"
	rep, err := rlbench.Run(t.Context(), rlbench.Config{
		Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}, Functions: []string{name + "=examples/fixed_window_function.lua"}, Strategies: []string{name},
		Workload: workload.Config{Workers: 2, Keys: 5, Requests: 200, Prefix: redistest.Prefix(t)},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	want := results.Library{Name: lib, Loaded: true, Deleted: true}
	if len(rep.Runs) != 1 || len(rep.Runs[0].Libraries) != 1 || rep.Runs[0].Libraries[0] != want {
		t.Errorf("Run's libraries = %+v; want [%+v]", rep.Runs, want)
	}
	libs := libraryCodes(t, rdb)
	if _, left := libs[lib]; left || libs["tenant"] != tenantLibrary {
		t.Errorf("after the run, FUNCTION LIST = %v; want only the tenant's library, untouched", libs)
	}
}

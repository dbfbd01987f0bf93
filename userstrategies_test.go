package rlbench_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/workload"
)

// TestLibraryClientRefused checks that a published library's strategy
// named on a client it does not run on is bad input, found before any
// server is opened, and that one "all" brings in is skipped.
func TestLibraryClientRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	for _, name := range []string{"redis_rate", "ulule", "throttled"} {
		// No server at all: validation comes first.
		cfg := rlbench.Config{Strategies: []string{name}, Clients: []string{"rueidis"}, Targets: []rlbench.TargetSpec{{RedisServer: "/nonexistent/redis-server"}}}
		_, err := rlbench.Run(context.Background(), cfg, rlbench.Options{})
		uerr, ok := errors.AsType[*rlbench.UsageError](err)
		if !ok || uerr.Field != "Clients" || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "go-redis") {
			t.Errorf("Run(%s on rueidis) error = %v; want a usage error of Clients naming %s and go-redis", name, err, name)
		}
	}
	cfg := rlbench.Config{
		Strategies: []string{"redis_rate"},
		Clients:    []string{"all"},
		Targets:    []rlbench.TargetSpec{{Addr: srv.Addr()}},
		Workload:   workload.Config{Workers: 2, Keys: 5, Duration: 200 * time.Millisecond, Prefix: prefix},
	}
	var log strings.Builder
	rep, err := rlbench.Run(context.Background(), cfg, rlbench.Options{Log: &log})
	if err != nil {
		t.Fatalf("Run(redis_rate on all) error: %v", err)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Client != "go-redis" || rep.Runs[0].Decisions == 0 {
		t.Errorf("Run(redis_rate on all) ran %d cells; want redis_rate/go-redis alone, with decisions", len(rep.Runs))
	}
	if want := "skipping redis_rate/rueidis"; !strings.Contains(log.String(), want) {
		t.Errorf("Run(redis_rate on all) log =\n%s\nwant it to contain %q", log.String(), want)
	}
	if n := rdb.DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("DBSIZE after the run = %d; want 0 (keys cleaned up)", n)
	}
}

// TestLibrariesUnderCrashes runs the published limiters and incr-expire
// under a crash rate through the whole runner, pre-flight included: each
// cell runs, the cell marks whose keys with no TTL are leaks rather than
// locked-out users (from its strategy's Info), and the closing warning
// says which.
func TestLibrariesUnderCrashes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := rlbench.Config{
		Strategies: []string{"throttled", "ulule", "redis_rate", "incr-expire"},
		Clients:    []string{"go-redis"},
		Limit:      1000000,
		Window:     1,
		Targets:    []rlbench.TargetSpec{{Addr: srv.Addr()}},
		Warmup:     time.Millisecond,
		// Many keys, so that most are requested once: a throttled key that
		// lost its EXPIRE gets a TTL on its next allowed request.
		Workload: workload.Config{Workers: 8, Keys: 100000, Duration: time.Second, Prefix: redistest.Prefix(t), CrashRate: 0.2},
	}
	rep, err := rlbench.Run(context.Background(), cfg, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	want := map[string]struct {
		leak     bool // ImmortalKeysLeak
		immortal bool // some key left with no TTL
	}{
		"throttled":   {leak: true, immortal: true},   // GCRA: SETEX on the next allowed request
		"ulule":       {leak: false, immortal: false}, // a fixed window that never heals, but one script
		"redis_rate":  {leak: true, immortal: false},  // GCRA, one script
		"incr-expire": {leak: false, immortal: true},  // the second seed's bug
	}
	if len(rep.Runs) != len(want) {
		t.Fatalf("Run made %d cells; want %d", len(rep.Runs), len(want))
	}
	for _, r := range rep.Runs {
		w := want[r.Strategy]
		if r.ImmortalKeysLeak != w.leak || (r.Audit.Immortal > 0) != w.immortal || r.Decisions == 0 {
			t.Errorf("%s: ImmortalKeysLeak %t, %d immortal keys, %d decisions; want %t, immortal %t, some decisions",
				r.Strategy, r.ImmortalKeysLeak, r.Audit.Immortal, r.Decisions, w.leak, w.immortal)
		}
	}
	var text strings.Builder
	if err := results.Text(rep)(&text); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`(?m)^IMMORTAL KEYS: incr-expire/go-redis left \d+ counters? with no TTL: those users are locked out forever\.$`,
		`(?m)^IMMORTAL KEYS: throttled/go-redis left \d+ keys? with no TTL: leaked \(.*\)\.$`,
	} {
		if !regexp.MustCompile(line).MatchString(text.String()) {
			t.Errorf("Text(report) =\n%s\nwant a line matching %s", text.String(), line)
		}
	}
}

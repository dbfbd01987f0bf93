package rlbench_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/internal/redistest"
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
		cfg := rlbench.Config{Strategies: []string{name}, Clients: []string{"rueidis"}, RedisServer: "/nonexistent/redis-server"}
		_, err := rlbench.Run(context.Background(), cfg, rlbench.Options{})
		uerr, ok := errors.AsType[*rlbench.UsageError](err)
		if !ok || uerr.Field != "Clients" || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "go-redis") {
			t.Errorf("Run(%s on rueidis) error = %v; want a usage error of Clients naming %s and go-redis", name, err, name)
		}
	}
	cfg := rlbench.Config{
		Strategies: []string{"redis_rate"},
		Clients:    []string{"all"},
		Addr:       srv.Addr(),
		Workload:   workload.Config{Clients: 2, Keys: 5, Duration: 200 * time.Millisecond, Prefix: prefix},
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

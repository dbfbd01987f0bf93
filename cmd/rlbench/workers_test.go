package main

import (
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/redistest"
)

// TestTooManyWorkersNamesWorkers checks that the pre-flight refusal of more
// go-redis workers than the server's maxclients allows names the flag as
// the help does, --workers, whichever of its names the user typed: it said
// --clients, the alias.
func TestTooManyWorkersNamesWorkers(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	if err := rdb.ConfigSet(t.Context(), "maxclients", "20").Err(); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--workers", "--clients"} {
		args := []string{"--addr", srv.Addr(), "--prefix", redistest.Prefix(t) + flag[2:] + ":", "--client", "go-redis", flag, "50", "--requests", "100"}
		res := runCLI(t, t.Context(), args...)
		if res.code != exitUsage || !strings.HasPrefix(res.stderr, "rlbench: --workers: ") || !strings.Contains(res.stderr, "lower --workers") || strings.Contains(res.stderr, "--clients") || !strings.Contains(res.stderr, "maxclients 20") {
			t.Errorf("rlbench %q = exit %d, stderr %q; want %d, naming --workers (and not --clients) and maxclients 20", args, res.code, res.stderr, exitUsage)
		}
	}
}

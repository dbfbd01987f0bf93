package rlbench_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/workload"
)

// injector is a Progress writer that, at its first write (the load's
// monitor, after the pre-flight's empty-prefix check and before the
// cell's audit, which waits for the monitor to stop), writes keys under
// the cell's prefix with a client of the test's own.
type injector struct {
	once   sync.Once
	inject func() error
	err    error
}

func (w *injector) Write(p []byte) (int, error) {
	w.once.Do(func() { w.err = w.inject() })
	return len(p), nil
}

// TestInRunAuditSplitsStaleKeys checks that the cell's end-of-run audit of
// a stamped model splits its immortal keys into stale (the window in the
// name has ended) and live, exactly, for each stamp a model writes: keys
// written by the test into the cell's keyspace during its load, shaped as
// the model shapes its own (whose keys all keep their TTL). The text
// report counts the stale keys as leaked memory, never as users locked
// out; a hashed stamp is reported as one the audit cannot classify.
func TestInRunAuditSplitsStaleKeys(t *testing.T) {
	t.Parallel()
	const window = 60
	cur := time.Now().Unix() / window * window
	// stale: windows that ended; live: windows to come (so that none ends
	// during the test).
	stale := []int64{cur - 10*window, cur - 2*window, 1_000_000_020}
	live := []int64{cur + 10*window, cur + 100*window}
	tests := []struct {
		name, strategy string
		// key is the model's name for counter K stamped with a window
		// starting at start (Unix seconds).
		key func(k string, start int64) string
		// hashed: the names hold no readable stamp (hashed, or not the
		// last number).
		hashed bool
		// sequence is the --sequence spec of strategy, if it is one.
		sequence string
	}{
		{name: "unix", strategy: "envoy-ratelimit", key: func(k string, s int64) string { return k + "_" + strconv.FormatInt(s, 10) }},
		{name: "index", strategy: "rack-attack", key: func(k string, s int64) string { return k + ":" + strconv.FormatInt(s/window, 10) }},
		{name: "unix-ms", strategy: "kong", key: func(k string, s int64) string { return k + ":" + strconv.FormatInt(s*1000, 10) + ":minute" }},
		{name: "unix-ns", strategy: "mennanov", key: func(k string, s int64) string { return k + "/" + strconv.FormatInt(s*1e9, 10) }},
		{name: "hashed", strategy: "django-ratelimit", key: func(k string, s int64) string { return k + ":" + strconv.FormatInt(s, 16) }, hashed: true},
		{name: "index", strategy: "seq-index", sequence: "INCR {key}:{index} | EXPIRE {key}:{index} {window}",
			key: func(k string, s int64) string { return k + ":" + strconv.FormatInt(s/window, 10) }},
		// The window's length after the stamp: the last number is not it.
		{name: "unix", strategy: "seq-hidden", sequence: "INCR {key}:{stamp}:{window} | EXPIRE {key}:{stamp}:{window} {window}",
			key: func(k string, s int64) string { return k + ":" + strconv.FormatInt(s, 10) + ":60" }, hashed: true},
	}
	srv := redistest.Start(t)
	for _, tc := range tests {
		t.Run(tc.strategy, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rdb := redistest.Client(t, srv)
			prefix := redistest.Prefix(t)
			cellPrefix := keyspace.Cell(prefix, tc.strategy, "go-redis")
			k := workload.KeyName(cellPrefix, 900)
			w := &injector{inject: func() error {
				_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
					for _, s := range append(append([]int64{}, stale...), live...) {
						p.Set(ctx, tc.key(k, s), 7, 0)
					}
					p.Set(ctx, cellPrefix+"nostamp", 7, 0)                                  // no number: live
					p.Set(ctx, tc.key(k, cur-5*window), 7, time.Hour)                       // stale window, but a TTL
					p.Set(ctx, tc.key(workload.KeyName(cellPrefix, 901), stale[0]), 500, 0) // stale, over the limit
					return nil
				})
				return err
			}}
			cfg := rlbench.Config{
				Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}, Strategies: []string{tc.strategy}, Clients: []string{"go-redis"},
				Window: window, Limit: 100,
				Workload: workload.Config{Workers: 2, Keys: 5, Requests: 200, Prefix: prefix},
			}
			if tc.sequence != "" {
				cfg.Sequences = []string{tc.strategy + "=" + tc.sequence}
			}
			rep, err := rlbench.Run(ctx, cfg, rlbench.Options{Progress: w})
			if err != nil || w.err != nil {
				t.Fatalf("Run(%s) = %v; inject: %v", tc.strategy, err, w.err)
			}
			a := rep.Runs[0].Audit
			wantImmortal := int64(len(stale) + len(live) + 2)
			if a.Immortal != wantImmortal {
				t.Errorf("%s: audit immortal = %d; want %d (the keys the test wrote with no TTL)", tc.strategy, a.Immortal, wantImmortal)
			}
			if a.Stamp != tc.name {
				t.Errorf("%s: audit stamp = %q; want %q", tc.strategy, a.Stamp, tc.name)
			}
			if tc.sequence != "" && a.Keys <= wantImmortal+1 {
				t.Errorf("%s: audit keys = %d; want the sequence's own keys too", tc.strategy, a.Keys)
			}
			var text bytes.Buffer
			if err := results.Text(rep)(&text); err != nil {
				t.Fatal(err)
			}
			if tc.hashed {
				if a.Stale != nil {
					t.Errorf("%s: audit stale = %d; want nil (a hashed stamp cannot be read)", tc.strategy, *a.Stale)
				}
				if !strings.Contains(text.String(), "so the audit cannot tell stale immortal keys from live ones") {
					t.Errorf("%s: text report does not say its stale keys cannot be told:\n%s", tc.strategy, text.String())
				}
				return
			}
			wantStale := int64(len(stale) + 1)
			if a.Stale == nil || *a.Stale != wantStale {
				t.Fatalf("%s: audit stale = %v; want %d", tc.strategy, a.Stale, wantStale)
			}
			label := tc.strategy + "/go-redis"
			for _, want := range []string{
				strconv.FormatInt(wantImmortal, 10) + "(stale:" + strconv.FormatInt(wantStale, 10) + ")",
				"STALE KEYS: " + label + " left " + strconv.FormatInt(wantStale, 10) + " keys of ended windows with no TTL",
				label + " left " + strconv.FormatInt(wantImmortal-wantStale, 10) + " keys with no TTL",
			} {
				if !strings.Contains(text.String(), want) {
					t.Errorf("%s: text report lacks %q:\n%s", tc.strategy, want, text.String())
				}
			}
			if strings.Contains(text.String(), "locked out forever") {
				t.Errorf("%s: text report says users are locked out:\n%s", tc.strategy, text.String())
			}
		})
	}
}

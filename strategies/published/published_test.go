package published_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/clienttest"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/strategies/published"
	"github.com/rlbench/rlbench/workload"
)

var update = flag.Bool("update", false, "rewrite observed.go with the commands observed")

var libraries = []string{"redis_rate", "ulule", "throttled"}

func connect(t *testing.T, srv *redisserver.Server, cname string, workers int) clients.Conn {
	t.Helper()
	return clienttest.Connect(t, srv, cname, workers)
}

// independentCount counts the keys under prefix and those with no TTL by
// SCAN and PTTL, without package audit.
func independentCount(t *testing.T, rdb *redis.Client, prefix string) (keys, immortal int64) {
	t.Helper()
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		keys++
		if p, err := rdb.Do(ctx, "PTTL", k).Int64(); err != nil {
			t.Fatalf("PTTL %s: %v", k, err)
		} else if p == -1 {
			immortal++
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	return keys, immortal
}

// TestRegistered checks each library's Info: on go-redis only, with its
// module, and listed after the built-in strategies.
func TestRegistered(t *testing.T) {
	t.Parallel()
	names := strategies.Names()
	if got := names[len(names)-3:]; !slices.Equal(got, libraries) {
		t.Errorf("Names() ends with %q; want %q", got, libraries)
	}
	for _, name := range libraries {
		info, err := strategies.Lookup(name)
		if err != nil {
			t.Fatalf("Lookup(%q) error: %v", name, err)
		}
		if !info.Supports("go-redis") || info.Supports("rueidis") || info.Module == "" || info.Commands == "" {
			t.Errorf("Lookup(%q) = Clients %q, Module %q, Commands %q; want go-redis only, a module and commands", name, info.Clients, info.Module, info.Commands)
		}
	}
}

// TestLimits runs each library on a private server: exactly limit allowed
// then rejected, and the audit's figures match an independent count.
func TestLimits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	const limit = 5
	for _, name := range libraries {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := connect(t, srv, "go-redis", 1)
			s, err := strategies.New(name, strategies.Config{Limit: limit, Window: 10})
			if err != nil {
				t.Fatal(err)
			}
			prefix := redistest.Prefix(t)
			for k := range 3 {
				key := fmt.Sprintf("%s{%d}", prefix, k)
				for i := 1; i <= limit+2; i++ {
					d, err := s.Decide(ctx, c, key)
					if err != nil {
						t.Fatalf("Decide(%s) #%d error: %v", key, i, err)
					}
					if want := i <= limit; d.Allowed != want {
						t.Errorf("Decide(%s) #%d = %+v; want allowed %t", key, i, d, want)
					}
				}
			}
			res, err := audit.Run(ctx, rdb, prefix, 10)
			if err != nil {
				t.Fatal(err)
			}
			keys, immortal := independentCount(t, rdb, prefix)
			if res.Keys != keys || res.Immortal != immortal || keys != 3 || immortal != 0 {
				t.Errorf("audit.Run = %d keys, %d immortal; SCAN+PTTL = %d, %d; want 3 keys, 0 immortal in both", res.Keys, res.Immortal, keys, immortal)
			}
		})
	}
}

// TestRueidisRefused checks that a library strategy on rueidis fails with
// ErrNeedsGoRedis and writes nothing.
func TestRueidisRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	c := connect(t, srv, "rueidis", 1)
	for _, name := range libraries {
		s, _ := strategies.New(name, strategies.Config{Limit: 5, Window: 10})
		if _, err := s.Decide(context.Background(), c, redistest.Prefix(t)+"{k}"); !errors.Is(err, published.ErrNeedsGoRedis) {
			t.Errorf("%s on rueidis: Decide error = %v; want ErrNeedsGoRedis", name, err)
		}
	}
	if n := rdb.DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("DBSIZE = %d; want 0", n)
	}
}

// TestCrash runs each library under a crash rate, through the client hook
// alone: throttled, whose SET NX and EXPIRE are two round trips, leaves
// keys with no TTL; redis_rate and ulule, one script each, leave none.
func TestCrash(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	for _, tc := range []struct {
		name  string
		leaks bool
	}{
		{"throttled", true},
		{"redis_rate", false},
		{"ulule", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := connect(t, srv, "go-redis", 8)
			s, err := strategies.New(tc.name, strategies.Config{Limit: 1000000, Window: 1})
			if err != nil {
				t.Fatal(err)
			}
			prefix := redistest.Prefix(t)
			var rec results.Recorder
			// Many keys, so that most are requested once: throttled gives a
			// key that lost its EXPIRE a TTL on its next allowed request.
			cfg := workload.Config{Workers: 8, Keys: 100000, Duration: 1500 * time.Millisecond, Prefix: prefix, CrashRate: 0.2, Seed: 1}
			if _, err := workload.Run(context.Background(), cfg, s, c, &rec, nil); err != nil {
				t.Fatalf("workload.Run error: %v", err)
			}
			run := results.NewRun(&rec, time.Second)
			keys, immortal := independentCount(t, rdb, prefix)
			res, err := audit.Run(context.Background(), rdb, prefix, 1)
			if err != nil {
				t.Fatal(err)
			}
			if res.Immortal != immortal {
				t.Errorf("audit.Run immortal = %d; SCAN+PTTL = %d; want equal", res.Immortal, immortal)
			}
			crashed := run.ErrorKinds[results.KindCrashed]
			t.Logf("%s: %d decisions, %d crashed, %d keys, %d immortal", tc.name, run.Decisions, crashed, keys, immortal)
			if got := immortal > 0; got != tc.leaks {
				t.Errorf("%s under --crash-rate 0.2: %d immortal keys of %d (%d crashed); want leaks %t", tc.name, immortal, keys, crashed, tc.leaks)
			}
			if tc.leaks && crashed == 0 {
				t.Errorf("%s: no decision crashed; want some", tc.name)
			}
		})
	}
}

// TestObservedCommands records, with a strategies.Tap, the round trips
// each library sends in its decisions (a new key, the same key again, past
// the limit, after a SCRIPT FLUSH is not included: it is a fault) and
// checks them against Observed, which --list-strategies prints.
func TestObservedCommands(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	got := map[string]string{}
	for _, name := range libraries {
		c := connect(t, srv, "go-redis", 1)
		s, err := strategies.New(name, strategies.Config{Limit: 2, Window: 10})
		if err != nil {
			t.Fatal(err)
		}
		var seqs []string
		var cur []string
		tap := &strategies.Tap{Sent: func(rt string) { cur = append(cur, rt) }}
		tctx := strategies.WithTap(ctx, tap)
		// A warm-up decision on another key: libraries that load their
		// scripts do it once, outside the decisions shown.
		if _, err := s.Decide(ctx, c, redistest.Prefix(t)+name+":{warm}"); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			cur = nil
			if _, err := s.Decide(tctx, c, redistest.Prefix(t)+name+":{k}"); err != nil {
				t.Fatalf("%s: Decide #%d error: %v", name, i+1, err)
			}
			if seq := strings.Join(cur, "; "); !slices.Contains(seqs, seq) {
				seqs = append(seqs, seq)
			}
		}
		got[name] = strings.Join(seqs, " | ")
	}
	if *update {
		writeObserved(t, got)
		return
	}
	for _, name := range libraries {
		if got[name] != published.Observed[name] {
			t.Errorf("%s sent %q; Observed says %q (go test -run TestObservedCommands -update rewrites it)", name, got[name], published.Observed[name])
		}
	}
}

func writeObserved(t *testing.T, got map[string]string) {
	t.Helper()
	src, err := os.ReadFile("observed.go")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range got {
			if !yield(n) {
				return
			}
		}
	})
	width := 0
	for _, n := range names {
		width = max(width, len(n)+3)
	}
	for _, n := range names {
		fmt.Fprintf(&b, "\t%-*s %q,\n", width, fmt.Sprintf("%q:", n), got[n])
	}
	re := regexp.MustCompile(`(?s)(var Observed = map\[string\]string\{\n).*?(\n\})`)
	out := re.ReplaceAllString(string(src), "${1}"+strings.TrimSuffix(strings.ReplaceAll(b.String(), "$", "$$"), "\n")+"${2}")
	if err := os.WriteFile("observed.go", []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

package strategies_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/clienttest"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/strategies"
)

// TestFixedWindow checks, for every fixed-window strategy on every client,
// the three behaviours every fixed-window counter must show against a real server:
// the first request creates the counter with the window's TTL, requests up
// to the limit are allowed and those past it rejected, and after the window
// the counter starts again.
func TestFixedWindow(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	const limit, window = 3, 1
	for _, info := range keyStrategies() {
		if !info.FixedWindow {
			continue // TestNotFixedWindow
		}
		for _, cname := range clients.Names {
			t.Run(info.Name+"/"+cname, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				c := connect(t, srv, cname, 1)
				s := newStrategy(t, c, info.Name, strategies.Config{Limit: limit, Window: window})
				// The window's checks judge readings made inside the window: a
				// try whose readings a loaded machine delayed past it cannot
				// judge, and runs again on a fresh key (3 tries).
				var key string
				for try := 1; ; try++ {
					key = fmt.Sprintf("%sk%d", redistest.Prefix(t), try)
					sent := time.Now()
					errs := firstWindow(ctx, s, c, rdb, key, limit, window)
					if len(errs) == 0 {
						break
					}
					if time.Since(sent) < window*time.Second || try == 3 {
						t.Fatalf("%s (try %d)", strings.Join(errs, "; "), try)
					}
				}

				// After the window: a new counter, allowed, with a fresh TTL.
				waitGone(t, rdb, key)
				sent := time.Now()
				d, err := s.Decide(ctx, c, key)
				if err != nil || !d.Allowed {
					t.Fatalf("Decide after expiry = %+v, %v; want allowed", d, err)
				}
				n, _ := rdb.Get(ctx, key).Int64()
				ttl := rdb.PTTL(ctx, key).Val()
				if (n != 1 || ttl <= 0 || ttl > window*time.Second) && time.Since(sent) < window*time.Second {
					t.Errorf("counter in new window = %d, PTTL %v; want 1, in (0, %ds]", n, ttl, window)
				}
			})
		}
	}
}

// firstWindow sends limit+2 requests to key, the first into a fresh
// window, and returns what was not as a fixed window of limit per window
// seconds must be: the first allowed, its counter at 1 with a TTL of at
// most the window, the limit allowed and the rest rejected, the TTL kept.
func firstWindow(ctx context.Context, s strategies.Strategy, c strategies.Client, rdb *redis.Client, key string, limit int64, window int64) []string {
	var errs []string
	d, err := s.Decide(ctx, c, key)
	if err != nil || !d.Allowed {
		return []string{fmt.Sprintf("first Decide = %+v, %v; want allowed", d, err)}
	}
	if n, _ := rdb.Get(ctx, key).Int64(); n != 1 {
		errs = append(errs, fmt.Sprintf("counter after first request = %d; want 1", n))
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > time.Duration(window)*time.Second {
		errs = append(errs, fmt.Sprintf("PTTL after first request = %v; want in (0, %ds]", ttl, window))
	}
	for i := int64(2); i <= limit+2; i++ {
		d, err := s.Decide(ctx, c, key)
		if err != nil {
			return append(errs, fmt.Sprintf("Decide #%d error: %v", i, err))
		}
		if want := i <= limit; d.Allowed != want {
			errs = append(errs, fmt.Sprintf("Decide #%d allowed = %t; want %t (count %d)", i, d.Allowed, want, d.Count))
		}
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 {
		errs = append(errs, fmt.Sprintf("PTTL after %d requests = %v; want > 0", limit+2, ttl))
	}
	return errs
}

// waitGone polls until key no longer exists, for at most 3 seconds.
func waitGone(t *testing.T, rdb *redis.Client, key string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for rdb.Exists(context.Background(), key).Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("key %q still exists after 3s; want it expired", key)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		strategy string
		cfg      strategies.Config
		want     error
	}{
		{"unknown name", "nope", strategies.Config{}, strategies.ErrUnknownStrategy},
		{"negative limit", "lua", strategies.Config{Limit: -1}, strategies.ErrInvalidLimit},
		{"negative window", "lua", strategies.Config{Window: -5}, strategies.ErrInvalidWindow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := strategies.New(tc.strategy, tc.cfg)
			if !errors.Is(err, tc.want) {
				t.Errorf("New(%q, %+v) error = %v; want %v", tc.strategy, tc.cfg, err, tc.want)
			}
		})
	}
	_, err := strategies.New("nope", strategies.Config{})
	if !strings.Contains(err.Error(), "multi-nx") {
		t.Errorf("New(\"nope\") error = %q; want it to list the accepted names", err)
	}
}

func TestScriptSHA1(t *testing.T) {
	t.Parallel()
	// SHA-1 of "return 1", as SCRIPT LOAD reports it.
	const want = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
	if got := strategies.NewScript("return 1").SHA1; got != want {
		t.Errorf("NewScript(\"return 1\").SHA1 = %s; want %s", got, want)
	}
}

// connect returns a client of the named kind to srv, closed in t.Cleanup.
func connect(t *testing.T, srv *redisserver.Server, cname string, workers int) clients.Conn {
	t.Helper()
	return clienttest.Connect(t, srv, cname, workers)
}

// newStrategy builds the named strategy and, as a run does, prepares it on c.
func newStrategy(t *testing.T, c strategies.Client, name string, cfg strategies.Config) strategies.Strategy {
	t.Helper()
	s, err := strategies.New(name, cfg)
	if err != nil {
		t.Fatalf("New(%q, %+v) error: %v", name, cfg, err)
	}
	if p, ok := s.(strategies.Preparer); ok {
		if err := p.Prepare(context.Background(), c); err != nil {
			t.Fatalf("%s: Prepare() error: %v", name, err)
		}
	}
	return s
}

// stateKeys returns the keys a strategy keeps for the limit at key.
func stateKeys(strategy, key string) []string {
	if strategy == "sliding-log" {
		return []string{key, strategies.SlidingLogSeqKey(key)}
	}
	return []string{key}
}

// checkPTTL fails the test unless every key has a TTL in (0, max].
func checkPTTL(t *testing.T, rdb *redis.Client, keys []string, max time.Duration, when string) {
	t.Helper()
	for _, key := range keys {
		// go-redis keeps PTTL's -1 and -2 replies as raw Durations.
		if ttl := rdb.PTTL(context.Background(), key).Val(); ttl <= 0 || ttl > max {
			t.Errorf("PTTL(%q) %s = %v; want in (0, %v]", key, when, ttl, max)
		}
	}
}

// TestNotFixedWindow checks, for every strategy that is not a fixed window
// (gcra, sliding-log, token-bucket) on every client: the first request is
// allowed, a burst admits exactly the limit and then rejects, every key the
// strategy keeps has a TTL after every decision (never more than the window,
// and for token-bucket a sub-second refill time that did not round to 0),
// gcra and token-bucket admit one more request once one emission interval
// (window/limit) has passed where sliding-log admits none, and once the
// keys expire the full limit is admitted again.
func TestNotFixedWindow(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	const limit, window = 3, 1
	ran := 0
	for _, info := range strategies.All() {
		if info.FixedWindow {
			continue // TestFixedWindow
		}
		ran++
		for _, cname := range clients.Names {
			t.Run(info.Name+"/"+cname, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				c := connect(t, srv, cname, 1)
				s := newStrategy(t, c, info.Name, strategies.Config{Limit: limit, Window: window})
				key := redistest.Prefix(t) + "{k}"
				keys := stateKeys(info.Name, key)

				// The first request: allowed, and the state has a TTL. The
				// token bucket's refill-to-full time after one request is
				// window/limit (334 ms), which whole seconds would round to 0.
				firstAt := time.Now()
				d, err := s.Decide(ctx, c, key)
				if err != nil || !d.Allowed || d.Count != 1 {
					t.Fatalf("first Decide = %+v, %v; want allowed with count 1", d, err)
				}
				first := window * time.Second
				if info.Name == "token-bucket" {
					first = (window*time.Second + limit*time.Millisecond - 1) / limit
				}
				checkPTTL(t, rdb, keys, first, "after the first request")

				// A burst: requests 2..limit allowed, then rejected, and
				// the TTL holds after each decision.
				for i := 2; i <= limit+2; i++ {
					d, err := s.Decide(ctx, c, key)
					if err != nil {
						t.Fatalf("Decide #%d error: %v", i, err)
					}
					if want := i <= limit; d.Allowed != want {
						t.Errorf("Decide #%d allowed = %t; want %t (count %d)", i, d.Allowed, want, d.Count)
					}
					if want := d.Count <= limit; d.Allowed != want {
						t.Errorf("Decide #%d = %+v; want allowed exactly when count <= %d", i, d, limit)
					}
					checkPTTL(t, rdb, keys, window*time.Second, fmt.Sprintf("after request #%d", i))
				}

				// 400 ms after the first request, between one and two
				// emission intervals (333 ms): gcra and token-bucket have
				// room for exactly one more request; sliding-log has none
				// until the first entry is a window old.
				time.Sleep(time.Until(firstAt.Add(400 * time.Millisecond)))
				refilled := 1
				if info.Name == "sliding-log" {
					refilled = 0
				}
				for i := 1; i <= refilled+1; i++ {
					d, err := s.Decide(ctx, c, key)
					if err != nil {
						t.Fatalf("Decide #%d at 400ms error: %v", i, err)
					}
					if want := i <= refilled; d.Allowed != want {
						t.Errorf("Decide #%d at 400ms allowed = %t; want %t (count %d)", i, d.Allowed, want, d.Count)
					}
					checkPTTL(t, rdb, keys, window*time.Second, fmt.Sprintf("after request #%d at 400ms", i))
				}

				// Once the state expires (at most one window later), the
				// whole limit is admitted again.
				for _, k := range keys {
					waitGone(t, rdb, k)
				}
				for i := 1; i <= limit+1; i++ {
					d, err := s.Decide(ctx, c, key)
					if err != nil {
						t.Fatalf("Decide #%d after expiry error: %v", i, err)
					}
					if want := i <= limit; d.Allowed != want {
						t.Errorf("Decide #%d after expiry allowed = %t; want %t (count %d)", i, d.Allowed, want, d.Count)
					}
					checkPTTL(t, rdb, keys, window*time.Second, fmt.Sprintf("after request #%d after expiry", i))
				}
			})
		}
	}
	if ran != 3 {
		t.Errorf("strategies that are not fixed windows = %d; want 3 (gcra, sliding-log, token-bucket)", ran)
	}
}

// TestConcurrentBurst checks, for every atomic strategy on every client,
// that concurrent requests for one key are each counted: 20 goroutines
// released at once against a limit of 10 get exactly 10 admissions. For
// sliding-log the log must also hold 10 entries: requests that share a
// microsecond must not collapse into one.
func TestConcurrentBurst(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	// A long window, so that no refill or expiry happens during the burst
	// even on a slow machine.
	const limit, window, requests = 10, 10, 20
	for _, info := range keyStrategies() {
		if !info.Atomic {
			continue
		}
		for _, cname := range clients.Names {
			t.Run(info.Name+"/"+cname, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				c := connect(t, srv, cname, requests)
				s := newStrategy(t, c, info.Name, strategies.Config{Limit: limit, Window: window})
				key := redistest.Prefix(t) + "{k}"

				var allowed, errs atomic.Int64
				var wg sync.WaitGroup
				start := make(chan struct{})
				for range requests {
					wg.Go(func() {
						<-start
						d, err := s.Decide(ctx, c, key)
						switch {
						case err != nil:
							errs.Add(1)
							t.Errorf("Decide error: %v", err)
						case d.Allowed:
							allowed.Add(1)
						}
					})
				}
				close(start)
				wg.Wait()
				if got := allowed.Load(); got != limit || errs.Load() != 0 {
					t.Errorf("%d concurrent Decide: %d allowed, %d errors; want %d allowed, 0 errors", requests, got, errs.Load(), limit)
				}
				if info.Name == "sliding-log" {
					if n := rdb.ZCard(ctx, key).Val(); n != limit {
						t.Errorf("ZCARD(log) after the burst = %d; want %d", n, limit)
					}
				}
				checkPTTL(t, rdb, stateKeys(info.Name, key), window*time.Second, "after the burst")
			})
		}
	}
}

// TestHealing checks what each fixed-window strategy does with a counter
// that already lost its TTL (seeded with SET k 5 and no expiry): the ones
// documented to heal give it a TTL on the next request; the others leave it
// immortal. Plain lua is one of the others: n is never 1 again.
func TestHealing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	const limit, window = 3, 1
	for _, info := range keyStrategies() {
		if !info.FixedWindow {
			continue
		}
		for _, cname := range clients.Names {
			t.Run(info.Name+"/"+cname, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				c := connect(t, srv, cname, 1)
				s := newStrategy(t, c, info.Name, strategies.Config{Limit: limit, Window: window})
				key := redistest.Prefix(t) + "{k}"
				if err := rdb.Set(ctx, key, 5, 0).Err(); err != nil {
					t.Fatalf("SET %s 5: %v", key, err)
				}

				d, err := s.Decide(ctx, c, key)
				if err != nil || d.Allowed {
					t.Fatalf("Decide on a counter at 5 = %+v, %v; want rejected", d, err)
				}
				ttl := rdb.PTTL(ctx, key).Val()
				if info.Heals {
					if ttl <= 0 || ttl > window*time.Second {
						t.Errorf("PTTL after one request on an immortal counter = %v; want in (0, %ds] (Heals is true)", ttl, window)
					}
				} else if ttl != -1 {
					t.Errorf("PTTL after one request on an immortal counter = %v; want -1, still immortal (Heals is false)", ttl)
				}
			})
		}
	}
}

// TestWrongType checks, for every strategy beyond the seeds' on every
// client, that a key already holding another type (a hash, a list) gives a
// strategies.ReplyError with prefix WRONGTYPE and is left exactly as it was,
// with no other key created beside it. For token-bucket, whose own type is
// a hash, the hash case is the script's own WRONGTYPE error: a hash without
// bucket fields is not taken over.
func TestWrongType(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	seeds := []struct {
		name string
		seed func(ctx context.Context, key string) error
		dump func(ctx context.Context, key string) string
	}{
		{
			name: "hash",
			seed: func(ctx context.Context, key string) error { return rdb.HSet(ctx, key, "f", "v").Err() },
			dump: func(ctx context.Context, key string) string { return fmt.Sprint(rdb.HGetAll(ctx, key).Val()) },
		},
		{
			name: "list",
			seed: func(ctx context.Context, key string) error { return rdb.RPush(ctx, key, "a", "b").Err() },
			dump: func(ctx context.Context, key string) string { return fmt.Sprint(rdb.LRange(ctx, key, 0, -1).Val()) },
		},
	}
	for _, name := range []string{"lua-heal", "function", "gcra", "sliding-log", "token-bucket"} {
		for _, cname := range clients.Names {
			for _, seed := range seeds {
				t.Run(name+"/"+cname+"/"+seed.name, func(t *testing.T) {
					t.Parallel()
					ctx := context.Background()
					c := connect(t, srv, cname, 1)
					s := newStrategy(t, c, name, strategies.Config{Limit: 3, Window: 1})
					prefix := redistest.Prefix(t)
					key := prefix + "{k}"
					if err := seed.seed(ctx, key); err != nil {
						t.Fatalf("seed %s: %v", seed.name, err)
					}
					before := seed.dump(ctx, key)

					d, err := s.Decide(ctx, c, key)
					var re strategies.ReplyError
					if !errors.As(err, &re) || re.Prefix() != "WRONGTYPE" {
						t.Errorf("Decide on a %s = %+v, %v; want a ReplyError with prefix WRONGTYPE", seed.name, d, err)
					}
					if after := seed.dump(ctx, key); after != before {
						t.Errorf("%s after Decide = %s; want %s, unchanged", seed.name, after, before)
					}
					if ttl := rdb.PTTL(ctx, key).Val(); ttl != -1 {
						t.Errorf("PTTL(%s) after Decide = %v; want -1, unchanged", seed.name, ttl)
					}
					if keys := rdb.Keys(ctx, prefix+"*").Val(); len(keys) != 1 {
						t.Errorf("keys under the test prefix after Decide = %q; want only %q", keys, key)
					}
				})
			}
		}
	}
}

// TestFunctionReloads checks that the function strategy works without
// Prepare and after FUNCTION FLUSH: it loads its library on "Function not
// found" and calls again. It has a server of its own, since FUNCTION FLUSH
// is server-wide.
func TestFunctionReloads(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	for _, cname := range clients.Names {
		c := connect(t, srv, cname, 1)
		s, err := strategies.New("function", strategies.Config{Limit: 3, Window: 1})
		if err != nil {
			t.Fatalf("New(\"function\") error: %v", err)
		}
		key := redistest.Prefix(t) + cname + ":{k}"
		for i, step := range []string{"without Prepare", "after FUNCTION FLUSH"} {
			if err := rdb.FunctionFlush(ctx).Err(); err != nil {
				t.Fatalf("FUNCTION FLUSH: %v", err)
			}
			d, err := s.Decide(ctx, c, key)
			if err != nil || !d.Allowed || d.Count != int64(i+1) {
				t.Errorf("%s: Decide %s = %+v, %v; want allowed with count %d", cname, step, d, err, i+1)
			}
		}
		libs, err := rdb.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: strategies.FunctionLibrary}).Result()
		if err != nil || len(libs) != 1 || len(libs[0].Functions) != 1 || libs[0].Functions[0].Name != strategies.FunctionName {
			t.Errorf("FUNCTION LIST LIBRARYNAME %s = %+v, %v; want one library with function %s", strategies.FunctionLibrary, libs, err, strategies.FunctionName)
		}
	}
}

// TestAllOrder checks the order in which All lists the strategies, and that
// each documents what --list-strategies prints.
func TestAllOrder(t *testing.T) {
	t.Parallel()
	want := []string{"naive", "incr-expire", "multi-nx", "lua", "lua-heal", "function", "hash-incr-expire", "hash-multi-nx", "hash-lua", "gcra", "sliding-log", "token-bucket"}
	if got := strategies.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %q; want %q", got, want)
	}
	for _, info := range strategies.All() {
		if info.Summary == "" || info.Commands == "" || info.MinRedis == "" {
			t.Errorf("Lookup(%q) = Summary %q, Commands %q, MinRedis %q; want all set", info.Name, info.Summary, info.Commands, info.MinRedis)
		}
		if info.Heals && !info.FixedWindow {
			t.Errorf("Lookup(%q) Heals = true, FixedWindow = false; want Heals only on fixed windows", info.Name)
		}
	}
}

func TestSelect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		names []string
		want  []string
		err   error
	}{
		{"as given", []string{"lua", "naive"}, []string{"lua", "naive"}, nil},
		{"repeats dropped", []string{"lua", "lua"}, []string{"lua"}, nil},
		{"all", []string{"all"}, strategies.BuiltinNames(), nil},
		{"all and a name", []string{"lua", "all"}, append([]string{"lua"}, slices.DeleteFunc(strategies.BuiltinNames(), func(n string) bool { return n == "lua" })...), nil},
		{"unknown beside all", []string{"all", "nope"}, nil, strategies.ErrUnknownStrategy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := strategies.Select(tc.names)
			if !errors.Is(err, tc.err) || !slices.Equal(got, tc.want) {
				t.Errorf("Select(%q) = %q, %v; want %q, %v", tc.names, got, err, tc.want, tc.err)
			}
		})
	}
}

package deployed_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/clienttest"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
	_ "github.com/rlbench/rlbench/strategies/deployed"
	"github.com/rlbench/rlbench/topology"
	"github.com/rlbench/rlbench/verify"
	"github.com/rlbench/rlbench/workload"
)

// models are the strategies package deployed registers.
var models = []string{"envoy-ratelimit", "rack-attack", "rails-cache", "python-limits", "kong", "django-ratelimit", "laravel", "rate-limit-redis", "spring-gateway", "bucket4j", "mennanov"}

const window = 60 // seconds: long, so that a test's decisions share one window

func connect(t *testing.T, srv *redisserver.Server, cname string, workers int) clients.Conn {
	t.Helper()
	return clienttest.Connect(t, srv, cname, workers)
}

// keysUnder lists the keys that start with prefix, by SCAN.
func keysUnder(t *testing.T, rdb *redis.Client, prefix string) []string {
	t.Helper()
	return redistest.KeysUnder(t, rdb, prefix)
}

// immortalUnder counts the keys under prefix with no TTL, by SCAN and PTTL.
func immortalUnder(t *testing.T, rdb *redis.Client, prefix string) (immortal []string, keys int) {
	t.Helper()
	all := keysUnder(t, rdb, prefix)
	for _, k := range all {
		p, err := rdb.Do(context.Background(), "PTTL", k).Int64()
		if err != nil {
			t.Fatalf("PTTL %s: %v", k, err)
		}
		if p == -1 {
			immortal = append(immortal, k)
		}
	}
	return immortal, len(all)
}

// djangoKey is django-ratelimit's key for K at ts, from core.py's
// _get_window and _make_cache_key (hashing K and the window's end).
func djangoKey(k string, ts int64) string {
	w := ts - ts%window + int64(crc32.ChecksumIEEE([]byte(k)))%window
	if w < ts {
		w += window
	}
	sum := sha256.Sum256([]byte(k + strconv.FormatInt(w, 10)))
	return k + ":" + hex.EncodeToString(sum[:])
}

// waitForRoom waits until key's window (Info.WindowEnd, or the epoch's
// multiples of window) has at least 10 s left, so that a test's decisions
// all fall in one.
func waitForRoom(t *testing.T, info strategies.Info, key string) {
	t.Helper()
	now := time.Now()
	end := now.Truncate(window * time.Second).Add(window * time.Second)
	if info.WindowEnd != nil {
		end = info.WindowEnd(key, window, now)
	}
	if left := end.Sub(now); left < 10*time.Second {
		time.Sleep(left + 100*time.Millisecond)
	}
}

// otherKeys are the suffixes of the keys a model writes beside its counter.
var otherKeys = map[string][]string{"laravel": {":timer"}, "spring-gateway": {".timestamp"}}

// springTTL is request_rate_limiter.lua's TTL in ms for the test's limit
// of 5 per window: floor(capacity / rate * 2) seconds, in doubles as Lua
// computes it.
var springTTL = int64(math.Floor(5/(5.0/window)*2)) * 1000

// decisionTests are the sequences read from each model's source, for
// TestCommandsPerDecision.
var decisionTests = []struct {
	model       string
	first, then []string                           // round trips of the first and the second decision
	key         func(k string, t time.Time) string // the key the source writes at t
	ttl         func(t time.Time) (lo, hi int64)   // its PTTL range, in ms, after a decision at t; nil: no TTL
}{
	{
		// fixed_cache_impl.go pipelineAppend: INCRBY, EXPIRE unit, one PipeDo;
		// cache_key.go: ..._<(now/divider)*divider>.
		"envoy-ratelimit", []string{"INCRBY+EXPIRE"}, []string{"INCRBY+EXPIRE"},
		func(k string, t time.Time) string { return fmt.Sprintf("%s_%d", k, t.Unix()/window*window) },
		func(time.Time) (int64, int64) { return window*1000 - 2000, window * 1000 },
	},
	{
		// redis_proxy.rb increment: pipelined incrby, expire; cache.rb:
		// key with now / period, expires_in period - now % period + 1.
		"rack-attack", []string{"INCRBY+EXPIRE"}, []string{"INCRBY+EXPIRE"},
		func(k string, t time.Time) string { return fmt.Sprintf("%s:%d", k, t.Unix()/window) },
		func(t time.Time) (int64, int64) {
			want := window - t.Unix()%window + 1
			return (want - 2) * 1000, want * 1000
		},
	},
	{
		// redis_cache_store.rb increment: incrby, then write_key_expiry:
		// ttl, expire when negative; three round trips.
		"rails-cache", []string{"INCRBY", "TTL", "EXPIRE"}, []string{"INCRBY", "TTL"},
		func(k string, _ time.Time) string { return k },
		func(time.Time) (int64, int64) { return window*1000 - 2000, window * 1000 },
	},
	{
		// incr_expire.lua through redis-py's Script: one EVALSHA; no stamp.
		"python-limits", []string{"EVALSHA"}, []string{"EVALSHA"},
		func(k string, _ time.Time) string { return k },
		func(time.Time) (int64, int64) { return window*1000 - 2000, window * 1000 },
	},
	{
		// policies/init.lua usage: red:eval (EVAL), EXPIRE period on
		// the first; get_local_key: ...:<period start, ms>:<period>.
		"kong", []string{"EVAL"}, []string{"EVAL"},
		func(k string, t time.Time) string { return fmt.Sprintf("%s:%d:minute", k, t.Unix()/window*window*1000) },
		func(time.Time) (int64, int64) { return window*1000 - 2000, window * 1000 },
	},
	{
		// ThrottleRequests: tooManyAttempts (GET), then hit: add timer
		// (EVAL), add (EVAL), INCRBY; each its own round trip.
		"laravel", []string{"GET", "EVAL", "EVAL", "INCRBY"}, []string{"GET", "EVAL", "EVAL", "INCRBY"},
		func(k string, _ time.Time) string { return k },
		func(time.Time) (int64, int64) { return window*1000 - 2000, window * 1000 },
	},
	{
		// lib.ts retryableIncrement: EVALSHA; scripts.ts: PEXPIRE windowMs.
		"rate-limit-redis", []string{"EVALSHA"}, []string{"EVALSHA"},
		func(k string, _ time.Time) string { return k },
		func(time.Time) (int64, int64) { return window*1000 - 2000, window * 1000 },
	},
	{
		// core.py get_usage: cache.add (SET NX EX period+5), then
		// cache.incr: EXISTS, INCRBY; separate round trips.
		"django-ratelimit", []string{"SET NX EX"}, []string{"SET NX EX", "EXISTS", "INCRBY"},
		func(k string, t time.Time) string { return djangoKey(k, t.Unix()) },
		func(time.Time) (int64, int64) { return (window+5)*1000 - 2000, (window + 5) * 1000 },
	},
	{
		// RedisRateLimiter.isAllowed: redisTemplate.execute, EVALSHA (EVAL
		// on NOSCRIPT); getKeys: <K>.tokens and <K>.timestamp;
		// request_rate_limiter.lua: SETEX floor(capacity / rate * 2).
		"spring-gateway", []string{"EVALSHA"}, []string{"EVALSHA"},
		func(k string, _ time.Time) string { return k + ".tokens" },
		func(time.Time) (int64, int64) { return springTTL - 2000, springTTL },
	},
	{
		// DefaultBucketProxy.execute: TryConsumeCommand's GET finds no
		// bucket, CreateInitialStateAndExecuteCommand's GET, then EVAL of
		// SET NX; then GET, EVAL of the compare-and-swap. No TTL (the
		// default expiration strategy, none).
		"bucket4j", []string{"GET", "GET", "EVAL"}, []string{"GET", "EVAL"},
		func(k string, _ time.Time) string { return k },
		nil,
	},
	{
		// fixedwindow.go Increment: Pipelined Incr, PExpire(rate - now.Sub(window)).
		"mennanov", []string{"INCR+PEXPIRE"}, []string{"INCR+PEXPIRE"},
		func(k string, t time.Time) string {
			return fmt.Sprintf("%s/%d", k, t.Truncate(window*time.Second).UnixNano())
		},
		func(t time.Time) (int64, int64) {
			end := t.Truncate(window * time.Second).Add(window * time.Second)
			left := end.Sub(t).Milliseconds()
			return left - 2000, left
		},
	},
}

// TestCommandsPerDecision checks each model against the sequence read from
// its source: the round trips a strategies.Tap sees on a fresh key's first
// decision and on the next, the key's name (stamped as the source stamps
// it) and its TTL (the source's arithmetic), on both clients.
func TestCommandsPerDecision(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	for _, tc := range decisionTests {
		for _, cname := range clients.Names {
			t.Run(tc.model+"/"+cname, func(t *testing.T) {
				t.Parallel()
				info, err := strategies.Lookup(tc.model)
				if err != nil {
					t.Fatal(err)
				}
				s, err := strategies.New(tc.model, strategies.Config{Limit: 5, Window: window})
				if err != nil {
					t.Fatal(err)
				}
				c := connect(t, srv, cname, 1)
				prefix := redistest.Prefix(t)
				key := prefix + "{0}"
				var sent []string
				ctx := strategies.WithTap(context.Background(), &strategies.Tap{Sent: func(rt string) { sent = append(sent, rt) }})
				// A warm-up decision on another key loads a script, once.
				if _, err := s.Decide(context.Background(), c, prefix+"{warm}"); err != nil {
					t.Fatal(err)
				}
				waitForRoom(t, info, key)
				at := time.Now()
				for i, want := range [][]string{tc.first, tc.then} {
					sent = nil
					d, err := s.Decide(ctx, c, key)
					if err != nil {
						t.Fatalf("Decide #%d error: %v", i+1, err)
					}
					if !slices.Equal(sent, want) || !d.Allowed || d.Count != int64(i+1) {
						t.Errorf("Decide #%d sent %q, = %+v; want %q, allowed, count %d", i+1, sent, d, want, i+1)
					}
				}
				wantKey := tc.key(key, at)
				want := []string{wantKey}
				for _, suffix := range otherKeys[tc.model] {
					want = append(want, key+suffix)
				}
				slices.Sort(want)
				if got := keysUnder(t, rdb, key); !slices.Equal(got, want) {
					t.Fatalf("keys after two decisions = %q; want %q", got, want)
				}
				p, err := rdb.Do(context.Background(), "PTTL", wantKey).Int64()
				if err != nil {
					t.Fatal(err)
				}
				if tc.ttl == nil {
					if p != -1 {
						t.Errorf("PTTL %s = %d; want -1 (no TTL)", wantKey, p)
					}
					return
				}
				if lo, hi := tc.ttl(at); p <= lo || p > hi {
					t.Errorf("PTTL %s = %dms; want in (%d, %d]", wantKey, p, lo, hi)
				}
			})
		}
	}
}

// TestCrash runs each model under --crash-rate through the client hook
// alone and counts keys with no TTL with a plain client: rails-cache, whose
// EXPIRE is a round trip after INCRBY and TTL, leaks, and its next
// request gives each key a TTL back; bucket4j, which sets no TTL by
// default, leaves every key immortal, crash or not, and no request gives
// one back; the scripts (cut mid-request: all or
// nothing runs), the pipelined models (one round trip,
// which a crash cannot cut) and django-ratelimit (SET NX EX creates the key
// with its TTL; a crash after it writes nothing) leave none.
func TestCrash(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	for _, model := range models {
		for _, cname := range clients.Names {
			t.Run(model+"/"+cname, func(t *testing.T) {
				t.Parallel()
				c := connect(t, srv, cname, 4)
				s, err := strategies.New(model, strategies.Config{Limit: 1000000, Window: window})
				if err != nil {
					t.Fatal(err)
				}
				prefix := redistest.Prefix(t)
				var rec results.Recorder
				// Many keys, so that most are requested once: rails-cache
				// gives a key that lost its EXPIRE a TTL on its next request.
				cfg := workload.Config{Workers: 4, Keys: 100000, Duration: time.Second, Prefix: prefix, CrashRate: 0.2, Seed: 1}
				if _, err := workload.Run(context.Background(), cfg, s, c, &rec, nil); err != nil {
					t.Fatalf("workload.Run error: %v", err)
				}
				run := results.NewRun(&rec, time.Second)
				immortal, keys := immortalUnder(t, rdb, prefix)
				crashed := run.ErrorKinds[results.KindCrashed]
				t.Logf("%s/%s: %d decisions, %d crashed, %d keys, %d immortal", model, cname, run.Decisions, crashed, keys, len(immortal))
				leaks := model == "rails-cache" || model == "bucket4j"
				if got := len(immortal) > 0; got != leaks {
					t.Errorf("under --crash-rate 0.2: %d immortal keys of %d (%d crashed); want leaks %t", len(immortal), keys, crashed, leaks)
				}
				if !leaks {
					return
				}
				if model == "bucket4j" {
					bucket4jNeverHeals(t, rdb, s, c, prefix, immortal, keys)
					return
				}
				// rails-cache heals: one more request on each gives it a TTL.
				for _, k := range immortal {
					if _, err := s.Decide(context.Background(), c, k); err != nil {
						t.Fatalf("Decide(%s) error: %v", k, err)
					}
				}
				if after, _ := immortalUnder(t, rdb, prefix); len(after) != 0 {
					t.Errorf("after one request each, %d of %d immortal keys still have no TTL; want 0 (it heals)", len(after), len(immortal))
				}
			})
		}
	}
}

// bucket4jNeverHeals checks that every one of the keys bucket4j wrote is
// immortal, and that one more request on some of them leaves them so.
func bucket4jNeverHeals(t *testing.T, rdb *redis.Client, s strategies.Strategy, c clients.Conn, prefix string, immortal []string, keys int) {
	t.Helper()
	if len(immortal) != keys {
		t.Errorf("%d of %d keys immortal; want all (no TTL by default)", len(immortal), keys)
	}
	for _, k := range immortal[:min(len(immortal), 100)] {
		if _, err := s.Decide(context.Background(), c, k); err != nil {
			t.Fatalf("Decide(%s) error: %v", k, err)
		}
	}
	if after, _ := immortalUnder(t, rdb, prefix); len(after) != len(immortal) {
		t.Errorf("after one more request on some, %d of %d keys immortal; want all (it never heals)", len(after), len(immortal))
	}
}

// TestRegistered checks each model's Info: cited, on every client, its
// commands in ACLCommands, and listed after the other strategies.
func TestRegistered(t *testing.T) {
	t.Parallel()
	names := strategies.Names()
	for _, name := range models {
		info, err := strategies.Lookup(name)
		if err != nil {
			t.Fatalf("Lookup(%q) error: %v", name, err)
		}
		if !strings.Contains(info.Summary, "model of") || !strings.Contains(info.Summary, "commit") || info.Clients != nil || len(info.ACLCommands) == 0 {
			t.Errorf("Lookup(%q) = Summary %q, Clients %q, ACLCommands %q; want a cited model on every client with its commands", name, info.Summary, info.Clients, info.ACLCommands)
		}
		if info.Heals && !info.FixedWindow || info.Stamp != "" && info.FixedWindow {
			t.Errorf("Lookup(%q): Heals %t, FixedWindow %t, Stamp %q; want heals only on fixed windows, and no stamped fixed window", name, info.Heals, info.FixedWindow, info.Stamp)
		}
	}
	if got := names[len(names)-len(models):]; !slices.Equal(got, models) {
		t.Errorf("Names() ends with %q; want the models, %q, after the others", got, models)
	}
}

// TestVerify runs rlbench verify's checks on every model on both clients
// against a private server: every cell as the model's Info documents it,
// and the cells its source decides as its source implies.
func TestVerify(t *testing.T) {
	t.Parallel()
	m, err := verify.Run(t.Context(), verify.Config{Target: topology.Spec{RedisServer: os.Getenv(redistest.BinaryEnv)}, Prefix: redistest.Prefix(t), Strategies: models})
	if err != nil {
		t.Fatalf("verify.Run error: %v", err)
	}
	var text strings.Builder
	if err := verify.Text(m)(&text); err != nil {
		t.Fatal(err)
	}
	// A cell that could not judge (every try read too late on a loaded
	// machine) fails verify, but is not the model's fault.
	if len(m.Wrong()) > 0 || !m.Complete() {
		t.Errorf("verify of the models is not as documented: %v\n%s", m.Wrong(), text.String())
	}
	want := map[string]verify.Outcome{
		// INCRBY, TTL and EXPIRE are three round trips: a client lost after
		// INCRBY leaves the key with no TTL; the next request heals it.
		"rails-cache/" + verify.CheckCrash: verify.Leaks, "rails-cache/" + verify.CheckHealing: verify.Pass,
		// SET NX EX creates the key with its TTL; a crash after it writes nothing.
		"django-ratelimit/" + verify.CheckCrash: verify.Pass,
		// One pipeline each: no gap between round trips to die in.
		"envoy-ratelimit/" + verify.CheckCrash: verify.Pass, "rack-attack/" + verify.CheckCrash: verify.Pass,
		"mennanov/" + verify.CheckCrash: verify.Pass,
		// One script each: INCR and EXPIRE when 1 never heal; PTTL < 0 does.
		"python-limits/" + verify.CheckHealing: verify.Leaks, "rate-limit-redis/" + verify.CheckHealing: verify.Pass,
		"python-limits/" + verify.CheckNoscript: verify.Pass, "kong/" + verify.CheckNoscript: verify.NotApplicable,
		// One script, both TTLs on every call, twice the fill time: within
		// its TTLWindows; its state is beside K, never at it.
		"spring-gateway/" + verify.CheckCrash: verify.Pass, "spring-gateway/" + verify.CheckFirst: verify.Pass,
		"spring-gateway/" + verify.CheckNoscript: verify.Pass, "spring-gateway/" + verify.CheckWrongType: verify.NotApplicable,
		// No TTL by default: every bucket leaks, crash or not; GET refuses a
		// hash or a list, and a crash after it writes nothing.
		"bucket4j/" + verify.CheckFirst: verify.Leaks, "bucket4j/" + verify.CheckCrash: verify.Leaks,
		"bucket4j/" + verify.CheckWrongType: verify.Pass, "bucket4j/" + verify.CheckNoscript: verify.NotApplicable,
		// Stamped: the window is the clock's, the counter not at K.
		"envoy-ratelimit/" + verify.CheckHealing: verify.NotApplicable, "django-ratelimit/" + verify.CheckWrongType: verify.NotApplicable,
	}
	for _, r := range m.Rows {
		for _, c := range r.Cells {
			if w, ok := want[r.Strategy+"/"+c.Check]; ok && c.Outcome != w && !c.TooLate {
				t.Errorf("%s %s = %s (%s); want %s", r.Label(), c.Check, c.Outcome, c.Note, w)
			}
		}
	}
	t.Logf("\n%s", text.String())
}

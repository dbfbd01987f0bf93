package audit_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/internal/redistest"
)

// window is the rate-limit window, in seconds, used by the tests.
const window = 60

// seedInside writes keys under prefix of every kind Run tells apart and
// returns the Result Run should report for them.
func seedInside(t *testing.T, rdb redis.Cmdable, prefix string) audit.Result {
	t.Helper()
	ctx := t.Context()
	pipe := rdb.Pipeline()
	for i := range 3 {
		pipe.Set(ctx, fmt.Sprintf("%simmortal:%d", prefix, i), i, 0)
	}
	pipe.HSet(ctx, prefix+"immortal:hash", "f", "v") // any type counts, not just strings
	for i := range 5 {
		pipe.Set(ctx, fmt.Sprintf("%sshort:%d", prefix, i), i, window/2*time.Second)
	}
	// PTTL can only shrink from window*1000 ms, so this key is never over.
	pipe.Set(ctx, prefix+"exactly-window", "v", window*time.Second)
	for i := range 2 {
		pipe.Set(ctx, fmt.Sprintf("%slong:%d", prefix, i), i, 10*window*time.Second)
	}
	pipe.Set(ctx, prefix+"just-over", "v", window*time.Second+time.Minute)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("seed keys under %q: %v", prefix, err)
	}
	return audit.Result{Keys: 13, Immortal: 4, TTLOverWindow: 3}
}

// seedOutside writes each key in keys with no TTL and value "outside:"+key.
func seedOutside(t *testing.T, rdb redis.Cmdable, keys []string) {
	t.Helper()
	for _, key := range keys {
		if err := rdb.Set(t.Context(), key, "outside:"+key, 0).Err(); err != nil {
			t.Fatalf("SET %q: %v", key, err)
		}
	}
}

// countIndependently walks the whole keyspace with a plain SCAN (no MATCH),
// keeps the keys that start with prefix and reads each PTTL on its own.
func countIndependently(t *testing.T, rdb *redis.Client, prefix string) audit.Result {
	t.Helper()
	ctx := t.Context()
	var res audit.Result
	seen := map[string]bool{}
	for _, key := range allKeys(t, rdb) {
		if !strings.HasPrefix(key, prefix) || seen[key] {
			continue
		}
		seen[key] = true
		ttl, err := rdb.Do(ctx, "PTTL", key).Int64()
		if err != nil {
			t.Fatalf("PTTL %q: %v", key, err)
		}
		res.Keys++
		switch {
		case ttl == -1:
			res.Immortal++
		case ttl == -2:
			res.Vanished++
		case ttl > window*1000:
			res.TTLOverWindow++
		}
	}
	return res
}

// allKeys returns every key in the database, sorted, by a plain SCAN.
func allKeys(t *testing.T, rdb *redis.Client) []string {
	t.Helper()
	return redistest.KeysUnder(t, rdb, "")
}

func TestRunAndCleanup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		prefix string // "" means redistest.Prefix(t)
		// outside are keys that must never be counted or deleted: they share
		// a leading substring with prefix, contain it, or match the glob the
		// prefix would be if its special characters were not escaped.
		outside []string
	}{
		{
			name:    "short prefix",
			prefix:  "p:",
			outside: []string{"p", "pp:x", "x:p:y", "P:x", "p;x"},
		},
		{
			name:    "glob characters",
			prefix:  "a*[b]?:",
			outside: []string{"a*[b]?", "azzb!:k", "ab?:k", "a*[b]:k", "x:a*[b]?:y"},
		},
		{
			name:    "backslash",
			prefix:  `a\b:`,
			outside: []string{"ab:k", `a\\b:k`, `a\b`, `x:a\b:`},
		},
		{
			name:    "test prefix",
			prefix:  "",
			outside: []string{"rlbench-test:TestRunAndCleanup_test_prefix", "rlbench-test:TestRunAndCleanup_test_prefixx:k", "rlbench-test:other:k"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			rdb := redistest.Client(t, srv)
			ctx := t.Context()
			prefix := tc.prefix
			if prefix == "" {
				prefix = redistest.Prefix(t)
			}
			want := seedInside(t, rdb, prefix)
			seedOutside(t, rdb, tc.outside)

			if indep := countIndependently(t, rdb, prefix); indep != want {
				t.Fatalf("independent count under %q = %+v; want the seeded %+v", prefix, indep, want)
			}
			got, err := audit.Run(ctx, rdb, prefix, window)
			if err != nil {
				t.Fatalf("Run(%q, %d) error: %v", prefix, window, err)
			}
			if got != want {
				t.Errorf("Run(%q, %d) = %+v; want %+v", prefix, window, got, want)
			}

			deleted, err := audit.Cleanup(ctx, rdb, prefix)
			if err != nil {
				t.Fatalf("Cleanup(%q) error: %v", prefix, err)
			}
			if deleted != want.Keys {
				t.Errorf("Cleanup(%q) = %d; want %d", prefix, deleted, want.Keys)
			}
			wantLeft := append([]string(nil), tc.outside...)
			sort.Strings(wantLeft)
			if left := allKeys(t, rdb); strings.Join(left, "\n") != strings.Join(wantLeft, "\n") {
				t.Errorf("keys after Cleanup(%q) = %q; want only the outside keys %q", prefix, left, wantLeft)
			}
			for _, key := range tc.outside {
				val, err := rdb.Get(ctx, key).Result()
				ttl, ttlErr := rdb.PTTL(ctx, key).Result()
				if val != "outside:"+key || err != nil || ttl != -1 || ttlErr != nil {
					t.Errorf("outside key %q after Cleanup = (%q, %v), PTTL (%v, %v); want untouched (%q, nil), PTTL -1",
						key, val, err, ttl, ttlErr, "outside:"+key)
				}
			}
			if got, err := audit.Run(ctx, rdb, prefix, window); got != (audit.Result{}) || err != nil {
				t.Errorf("Run(%q, %d) after Cleanup = (%+v, %v); want zero Result", prefix, window, got, err)
			}
		})
	}
}

// TestRunManyBatches seeds more keys than one SCAN COUNT 1000 returns.
func TestRunManyBatches(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	const n = 2500
	pipe := rdb.Pipeline()
	var want audit.Result
	for i := range n {
		key := fmt.Sprintf("%sk:%d", prefix, i)
		switch i % 3 {
		case 0:
			pipe.Set(ctx, key, i, 0)
			want.Immortal++
		case 1:
			pipe.Set(ctx, key, i, time.Second*window)
		case 2:
			pipe.Set(ctx, key, i, 2*time.Second*window)
			want.TTLOverWindow++
		}
		want.Keys++
		pipe.Set(ctx, fmt.Sprintf("other:%d", i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("seed %d keys: %v", n, err)
	}
	if indep := countIndependently(t, rdb, prefix); indep != want {
		t.Fatalf("independent count = %+v; want the seeded %+v", indep, want)
	}
	got, err := audit.Run(ctx, rdb, prefix, window)
	if err != nil || got != want {
		t.Errorf("Run(%q, %d) = (%+v, %v); want (%+v, nil)", prefix, window, got, err, want)
	}
	deleted, err := audit.Cleanup(ctx, rdb, prefix)
	if err != nil || deleted != n {
		t.Errorf("Cleanup(%q) = (%d, %v); want (%d, nil)", prefix, deleted, err, n)
	}
	if size, err := rdb.DBSize(ctx).Result(); err != nil || size != n {
		t.Errorf("DBSIZE after Cleanup = (%d, %v); want (%d, nil): the outside keys", size, err, n)
	}
}

// scanHook runs after each SCAN reply, with the command, once the reply is in.
type scanHook func(ctx context.Context, cmd *redis.ScanCmd)

func (h scanHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h scanHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h scanHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if scan, ok := cmd.(*redis.ScanCmd); ok && err == nil {
			h(ctx, scan)
		}
		return err
	}
}

// TestRunVanished deletes a key between SCAN returning it and Run reading its
// PTTL, as expiry does during a real audit.
func TestRunVanished(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	observer := redistest.Client(t, srv)
	audited := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	for i := range 4 {
		if err := observer.Set(ctx, fmt.Sprintf("%s%d", prefix, i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var once sync.Once
	audited.AddHook(scanHook(func(ctx context.Context, cmd *redis.ScanCmd) {
		keys, _ := cmd.Val()
		if len(keys) == 0 {
			return
		}
		once.Do(func() {
			if err := observer.Del(ctx, keys[0]).Err(); err != nil {
				t.Errorf("DEL %q: %v", keys[0], err)
			}
		})
	}))
	got, err := audit.Run(ctx, audited, prefix, window)
	want := audit.Result{Keys: 4, Immortal: 3, Vanished: 1}
	if err != nil || got != want {
		t.Errorf("Run(%q, %d) with a key deleted after SCAN = (%+v, %v); want (%+v, nil)", prefix, window, got, err, want)
	}
}

// TestRunDistrustsScan makes SCAN return every key twice, as SCAN may while
// the keyspace is resized (which a quiet test server never does), plus a key
// outside the prefix, as a faulty MATCH pattern would. Each key under the
// prefix must count once and the outside key not at all.
func TestRunDistrustsScan(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	want := seedInside(t, rdb, prefix)
	outside := strings.TrimSuffix(prefix, ":") + "-outside"
	seedOutside(t, rdb, []string{outside})
	rdb.AddHook(scanHook(func(ctx context.Context, cmd *redis.ScanCmd) {
		keys, cursor := cmd.Val()
		cmd.SetVal(append(append(keys, keys...), outside), cursor)
	}))
	got, err := audit.Run(ctx, rdb, prefix, window)
	if err != nil || got != want {
		t.Errorf("Run(%q, %d) with doctored SCAN replies = (%+v, %v); want (%+v, nil)", prefix, window, got, err, want)
	}
	deleted, err := audit.Cleanup(ctx, rdb, prefix)
	if err != nil || deleted != want.Keys {
		t.Errorf("Cleanup(%q) with doctored SCAN replies = (%d, %v); want (%d, nil)", prefix, deleted, err, want.Keys)
	}
	if n, err := rdb.Exists(ctx, outside).Result(); err != nil || n != 1 {
		t.Errorf("EXISTS %q after Cleanup = (%d, %v); want (1, nil)", outside, n, err)
	}
}

func TestEmptyPrefix(t *testing.T) {
	t.Parallel()
	// The prefix is checked before any command, so no server is needed.
	if _, err := audit.Run(t.Context(), nil, "", window); !errors.Is(err, audit.ErrEmptyPrefix) {
		t.Errorf(`Run("", %d) = %v; want ErrEmptyPrefix`, window, err)
	}
	if _, err := audit.Cleanup(t.Context(), nil, ""); !errors.Is(err, audit.ErrEmptyPrefix) {
		t.Errorf(`Cleanup("") = %v; want ErrEmptyPrefix`, err)
	}
}

// TestErrorsNameOperation runs Run and Cleanup as ACL users denied one
// command each, so the server refuses that command.
func TestErrorsNameOperation(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	seedInside(t, admin, prefix)
	tests := []struct {
		name   string
		denied string // command the ACL user may not run
		call   func(ctx context.Context, rdb redis.Cmdable) error
		want   string // prefix of the error message
	}{
		{
			name:   "run scan",
			denied: "scan",
			call: func(ctx context.Context, rdb redis.Cmdable) error {
				_, err := audit.Run(ctx, rdb, prefix, window)
				return err
			},
			want: "audit: run: scan: NOPERM",
		},
		{
			name:   "run pttl",
			denied: "pttl",
			call: func(ctx context.Context, rdb redis.Cmdable) error {
				_, err := audit.Run(ctx, rdb, prefix, window)
				return err
			},
			want: "audit: run: pttl: NOPERM",
		},
		{
			name:   "cleanup scan",
			denied: "scan",
			call: func(ctx context.Context, rdb redis.Cmdable) error {
				_, err := audit.Cleanup(ctx, rdb, prefix)
				return err
			},
			want: "audit: cleanup: scan: NOPERM",
		},
		{
			name:   "cleanup unlink",
			denied: "unlink",
			call: func(ctx context.Context, rdb redis.Cmdable) error {
				_, err := audit.Cleanup(ctx, rdb, prefix)
				return err
			},
			want: "audit: cleanup: unlink: NOPERM",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			user := "no-" + strings.ReplaceAll(tc.name, " ", "-")
			if err := admin.Do(t.Context(), "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "-"+tc.denied).Err(); err != nil {
				t.Fatalf("ACL SETUSER %s: %v", user, err)
			}
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: user, Password: "pw", DisableIdentity: true})
			defer rdb.Close()
			if err := tc.call(t.Context(), rdb); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("%s without %s = %v; want an error starting %q", tc.name, tc.denied, err, tc.want)
			}
		})
	}
}

func TestMatchPattern(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		prefix string
		want   string
	}{
		{name: "plain", prefix: "rl:", want: "rl:*"},
		{name: "star", prefix: "a*:", want: `a\*:*`},
		{name: "question mark", prefix: "a?:", want: `a\?:*`},
		{name: "brackets", prefix: "[x]:", want: `\[x\]:*`},
		{name: "backslash", prefix: `a\b:`, want: `a\\b:*`},
		{name: "all at once", prefix: `a*[b]?\:`, want: `a\*\[b\]\?\\:*`},
		{name: "hash tag and caret untouched", prefix: "{t}^-:", want: "{t}^-:*"},
		{name: "empty", prefix: "", want: "*"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := audit.MatchPattern(tc.prefix); got != tc.want {
				t.Errorf("MatchPattern(%q) = %q; want %q", tc.prefix, got, tc.want)
			}
		})
	}
}

// TestMatchPatternOnServer checks the escaping against the server's own glob
// matching, with no HasPrefix guard: SCAN MATCH MatchPattern(prefix) must
// return exactly the keys that start with prefix.
func TestMatchPatternOnServer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	keys := []string{
		`a*[b]?\:1`, `a*[b]?\:2`, `azzb!\:1`, `a*[b]?:1`, `a*[b]?\`, `ab?\:1`, `a*b?\:1`, `a*[b]?\\:1`,
	}
	seedOutside(t, rdb, keys)
	for _, prefix := range []string{`a*[b]?\:`, `a*[b]?`, `a*`, `a`, `azzb!`} {
		var want []string
		for _, key := range keys {
			if strings.HasPrefix(key, prefix) {
				want = append(want, key)
			}
		}
		sort.Strings(want)
		got, err := rdb.Do(ctx, "SCAN", 0, "MATCH", audit.MatchPattern(prefix), "COUNT", 1000).Slice()
		if err != nil || len(got) != 2 {
			t.Fatalf("SCAN 0 MATCH %q = (%v, %v)", audit.MatchPattern(prefix), got, err)
		}
		var matched []string
		for _, k := range got[1].([]any) {
			matched = append(matched, k.(string))
		}
		sort.Strings(matched)
		if strings.Join(matched, "\n") != strings.Join(want, "\n") {
			t.Errorf("SCAN MATCH MatchPattern(%q) = %q; want %q", prefix, matched, want)
		}
	}
}

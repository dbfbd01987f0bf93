package strategies_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/strategies"
)

// keyStrategies are the strategies whose counters are keys; the hash-field
// ones (Redis >= 7.4) are tested here, on a 7.4 server.
func keyStrategies() []strategies.Info {
	var out []strategies.Info
	for _, info := range strategies.All() {
		if info.Layout == "" {
			out = append(out, info)
		}
	}
	return out
}

// hashStrategies are the strategies whose counters are hash fields.
func hashStrategies(t *testing.T) []strategies.Info {
	t.Helper()
	var out []strategies.Info
	for _, info := range strategies.All() {
		if info.Layout == strategies.LayoutHashField {
			out = append(out, info)
		}
	}
	if len(out) != 3 {
		t.Fatalf("hash-field strategies = %d; want 3", len(out))
	}
	return out
}

// fieldPTTL reads one field's PTTL in milliseconds: -1 no TTL, -2 no field.
func fieldPTTL(t *testing.T, rdb *redis.Client, key, field string) int64 {
	t.Helper()
	v, err := rdb.HPTTL(context.Background(), key, field).Result()
	if err != nil || len(v) != 1 {
		t.Fatalf("HPTTL %s FIELDS 1 %s = %v, %v", key, field, v, err)
	}
	return v[0]
}

// TestHashFieldWindow checks, for every hash-field strategy on every
// client, a fixed window measured on the field: the first request creates
// the field at 1 with the window's TTL on the field (the hash itself has
// none), exactly limit are allowed, and after the window the field starts
// again.
func TestHashFieldWindow(t *testing.T) {
	t.Parallel()
	srv := redistest.Start74(t)
	rdb := redistest.Client(t, srv)
	const limit, window = 3, 1
	field := strategies.FieldName(0)
	for _, info := range hashStrategies(t) {
		for _, cname := range clients.Names {
			t.Run(info.Name+"/"+cname, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				c := connect(t, srv, cname, 1)
				s := newStrategy(t, c, info.Name, strategies.Config{Limit: limit, Window: window})
				key := redistest.Prefix(t) + "k"
				for i := 1; i <= limit+2; i++ {
					d, err := s.Decide(ctx, c, key)
					if err != nil || d.Count != int64(i) || d.Allowed != (i <= limit) {
						t.Fatalf("Decide #%d = %+v, %v; want count %d, allowed %t", i, d, err, i, i <= limit)
					}
				}
				if n, _ := rdb.HGet(ctx, key, field).Int64(); n != limit+2 {
					t.Errorf("HGET %s %s = %d; want %d", key, field, n, limit+2)
				}
				if p := fieldPTTL(t, rdb, key, field); p <= 0 || p > window*1000 {
					t.Errorf("field PTTL = %dms; want in (0, %ds]", p, window)
				}
				if p := rdb.PTTL(ctx, key).Val(); p != -1 {
					t.Errorf("key PTTL = %v; want -1: the TTL is the field's", p)
				}
				waitGone(t, rdb, key) // the hash goes with its last field
				d, err := s.Decide(ctx, c, key)
				if err != nil || !d.Allowed || d.Count != 1 {
					t.Fatalf("Decide after expiry = %+v, %v; want allowed at 1", d, err)
				}
			})
		}
	}
}

// TestHashFieldGap: a client that dies between HINCRBY and HEXPIRE leaves
// an immortal field under hash-incr-expire; the atomic ones send one round
// trip and have no gap to die in. The next decision heals the field only
// under hash-multi-nx.
func TestHashFieldGap(t *testing.T) {
	t.Parallel()
	srv := redistest.Start74(t)
	rdb := redistest.Client(t, srv)
	field := strategies.FieldName(0)
	for _, info := range hashStrategies(t) {
		for _, cname := range clients.Names {
			t.Run(info.Name+"/"+cname, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				c := connect(t, srv, cname, 1)
				s := newStrategy(t, c, info.Name, strategies.Config{Limit: 5, Window: 60})
				key := redistest.Prefix(t) + "k"
				// A first decision loads hash-lua's script (EVALSHA, then
				// EVAL): a gap the crash is not about.
				if _, err := s.Decide(ctx, c, key+":warm"); err != nil {
					t.Fatal(err)
				}
				var steps []string
				crashing := strategies.WithGap(ctx, func(_ context.Context, _, step string) error {
					steps = append(steps, step)
					return strategies.ErrCrashed
				})
				_, err := s.Decide(crashing, c, key)
				p := fieldPTTL(t, rdb, key, field)
				if info.Atomic {
					if err != nil || len(steps) != 0 || p <= 0 {
						t.Errorf("Decide with a crashing gap = %v after gaps %q; field PTTL %d; want no gap, a TTL", err, steps, p)
					}
				} else if !errors.Is(err, strategies.ErrCrashed) || len(steps) != 1 || steps[0] != "after HINCRBY" || p != -1 {
					t.Errorf("Decide with a crashing gap = %v after gaps %q; field PTTL %d; want the crash after HINCRBY and an immortal field", err, steps, p)
				}
				// The adapter's own HTTL agrees with the observer.
				if ttl, err := c.HTTL(ctx, key, field); err != nil || (ttl == -1) != (p == -1) {
					t.Errorf("HTTL %s FIELDS 1 %s = %d, %v; want it to agree with HPTTL %d", key, field, ttl, err, p)
				}

				// Healing: a field seeded with no TTL.
				healKey := key + ":heal"
				rdb.HSet(ctx, healKey, field, 2)
				if _, err := s.Decide(ctx, c, healKey); err != nil {
					t.Fatal(err)
				}
				if p, healed := fieldPTTL(t, rdb, healKey, field), info.Heals; (p > 0) != healed {
					t.Errorf("field PTTL after a decision on an immortal field = %d; want healed %t", p, healed)
				}
			})
		}
	}
}

// TestHashFieldWrongType: a string at the key makes each decision fail
// with WRONGTYPE and leaves the string as it was.
func TestHashFieldWrongType(t *testing.T) {
	t.Parallel()
	srv := redistest.Start74(t)
	rdb := redistest.Client(t, srv)
	for _, info := range hashStrategies(t) {
		for _, cname := range clients.Names {
			t.Run(info.Name+"/"+cname, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				c := connect(t, srv, cname, 1)
				s := newStrategy(t, c, info.Name, strategies.Config{Limit: 5, Window: 60})
				key := redistest.Prefix(t) + "k"
				rdb.Set(ctx, key, "v", 0)
				_, err := s.Decide(ctx, c, key)
				var re strategies.ReplyError
				if !errors.As(err, &re) || re.Prefix() != "WRONGTYPE" {
					t.Errorf("Decide on a string = %v; want WRONGTYPE", err)
				}
				if v, p := rdb.Get(ctx, key).Val(), rdb.PTTL(ctx, key).Val(); v != "v" || p != -1 {
					t.Errorf("string after the decision = %q with PTTL %v; want \"v\" with none", v, p)
				}
			})
		}
	}
}

// TestHashFieldsSpread: with Fields 4, a key's requests spread over four
// fields, each its own counter with its own TTL.
func TestHashFieldsSpread(t *testing.T) {
	t.Parallel()
	srv := redistest.Start74(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	c := connect(t, srv, "rueidis", 1)
	for _, info := range hashStrategies(t) {
		s := newStrategy(t, c, info.Name, strategies.Config{Limit: 1000, Window: 60, Fields: 4})
		key := redistest.Prefix(t) + info.Name
		for range 200 {
			if _, err := s.Decide(ctx, c, key); err != nil {
				t.Fatal(err)
			}
		}
		fields, err := rdb.HGetAll(ctx, key).Result()
		if err != nil || len(fields) != 4 {
			t.Fatalf("%s: HGETALL = %v, %v; want 4 fields", info.Name, fields, err)
		}
		for f := range fields {
			if !strings.HasPrefix(f, "f") || fieldPTTL(t, rdb, key, f) <= 0 {
				t.Errorf("%s: field %q PTTL %d; want a field f<i> with a TTL", info.Name, f, fieldPTTL(t, rdb, key, f))
			}
		}
	}
	if _, err := strategies.New("hash-lua", strategies.Config{Fields: -1}); !errors.Is(err, strategies.ErrInvalidFields) {
		t.Errorf("New(hash-lua, Fields -1) = %v; want ErrInvalidFields", err)
	}
}

// TestHashFieldTapNames: the round trips a Tap sees, for the crash
// injection's gap names.
func TestHashFieldTapNames(t *testing.T) {
	t.Parallel()
	srv := redistest.Start74(t)
	want := map[string]string{
		"hash-incr-expire": "HINCRBY,HEXPIRE",
		"hash-multi-nx":    "MULTI+HINCRBY+HEXPIRE NX+EXEC",
		"hash-lua":         "EVALSHA",
	}
	for _, info := range hashStrategies(t) {
		for _, cname := range clients.Names {
			c := connect(t, srv, cname, 1)
			s := newStrategy(t, c, info.Name, strategies.Config{})
			var sent []string
			ctx := strategies.WithTap(context.Background(), &strategies.Tap{Sent: func(rt string) { sent = append(sent, rt) }})
			key := redistest.Prefix(t) + info.Name + cname
			if _, err := s.Decide(ctx, c, key); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(sent, ","); got != want[info.Name] && !(info.Name == "hash-lua" && got == "EVALSHA,EVAL") {
				t.Errorf("%s/%s round trips = %q; want %q", info.Name, cname, got, want[info.Name])
			}
		}
	}
}

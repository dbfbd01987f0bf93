package audit_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/internal/redistest"
)

// TestFieldAudit audits a known mix of hashes with field TTLs (Redis 7.4),
// with the clean-up in the same pass and without, and on a page size that
// makes HSCAN walk the big hash in several pages.
func TestFieldAudit(t *testing.T) {
	t.Parallel()
	srv := redistest.Start74(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		unlink bool
		count  int64
		rate   float64
	}{
		{"read only", false, 0, 0},
		{"with unlink", true, 0, 0},
		{"small pages", false, 10, 0},
		// 257 fields at 1000/s: the fields are paced as keys are.
		{"paced", false, 50, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			// healthy: 3 fields with TTLs, no key TTL: expires by its fields.
			rdb.HSet(ctx, prefix+"healthy", "a", 1, "b", 1, "c", 1)
			rdb.HExpire(ctx, prefix+"healthy", time.Minute, "a", "b", "c")
			// leaky: 2 fields, one with no TTL: an immortal hash.
			rdb.HSet(ctx, prefix+"leaky", "a", 1, "b", 1)
			rdb.HExpire(ctx, prefix+"leaky", time.Minute, "a")
			// long: a field TTL beyond the window.
			rdb.HSet(ctx, prefix+"long", "a", 1)
			rdb.HExpire(ctx, prefix+"long", time.Hour, "a")
			// keyed: a hash with a key TTL and fields with none.
			rdb.HSet(ctx, prefix+"keyed", "a", 1)
			rdb.Expire(ctx, prefix+"keyed", time.Minute)
			// big: 250 immortal fields (several HSCAN pages when small).
			big := make([]any, 0, 500)
			for i := range 250 {
				big = append(big, "f"+strconv.Itoa(i), i)
			}
			rdb.HSet(ctx, prefix+"big", big...)
			// a string counter with no TTL.
			rdb.Set(ctx, prefix+"string", 5, 0)

			sample := 10
			if tc.unlink {
				sample = 0 // Unlink excludes Sample
			}
			rep, err := audit.Scan(ctx, []audit.Node{rdb}, audit.Options{Prefix: prefix, MaxTTL: time.Minute, Fields: true, Unlink: tc.unlink, Count: tc.count, Rate: tc.rate, Sample: sample})
			if err != nil {
				t.Fatal(err)
			}
			// The audit read the hashes' fields before their idle time:
			// theirs is left out; the string's 5 is a shared object.
			for _, s := range rep.ImmortalSample {
				if s.Type == "hash" && s.IdleS != nil || s.Type == "string" && !s.IdleShared {
					t.Errorf("sample %+v: idle_s set %t, shared %t; want none for a hash, shared for the string", s, s.IdleS != nil, s.IdleShared)
				}
			}
			if tc.rate > 0 && rep.ElapsedS < 0.25 {
				t.Errorf("Scan(Fields, Rate %g) of 257 fields took %.3f s; want >= 0.25 s", tc.rate, rep.ElapsedS)
			}
			want := audit.FieldFindings{Hashes: 5, Fields: 257, FieldsWithTTL: 5, ImmortalFields: 252, FieldTTLOverMax: 1, ExpiringByFields: 2}
			if rep.FieldFindings != want {
				t.Errorf("Scan(Fields) = %+v; want %+v", rep.FieldFindings, want)
			}
			// Immortal: leaky, big, string; healthy and long expire by their fields.
			if rep.Keys != 6 || rep.Immortal != 3 || rep.WithTTL != 1 {
				t.Errorf("Scan(Fields) keys %d, immortal %d, with TTL %d; want 6, 3, 1", rep.Keys, rep.Immortal, rep.WithTTL)
			}
			if got := rep.Keys - rep.WithTTL - rep.Immortal - rep.Vanished - rep.ExpiringByFields; got != 0 {
				t.Errorf("keys - with TTL - immortal - vanished - expiring by fields = %d; want 0", got)
			}
			left, _ := rdb.Keys(ctx, prefix+"*").Result()
			if tc.unlink && (rep.Deleted != 6 || len(left) != 0) {
				t.Errorf("Scan(Fields, Unlink) deleted %d, left %q; want 6 deleted, none left", rep.Deleted, left)
			}
			if !tc.unlink {
				if len(left) != 6 {
					t.Errorf("Scan(Fields) left %d keys; want the 6", len(left))
				}
				rdb.Del(ctx, left...)
			}
		})
	}
}

// TestFieldAuditExpired: a hash whose fields have all expired, read before
// the server deletes it, counts as every field expired, not immortal.
func TestFieldAuditExpired(t *testing.T) {
	t.Parallel()
	srv := redistest.Start74(t, "--enable-debug-command", "local")
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	prefix := redistest.Prefix(t)
	// Active expiry would delete the hash (within the server's next cron,
	// 100 ms); pause it so the lazy state shows.
	if err := rdb.Do(ctx, "DEBUG", "SET-ACTIVE-EXPIRE", 0).Err(); err != nil {
		t.Fatalf("DEBUG SET-ACTIVE-EXPIRE 0: %v", err)
	}
	rdb.HSet(ctx, prefix+"gone", "a", 1, "b", 1)
	rdb.HPExpire(ctx, prefix+"gone", 10*time.Millisecond, "a", "b")
	time.Sleep(50 * time.Millisecond)
	rep, err := audit.Scan(ctx, []audit.Node{rdb}, audit.Options{Prefix: prefix, Fields: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Keys != 1 || rep.HashesExpired != 1 || rep.Immortal != 0 {
		t.Errorf("Scan(Fields) of a hash with every field expired = %+v, immortal %d; want 1 key, 1 hash expired, none immortal", rep.FieldFindings, rep.Immortal)
	}
}

// TestFieldAuditChurn replaces one hash by a string and deletes another
// between the TYPE that named them hashes and the HSCAN of their fields:
// both changed during the audit, neither expires by its fields.
func TestFieldAuditChurn(t *testing.T) {
	t.Parallel()
	srv := redistest.Start74(t)
	observer := redistest.Client(t, srv)
	audited := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	// Three hashes with no key TTL and a TTL on every field.
	for _, name := range []string{"kept", "replaced", "deleted"} {
		observer.HSet(ctx, prefix+name, "a", 1, "b", 1)
		if err := observer.HExpire(ctx, prefix+name, time.Minute, "a", "b").Err(); err != nil {
			t.Fatal(err)
		}
	}
	var once sync.Once
	audited.AddHook(pipelineHook(func(ctx context.Context, _ []redis.Cmder) {
		once.Do(func() {
			if err := observer.Set(ctx, prefix+"replaced", 1, 0).Err(); err != nil {
				t.Errorf("SET: %v", err)
			}
			if err := observer.Del(ctx, prefix+"deleted").Err(); err != nil {
				t.Errorf("DEL: %v", err)
			}
		})
	}))
	rep, err := audit.Scan(ctx, []audit.Node{audited}, audit.Options{Prefix: prefix, Fields: true})
	if err != nil {
		t.Fatal(err)
	}
	changed := rep.Keys - rep.WithTTL - rep.Immortal - rep.Vanished - rep.ExpiringByFields
	if rep.Keys != 3 || rep.ExpiringByFields != 1 || rep.Immortal != 0 || changed != 2 {
		t.Errorf("Scan(Fields) with a hash replaced and one deleted = %d keys, %d expiring by fields, %d immortal, %d otherwise; want 3, 1, 0, 2 changed",
			rep.Keys, rep.ExpiringByFields, rep.Immortal, changed)
	}
	if rep.Changed != 2 || rep.HashesChanged != 2 || rep.HashesExpired != 0 || rep.Fields != 2 {
		t.Errorf("Scan(Fields) = changed %d, %+v; want 2 changed, 2 hashes changed, none expired, 2 fields (the kept hash's)", rep.Changed, rep.FieldFindings)
	}
}

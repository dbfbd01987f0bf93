package audit_test

import (
	"context"
	"strconv"
	"testing"
	"time"

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
	srv := redistest.Start74(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	prefix := redistest.Prefix(t)
	// Active expiry would delete the hash; pause it so the lazy state shows.
	rdb.Do(ctx, "DEBUG", "SET-ACTIVE-EXPIRE", 0)
	t.Cleanup(func() { rdb.Do(context.Background(), "DEBUG", "SET-ACTIVE-EXPIRE", 1) })
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

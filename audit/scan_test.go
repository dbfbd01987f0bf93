package audit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/redisserver"
)

// mixLimit and mixMaxTTL are the limiter's limit and window the known mix
// is audited with.
const (
	mixLimit  = 100
	mixMaxTTL = time.Minute
)

// mix is a keyspace written with plain commands, as a limiter (not
// rlbench) would leave it, and what an audit of it must find.
type mix struct {
	want      audit.Findings
	lockedOut []string // the locked-out counters
	immortal  map[string]string
	// subSecond are the keys whose TTL is under 1 s, written last.
	subSecond []string
}

// seedMix writes the mix under prefix through rdb: keys with a TTL in every
// bucket, immortal counters under and at or over mixLimit, an immortal
// non-integer string, immortal keys of the other types, a counter over the
// limit that has a TTL; and keys outside the prefix. Each key carries a
// {tag} of its own, so that on a cluster they spread over every master.
func seedMix(t *testing.T, rdb redis.UniversalClient, prefix string) mix {
	t.Helper()
	ctx := t.Context()
	m := mix{immortal: map[string]string{}}
	m.want.Types = map[string]*audit.TypeCount{}
	n := 0
	key := func(kind string) string { n++; return fmt.Sprintf("%s%s:{%d}", prefix, kind, n) }
	do := func(typ string, immortal bool, args ...any) {
		if err := rdb.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("seed %v: %v", args, err)
		}
		tc := m.want.Types[typ]
		if tc == nil {
			tc = &audit.TypeCount{}
			m.want.Types[typ] = tc
		}
		tc.Keys++
		m.want.Keys++
		m.want.Matched++
		if immortal {
			tc.Immortal++
			m.want.Immortal++
			m.immortal[args[1].(string)] = typ
		} else {
			m.want.WithTTL++
		}
	}
	// TTLs in every bucket but the first, with those over mixMaxTTL.
	buckets := []struct {
		ttlS int
		n    int
		ptr  *int64
	}{
		{9, 3, &m.want.TTL.Under10s}, {59, 4, &m.want.TTL.Under1m}, {599, 1, &m.want.TTL.Under10m},
		{3599, 2, &m.want.TTL.Under1h}, {86399, 1, &m.want.TTL.Under1d}, {3 * 86400, 2, &m.want.TTL.AtLeast1d},
	}
	for _, b := range buckets {
		for range b.n {
			do("string", false, "SET", key("ttl"), "1", "EX", b.ttlS)
		}
		*b.ptr += int64(b.n)
		if time.Duration(b.ttlS)*time.Second > mixMaxTTL {
			m.want.TTLOverMax += int64(b.n)
		}
	}
	do("string", false, "SET", key("over-limit-with-ttl"), "500", "EX", 59)
	m.want.TTL.Under1m++
	for _, v := range []string{"3", "99"} {
		do("string", true, "SET", key("counter"), v)
	}
	for _, v := range []string{"100", "250"} {
		k := key("locked")
		do("string", true, "SET", k, v)
		m.lockedOut = append(m.lockedOut, k)
	}
	m.want.LockedOut = 2
	do("string", true, "SET", key("text"), "not a number")
	do("hash", true, "HSET", key("hash"), "f", "1000")
	do("list", true, "RPUSH", key("list"), "1000")
	do("set", true, "SADD", key("set"), "1000")
	do("zset", true, "ZADD", key("zset"), "1000", "m")
	for i := range 5 {
		if err := rdb.Set(ctx, fmt.Sprintf("other:{%d}", i), 1000, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Last, and audited at once: a TTL under 1 s.
	for range 2 {
		k := key("subsecond")
		do("string", false, "SET", k, "1", "PX", 999)
		m.subSecond = append(m.subSecond, k)
	}
	m.want.TTL.Under1s = 2
	return m
}

// mixOptions are the options the mix is audited with.
func mixOptions(prefix string) audit.Options {
	return audit.Options{Match: prefix + "*", Types: true, MaxTTL: mixMaxTTL, Limit: mixLimit, Sample: 3}
}

// idleAsExpected reports whether a sample has its idle time, or, for a
// string holding an integer from 0 to 9999 (which may be a shared object),
// idle_shared and no idle time.
func idleAsExpected(s audit.Sample) bool {
	shared := false
	if s.Value != nil {
		n, err := strconv.Atoi(*s.Value)
		shared = err == nil && n >= 0 && n < 10000
	}
	if shared {
		return s.IdleS == nil && s.IdleShared
	}
	return s.IdleS != nil && !s.IdleShared
}

// checkMix compares rep with the mix, figure by figure.
func checkMix(t *testing.T, rep audit.Report, m mix) {
	t.Helper()
	if !rep.Complete || rep.Error != "" {
		t.Errorf("Scan() complete = %t, error %q; want complete", rep.Complete, rep.Error)
	}
	got, want := rep.Findings, m.want
	if !equalTypes(got.Types, want.Types) {
		t.Errorf("Scan() types = %s; want %s", typesString(got.Types), typesString(want.Types))
	}
	got.Types, want.Types = nil, nil
	if got.Vanished > 0 {
		t.Fatalf("Scan() vanished = %d: the sub-second keys %q expired before the audit read them (a slow machine?)", got.Vanished, m.subSecond)
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("Scan() findings =\n%+v\nwant\n%+v", got, want)
	}
	if len(rep.ImmortalSample) != 3 {
		t.Errorf("Scan() immortal sample = %d keys; want 3 (Sample)", len(rep.ImmortalSample))
	}
	for _, s := range rep.ImmortalSample {
		typ, ok := m.immortal[s.Key]
		if !ok || s.Type != typ || !idleAsExpected(s) || (s.Value != nil) != (typ == "string") {
			t.Errorf("Scan() sampled %+v; want an immortal key of the mix, type %q, its idle time (or idle_shared for 0-9999), a value for a string", s, typ)
		}
	}
	var locked []string
	for _, s := range rep.LockedOutSample {
		locked = append(locked, s.Key)
		if s.Value == nil || s.Type != "string" || !idleAsExpected(s) {
			t.Errorf("Scan() locked-out sample %+v; want a string with its value, idle_shared for 0-9999", s)
		}
	}
	slices.Sort(locked)
	slices.Sort(m.lockedOut)
	if !slices.Equal(locked, m.lockedOut) {
		t.Errorf("Scan() locked-out sample = %q; want %q", locked, m.lockedOut)
	}
}

func equalTypes(a, b map[string]*audit.TypeCount) bool { return typesString(a) == typesString(b) }

func typesString(m map[string]*audit.TypeCount) string {
	var parts []string
	for name, c := range m {
		parts = append(parts, fmt.Sprintf("%s:%d/%d", name, c.Keys, c.Immortal))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// TestScanKnownMix audits a keyspace written by plain commands on one
// server; every figure must match the mix.
func TestScanKnownMix(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	m := seedMix(t, rdb, prefix)
	rep, err := audit.Scan(t.Context(), []audit.Node{rdb}, mixOptions(prefix))
	if err != nil {
		t.Fatalf("Scan() error: %v", err)
	}
	checkMix(t, rep, m)
	if rep.PerNode != nil {
		t.Errorf("Scan() of one node: audit_per_node = %+v; want none", rep.PerNode)
	}
	// The mix's immortal hash, list, set and zset are not read as strings:
	// an audit adds nothing to the server's error counters.
	if stats := rdb.Info(t.Context(), "errorstats").Val(); strings.Contains(stats, "errorstat_") {
		t.Errorf("the server counted errors during the audit: %q; want none", stats)
	}
	if rep.Cost.Scan.N == 0 || rep.Cost.Pipeline.N == 0 || rep.Cost.Detail.N == 0 || rep.Cost.Pipeline.MaxUS <= 0 {
		t.Errorf("Scan() cost = %+v; want SCAN, pipeline and detail latencies measured", rep.Cost)
	}
}

// TestScanKnownMixCluster audits the mix on a 3-master cluster, one client
// per master: the totals match, every master holds some of it, and the
// masters' figures sum to the totals.
func TestScanKnownMixCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	rdb := redistest.ClusterClient(t, cl)
	prefix := redistest.Prefix(t)
	m := seedMix(t, rdb, prefix)
	var nodes []audit.Node
	for _, addr := range cl.MasterAddrs() {
		node := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
		t.Cleanup(func() { node.Close() })
		nodes = append(nodes, node)
	}
	rep, err := audit.Scan(t.Context(), nodes, mixOptions(prefix))
	if err != nil {
		t.Fatalf("Scan() error: %v", err)
	}
	checkMix(t, rep, m)
	if len(rep.PerNode) != 3 {
		t.Fatalf("Scan() audit_per_node = %d nodes; want 3", len(rep.PerNode))
	}
	var keys, immortal, locked int64
	for i, n := range rep.PerNode {
		if n.Addr != cl.MasterAddrs()[i] || n.Keys == 0 || !n.Complete {
			t.Errorf("Scan() node %d = %+v; want %s, complete, with some keys", i, n, cl.MasterAddrs()[i])
		}
		keys, immortal, locked = keys+n.Keys, immortal+n.Immortal, locked+n.LockedOut
	}
	if keys != m.want.Keys || immortal != m.want.Immortal || locked != m.want.LockedOut {
		t.Errorf("Scan() per node sums = %d keys, %d immortal, %d locked out; want %d, %d, %d",
			keys, immortal, locked, m.want.Keys, m.want.Immortal, m.want.LockedOut)
	}
}

// pipelineHook runs fn after each pipeline that read a PTTL, once its
// replies are in.
type pipelineHook func(ctx context.Context, cmds []redis.Cmder)

func (h pipelineHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h pipelineHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h pipelineHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if len(cmds) > 0 && cmds[0].Name() == "pttl" {
			h(ctx, cmds)
		}
		return err
	}
}

// TestScanFixTTL gives immortal keys a TTL with EXPIRE ... NX, and counts
// without sending with DryRun. One key gains a TTL of its own between the
// PTTL that found it immortal and the EXPIRE: NX must leave it alone.
func TestScanFixTTL(t *testing.T) {
	t.Parallel()
	const fix = time.Hour
	const own = 1000 * time.Second // the TTL the racing key gains
	for _, dryRun := range []bool{false, true} {
		t.Run(fmt.Sprintf("dry run %t", dryRun), func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			observer := redistest.Client(t, srv)
			audited := redistest.Client(t, srv)
			ctx := t.Context()
			prefix := redistest.Prefix(t)
			for i := range 5 {
				if err := observer.Set(ctx, fmt.Sprintf("%simmortal:%d", prefix, i), i, 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := observer.Set(ctx, prefix+"ttl", 1, 59*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			if err := observer.Set(ctx, "outside", 1, 0).Err(); err != nil {
				t.Fatal(err)
			}
			racer := prefix + "immortal:0"
			var once sync.Once
			audited.AddHook(pipelineHook(func(ctx context.Context, _ []redis.Cmder) {
				once.Do(func() {
					if err := observer.Expire(ctx, racer, own).Err(); err != nil {
						t.Errorf("EXPIRE %s: %v", racer, err)
					}
				})
			}))
			rep, err := audit.Scan(ctx, []audit.Node{audited}, audit.Options{Prefix: prefix, FixTTL: fix, DryRun: dryRun})
			if err != nil {
				t.Fatalf("Scan() error: %v", err)
			}
			want := audit.Findings{Matched: 6, Keys: 6, WithTTL: 1, Immortal: 5, Fixed: 4, FixSkipped: 1}
			want.TTL.Under1m = 1
			if dryRun {
				want.Fixed, want.FixSkipped, want.WouldFix = 0, 0, 5
			}
			if fmt.Sprintf("%+v", rep.Findings) != fmt.Sprintf("%+v", want) {
				t.Errorf("Scan(FixTTL %s, DryRun %t) = %+v; want %+v", fix, dryRun, rep.Findings, want)
			}
			checkTTLs(t, observer, prefix, racer, fix, own, dryRun)
		})
	}
}

// checkTTLs checks the keys after a fix: the racer kept its own TTL, the
// other immortal keys got fix (or kept none in a dry run), the key outside
// the prefix is untouched.
func checkTTLs(t *testing.T, rdb *redis.Client, prefix, racer string, fix, own time.Duration, dryRun bool) {
	t.Helper()
	ctx := t.Context()
	for i := range 5 {
		k := fmt.Sprintf("%simmortal:%d", prefix, i)
		ttl := rdb.TTL(ctx, k).Val()
		switch {
		case k == racer && (ttl > own || ttl < own-time.Minute):
			t.Errorf("TTL %s = %s; want its own %s kept", k, ttl, own)
		case k != racer && dryRun && ttl != -1:
			t.Errorf("TTL %s after a dry run = %s; want none (-1)", k, ttl)
		case k != racer && !dryRun && (ttl > fix || ttl < fix-time.Minute):
			t.Errorf("TTL %s after the fix = %s; want about %s", k, ttl, fix)
		}
	}
	if ttl := rdb.TTL(ctx, "outside").Val(); ttl != -1 {
		t.Errorf("TTL outside = %s; want -1: a key outside the prefix is never fixed", ttl)
	}
}

// TestScanInterrupted cancels the audit after its first batch: Scan returns
// what it counted, marked incomplete, with the cancellation.
func TestScanInterrupted(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	pipe := rdb.Pipeline()
	for i := range 500 {
		pipe.Set(t.Context(), fmt.Sprintf("%s%d", prefix, i), i, 0)
	}
	if _, err := pipe.Exec(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var calls int
	opts := audit.Options{Prefix: prefix, Count: 50, Progress: func(p audit.Progress) {
		calls++
		if p.Keys > 0 {
			cancel()
		}
	}}
	rep, err := audit.Scan(ctx, []audit.Node{rdb}, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Scan() cancelled = %v; want context.Canceled", err)
	}
	if rep.Complete || rep.Error == "" || rep.Keys == 0 || rep.Keys >= 500 || rep.Immortal != rep.Keys {
		t.Errorf("Scan() cancelled = complete %t, error %q, %d keys, %d immortal; want incomplete, the error, some of the 500 keys, all immortal",
			rep.Complete, rep.Error, rep.Keys, rep.Immortal)
	}
	var text strings.Builder
	if err := audit.Text(rep)(&text); err != nil || !strings.Contains(text.String(), "INCOMPLETE") {
		t.Errorf("Text() of an interrupted audit = %q, %v; want an INCOMPLETE line", text.String(), err)
	}
}

// TestScanRate checks that Rate caps the keys examined per second.
func TestScanRate(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	pipe := rdb.Pipeline()
	for i := range 300 {
		pipe.Set(t.Context(), fmt.Sprintf("%s%d", prefix, i), i, 0)
	}
	if _, err := pipe.Exec(t.Context()); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Scan(t.Context(), []audit.Node{rdb}, audit.Options{Prefix: prefix, Count: 20, Rate: 1000})
	if err != nil || rep.Keys != 300 {
		t.Fatalf("Scan(Rate 1000) = %d keys, %v; want 300", rep.Keys, err)
	}
	// 300 keys at 1000/s: the audit ends when the last batch's keys are
	// due, after 0.3 s, so that the rate it reports is within the cap.
	if rep.ElapsedS < 0.3 || rep.KeysPerS > 1000 {
		t.Errorf("Scan(Rate 1000) of 300 keys took %.3f s, %.0f keys/s; want >= 0.3 s, <= 1000 keys/s", rep.ElapsedS, rep.KeysPerS)
	}
	// A keyspace of less than one batch: it is examined at once, and the
	// audit still ends no sooner than the cap allows.
	rep, err = audit.Scan(t.Context(), []audit.Node{rdb}, audit.Options{Prefix: prefix + "1", Count: 400, Rate: 1000})
	if err != nil || rep.Keys != 111 || rep.KeysPerS > 1000 {
		t.Errorf("Scan(Rate 1000) of %s1* = %d keys, %.0f keys/s, %v; want 111 keys, <= 1000 keys/s", prefix, rep.Keys, rep.KeysPerS, err)
	}
	// A pattern that matches nothing still walks the keyspace: each SCAN
	// is charged its COUNT, 15 pages of 20 at 1000/s, 0.3 s.
	rep, err = audit.Scan(t.Context(), []audit.Node{rdb}, audit.Options{Match: prefix + "none:*", Count: 20, Rate: 1000})
	if err != nil || rep.Keys != 0 || rep.ElapsedS < 0.25 {
		t.Errorf("Scan(Match none, Count 20, Rate 1000) of 300 keys = %d keys in %.3f s, %v; want 0 keys in >= 0.25 s (the SCANs paced)", rep.Keys, rep.ElapsedS, err)
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts audit.Options
		want error // nil: valid
	}{
		{"zero value", audit.Options{}, nil},
		{"match and prefix", audit.Options{Match: "a*", Prefix: "a"}, audit.ErrMatchAndPrefix},
		{"count too big", audit.Options{Count: audit.MaxCount + 1}, audit.ErrInvalidCount},
		{"negative rate", audit.Options{Rate: -1}, audit.ErrInvalidRate},
		{"negative limit", audit.Options{Limit: -1}, audit.ErrInvalidLimit},
		{"sample too big", audit.Options{Sample: audit.MaxSample + 1}, audit.ErrInvalidSample},
		{"fix not whole seconds", audit.Options{FixTTL: 1500 * time.Millisecond}, audit.ErrInvalidFixTTL},
		{"dry run alone", audit.Options{DryRun: true}, audit.ErrDryRunWithoutFix},
		{"unlink and fix", audit.Options{Unlink: true, FixTTL: time.Second}, audit.ErrUnlinkConflict},
		{"unlink and sample", audit.Options{Unlink: true, Sample: 1}, audit.ErrUnlinkConflict},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.opts.Validate(); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("%+v.Validate() = %v; want %v", tc.opts, err, tc.want)
			}
			// Scan refuses the same, before touching its (nil) node.
			if tc.want != nil {
				if _, err := audit.Scan(t.Context(), []audit.Node{nil}, tc.opts); !errors.Is(err, tc.want) {
					t.Errorf("Scan(%+v) = %v; want %v", tc.opts, err, tc.want)
				}
			}
		})
	}
}

// TestScanUnlinkOnePass audits and deletes the runner's keys in one pass:
// the runner's figures are those of Run, every key under the prefix is
// gone, and no other key.
func TestScanUnlinkOnePass(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	want := seedInside(t, rdb, prefix)
	seedOutside(t, rdb, []string{"outside"})
	opts := audit.Options{Prefix: prefix, MaxTTL: window * time.Second, Dedup: true, Unlink: true}
	rep, err := audit.Scan(t.Context(), []audit.Node{rdb}, opts)
	if err != nil || rep.Result() != want || rep.Deleted != want.Keys {
		t.Errorf("Scan(%+v) = %+v, %d deleted, %v; want %+v, %d deleted", opts, rep.Result(), rep.Deleted, err, want, want.Keys)
	}
	if left := allKeys(t, rdb); !slices.Equal(left, []string{"outside"}) {
		t.Errorf("keys after the pass = %q; want only \"outside\"", left)
	}
}

func TestBuckets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ttl  time.Duration
		want int // index in BucketLabels
	}{
		{0, 0}, {999 * time.Millisecond, 0}, {time.Second, 1}, {9999 * time.Millisecond, 1}, {10 * time.Second, 2},
		{time.Minute - 1, 2}, {time.Minute, 3}, {10 * time.Minute, 4}, {time.Hour, 5}, {24*time.Hour - 1, 5},
		{24 * time.Hour, 6}, {1000 * 24 * time.Hour, 6},
	}
	for _, tc := range tests {
		var f audit.Findings
		audit.SeedTTL(&f, tc.ttl)
		counts := f.TTL.Counts()
		if counts[tc.want] != 1 {
			t.Errorf("bucket of %s = %v; want 1 in %s", tc.ttl, counts, audit.BucketLabels[tc.want])
		}
	}
}

// TestSampleIdleShared checks which samples show their idle time: a
// counter under no maxmemory is a shared object (OBJECT REFCOUNT says so),
// so its idle time is not the key's; under an LRU policy each key has its
// own object and its idle time; and a user without OBJECT REFCOUNT gets
// "shared" for a small integer, as a guess, and the audit still completes.
func TestSampleIdleShared(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		lru        bool
		noRefcount bool
		want       bool // IdleShared
	}{
		{"no maxmemory", false, false, true},
		{"allkeys-lru", true, false, false},
		{"no OBJECT REFCOUNT", false, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			rdb := redistest.Client(t, srv)
			ctx := t.Context()
			if tc.lru {
				if err := rdb.ConfigSet(ctx, "maxmemory", "100mb").Err(); err != nil {
					t.Fatal(err)
				}
				if err := rdb.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
					t.Fatal(err)
				}
			}
			prefix := redistest.Prefix(t)
			if err := rdb.Set(ctx, prefix+"counter", 42, 0).Err(); err != nil {
				t.Fatal(err)
			}
			node := rdb
			if tc.noRefcount {
				if err := rdb.Do(ctx, "ACL", "SETUSER", "auditor", "on", ">pw", "~*", "+@all", "-object|refcount").Err(); err != nil {
					t.Fatal(err)
				}
				node = redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "auditor", Password: "pw", DisableIdentity: true})
				t.Cleanup(func() { node.Close() })
			}
			rep, err := audit.Scan(ctx, []audit.Node{node}, audit.Options{Prefix: prefix, Sample: 1, Limit: 10})
			if err != nil || len(rep.ImmortalSample) != 1 {
				t.Fatalf("Scan() = %d samples, %v; want 1, nil", len(rep.ImmortalSample), err)
			}
			s := rep.ImmortalSample[0]
			if s.IdleShared != tc.want || (s.IdleS == nil) != tc.want {
				t.Errorf("sample %+v: idle_shared %t, idle_s set %t; want idle_shared %t, idle_s set %t", s, s.IdleShared, s.IdleS != nil, tc.want, !tc.want)
			}
		})
	}
}

// replaceScript replaces the string KEYS[1] by a hash with no TTL, at
// once, and returns the PTTL the string had (> 0: the audit had fixed it).
var replaceScript = redis.NewScript(`
local ttl = redis.call('PTTL', KEYS[1])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'tenant', 'data')
return ttl
`)

// TestScanFixTTLTypeChanged replaces every immortal string by a tenant's
// hash during a paced --type string fix, once the audit's third SCAN page
// is in: the keys of that page (and any batch still in flight) are hashes
// by the time the fix reaches them. No hash may get a TTL, and the counts
// must be exact: fixed = the strings that had their TTL when replaced,
// the rest changed.
func TestScanFixTTLTypeChanged(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	observer := redistest.Client(t, srv)
	audited := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	const n = 400
	keys := make([]string, n)
	pipe := observer.Pipeline()
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%d", prefix, i)
		pipe.Set(ctx, keys[i], 1, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var scans, hadTTL atomic.Int64
	audited.AddHook(scanHook(func(ctx context.Context, _ *redis.ScanCmd) {
		if scans.Add(1) != 3 {
			return
		}
		for _, k := range keys {
			ttl, err := replaceScript.Run(ctx, observer, []string{k}).Int64()
			if err != nil {
				t.Errorf("replace %s: %v", k, err)
			}
			if ttl > 0 {
				hadTTL.Add(1)
			}
		}
	}))
	rep, err := audit.Scan(ctx, []audit.Node{audited}, audit.Options{Prefix: prefix, Type: "string", FixTTL: time.Hour, Count: 50, Rate: 2000})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if ttl := observer.PTTL(ctx, k).Val(); ttl != -1 {
			t.Errorf("PTTL %s (a tenant's hash now) = %s; want -1: the fix must not touch a key that changed type", k, ttl)
		}
	}
	changed := rep.Keys - rep.WithTTL - rep.Immortal - rep.Vanished
	if rep.Fixed != hadTTL.Load() || rep.FixSkipped != 0 || rep.Immortal != rep.Fixed || changed == 0 {
		t.Errorf("Scan(Type string, FixTTL) with the strings replaced = %d keys, %d immortal, fixed %d, left alone %d, %d otherwise; want fixed = %d (the strings replaced with a TTL), none left alone, immortal = fixed, some changed",
			rep.Keys, rep.Immortal, rep.Fixed, rep.FixSkipped, changed, hadTTL.Load())
	}
	if rep.Changed != changed {
		t.Errorf("Scan().Changed = %d; want %d", rep.Changed, changed)
	}
}

// TestScanFixTTLRedis62: the fix needs no EXPIRE ... NX (Redis >= 7.0): it
// runs on Redis 6.2, with the same counts.
func TestScanFixTTLRedis62(t *testing.T) {
	t.Parallel()
	var bin string
	for _, b := range redistest.Builds(t) {
		if strings.Contains(b, "redis-6.2") {
			bin = b
		}
	}
	if bin == "" {
		t.Skip("no Redis 6.2 build among redistest.Builds")
	}
	srv, err := redisserver.Start(t.Context(), redisserver.Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	for i := range 5 {
		rdb.Set(ctx, fmt.Sprintf("%s%d", prefix, i), i, 0)
	}
	rdb.Set(ctx, prefix+"ttl", 1, time.Minute)
	rep, err := audit.Scan(ctx, []audit.Node{rdb}, audit.Options{Prefix: prefix, FixTTL: time.Hour})
	if err != nil || rep.Fixed != 5 || rep.Immortal != 5 || rep.Changed != 0 {
		t.Fatalf("Scan(FixTTL) on %s = fixed %d of %d immortal, %d changed, %v; want 5 of 5, none changed, nil", srv.Info().Version, rep.Fixed, rep.Immortal, rep.Changed, err)
	}
	for i := range 5 {
		if ttl := rdb.TTL(ctx, fmt.Sprintf("%s%d", prefix, i)).Val(); ttl < 59*time.Minute {
			t.Errorf("TTL %s%d after the fix = %s; want about 1h", prefix, i, ttl)
		}
	}
}

// TestScanLeavesClaimsOut is issue 21, item 5: a load run's claim on its
// prefix (keyspace.ClaimKey) is not one of the keys an
// audit counts, immortal or not, and a clean-up (Unlink) or --fix-ttl
// leaves it alone.
func TestScanLeavesClaimsOut(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	// A claim with a TTL (a live run's), an immortal one (under a nested
	// prefix, as a tenant might leave), and three counters.
	claims := map[string]time.Duration{keyspace.ClaimKey(prefix + "run:"): time.Minute, keyspace.ClaimKey(prefix + "sub:"): 0}
	for key, ttl := range claims {
		if err := rdb.Set(ctx, key, "run 20261203T000000-0badc0de (pid 7 on h, since 2026-12-03T00:00:00Z)", ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if err := rdb.Set(ctx, fmt.Sprintf("%sc%d", prefix, i), 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// In this order: the audit finds the counters immortal, --fix-ttl
	// gives them a TTL, the clean-up deletes them.
	for _, tc := range []struct {
		name         string
		opts         audit.Options
		wantImmortal int64
	}{
		{"audit", audit.Options{Prefix: prefix, Types: true}, 3},
		{"fix-ttl", audit.Options{Prefix: prefix, FixTTL: time.Hour}, 3},
		{"clean-up", audit.Options{Prefix: prefix, Unlink: true}, 0},
	} {
		rep, err := audit.Scan(ctx, []audit.Node{rdb}, tc.opts)
		if err != nil {
			t.Fatalf("%s: Scan = %v", tc.name, err)
		}
		if rep.Keys != 3 || rep.Immortal != tc.wantImmortal {
			t.Errorf("%s: Scan counts %d keys, %d immortal; want the 3 counters (%d immortal), not the claims", tc.name, rep.Keys, rep.Immortal, tc.wantImmortal)
		}
		for key, ttl := range claims {
			got, err := rdb.PTTL(ctx, key).Result()
			if err != nil || got == -2 || (got == -1) != (ttl == 0) {
				t.Errorf("%s: after Scan, PTTL %s = %v, %v; want the claim as it was (TTL %s)", tc.name, key, got, err, ttl)
			}
		}
	}
}

// TestScanAuditsKeysNamedLikeAClaim is issue 34, item 17: the audit left
// out every key ending in rlbench-claim, so that a tenant's immortal,
// locked-out ratelimit:user42:rlbench-claim was invisible. A claim is now
// told by its value: a tenant's counter, or a hash, of that name is
// audited as any key (immortal, locked out, fixed), beside a run's claim,
// which is still left out.
func TestScanAuditsKeysNamedLikeAClaim(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	counter, hash, claim := keyspace.ClaimKey(prefix+"ratelimit:user42:"), keyspace.ClaimKey(prefix+"h:"), keyspace.ClaimKey(prefix+"run:")
	if err := rdb.Set(ctx, counter, 500, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, hash, "f", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, claim, "run 20261203T000000-0badc0de (pid 7 on h, since 2026-12-03T00:00:00Z)", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Scan(ctx, []audit.Node{rdb}, audit.Options{Prefix: prefix, Limit: 100, Sample: 10})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Keys != 2 || rep.Immortal != 2 || rep.LockedOut != 1 {
		t.Errorf("Scan = %d keys, %d immortal, %d locked out; want the counter and the hash, both immortal, the counter locked out", rep.Keys, rep.Immortal, rep.LockedOut)
	}
	if len(rep.LockedOutSample) != 1 || rep.LockedOutSample[0].Key != counter {
		t.Errorf("locked-out sample %+v; want %s", rep.LockedOutSample, counter)
	}
	if _, err := audit.Scan(ctx, []audit.Node{rdb}, audit.Options{Prefix: prefix, FixTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{counter: true, hash: true, claim: false} {
		ttl := rdb.TTL(ctx, key).Val()
		if fixed := ttl > 59*time.Minute; fixed != want {
			t.Errorf("after --fix-ttl, TTL %s = %s; want fixed %t", key, ttl, want)
		}
	}
}

// TestScanRecordsMatchStar is issue 34, item 17: --match '*' was recorded
// as "match": "" in the JSON (and shown empty in the HTML report).
func TestScanRecordsMatchStar(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	for _, match := range []string{"*", ""} {
		rep, err := audit.Scan(t.Context(), []audit.Node{rdb}, audit.Options{Match: match})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := audit.JSON(rep)(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), `"match": "*"`) {
			t.Errorf("Scan(Match %q): JSON %s; want \"match\": \"*\"", match, b.String())
		}
	}
}

// TestFixLeavesOutALiveRunsKeys is issue 34, item 7: audit --fix-ttl gave
// a TTL to the immortal keys of a running load, whose own audit then
// reported none (a false all-clear). The keys under a live run's claim are
// now left out of the fix and of its dry run, counted (fix_left_out) and
// named by the claim; the other immortal keys are fixed.
func TestFixLeavesOutALiveRunsKeys(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	run, tenant := prefix+"run:", prefix+"tenant:"
	if err := rdb.Set(ctx, keyspace.ClaimKey(run), "run 20261203T000000-0000000a (pid 1 on h, since 2026-12-03T00:00:00Z)", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		for _, p := range []string{run + "lua:go-redis:", tenant} {
			if err := rdb.Set(ctx, fmt.Sprintf("%s{%d}", p, i), i, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	dry, err := audit.Scan(ctx, []audit.Node{rdb}, audit.Options{Match: prefix + "*", FixTTL: time.Hour, DryRun: true})
	if err != nil || dry.WouldFix != 5 || dry.FixLeftOut != 5 {
		t.Errorf("Scan(dry run) = would fix %d, left out %d, %v; want 5 and 5", dry.WouldFix, dry.FixLeftOut, err)
	}
	rep, err := audit.Scan(ctx, []audit.Node{rdb}, audit.Options{Match: prefix + "*", FixTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Immortal != 10 || rep.Fixed != 5 || rep.FixLeftOut != 5 || len(rep.Claims) != 1 || rep.Claims[0].Prefix() != run {
		t.Errorf("Scan(fix) = %d immortal, %d fixed, %d left out, claims %+v; want 10, 5, 5 and the claim on %s", rep.Immortal, rep.Fixed, rep.FixLeftOut, rep.Claims, run)
	}
	for i := range 5 {
		if ttl := rdb.TTL(ctx, fmt.Sprintf("%slua:go-redis:{%d}", run, i)).Val(); ttl != -1 {
			t.Errorf("TTL of the live run's key %d = %s; want it left immortal", i, ttl)
		}
		if ttl := rdb.TTL(ctx, fmt.Sprintf("%s{%d}", tenant, i)).Val(); ttl < 59*time.Minute {
			t.Errorf("TTL of the tenant's key %d = %s; want about 1h", i, ttl)
		}
	}
	var text bytes.Buffer
	if err := audit.Text(rep)(&text); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`left out: under a live run's claim\s+5\s.*` + regexp.QuoteMeta(strconv.Quote(run))).MatchString(text.String()) {
		t.Errorf("Text() =\n%s\nwant a row of the 5 keys left out, naming %q", text.String(), run)
	}
}

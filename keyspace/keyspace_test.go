package keyspace_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/keyspace"
)

// clientNames stands for clients.Names (package topology's tests use the
// real list).
var clientNames = []string{"go-redis", "rueidis", "valkey-go", "redigo"}

const runID = "20261201T000000-0a1b2c3d"

// TestNames checks each builder's name byte for byte: they are on the
// wire (the keys a run writes, its messages, rlbench cleanup's input).
func TestNames(t *testing.T) {
	t.Parallel()
	p := keyspace.RunPrefix(runID)
	for _, tc := range []struct{ name, got, want string }{
		{"RunPrefix", p, "rlbench:20261201T000000-0a1b2c3d:"},
		{"TargetPrefix", keyspace.TargetPrefix(p, 2), p + "t2:"},
		{"Cell", keyspace.Cell(p, "lua", "go-redis"), p + "lua:go-redis:"},
		{"WarmupCell", keyspace.WarmupCell(p, "lua", "go-redis"), p + "warmup:lua:go-redis:"},
		{"Warmup", keyspace.Warmup("rl:bar:go-redis:"), "rl:bar:go-redis:warmup:"},
		{"Key", keyspace.Key(p+"lua:go-redis:", 42), p + "lua:go-redis:{42}"},
		{"AppendKey", string(keyspace.AppendKey([]byte("x"), "c:", 7)), "xc:{7}"},
		{"PreflightKey", keyspace.PreflightKey(p), p + "preflight"},
		{"ClaimKey", keyspace.ClaimKey(p), p + "rlbench-claim"},
		{"ObjectKey", keyspace.ObjectKey(p, keyspace.ObjectACLUser, "rlbench-run-0a1b"), p + "rlbench-object:acl-user:rlbench-run-0a1b"},
		{"ObjectKey library", keyspace.ObjectKey(p, keyspace.ObjectLibrary, "mylib"), p + "rlbench-object:library:mylib"},
		{"ClaimValue", keyspace.ClaimValue(runID, 7, "h", time.Date(2026, 12, 1, 1, 2, 3, 0, time.FixedZone("x", 3600))), "run " + runID + " (pid 7 on h, since 2026-12-01T00:02:03Z)"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %q; want %q", tc.name, tc.got, tc.want)
		}
	}
	if got := keyspace.NewVerifyPrefix(); !regexp.MustCompile(`^rlbench-verify:[0-9]{8}T[0-9]{6}-[0-9a-f]{8}:$`).MatchString(got) {
		t.Errorf("NewVerifyPrefix() = %q; want rlbench-verify:<run id>:", got)
	}
	if a, b := keyspace.NewRunID(), keyspace.NewRunID(); a == b {
		t.Errorf("NewRunID() twice = %q, %q; want two ids", a, b)
	}
}

// builtNames returns every name the builders make for one run of two
// targets under prefix, each with what made it.
func builtNames(prefix string) map[string]string {
	names := map[string]string{
		keyspace.PreflightKey(prefix): "PreflightKey",
		keyspace.ClaimKey(prefix):     "ClaimKey",
	}
	targets := []string{prefix, keyspace.TargetPrefix(prefix, 1), keyspace.TargetPrefix(prefix, 12)}
	for _, tp := range targets {
		names[keyspace.ObjectKey(tp, keyspace.ObjectACLUser, "rlbench-run-00000000000000aa")] = "ObjectKey acl-user"
		names[keyspace.ObjectKey(tp, keyspace.ObjectLibrary, "rlbench")] = "ObjectKey library"
		for _, strategy := range []string{"lua", "sliding_log", "my.script-1", "envoy-ratelimit", "X"} {
			for _, client := range clientNames {
				for _, i := range []int{0, 9, 123456789} {
					names[keyspace.Key(keyspace.Cell(tp, strategy, client), i)] = "Key(Cell)"
					names[keyspace.Key(keyspace.WarmupCell(tp, strategy, client), i)] = "Key(WarmupCell)"
				}
			}
		}
	}
	return names
}

// TestRunKeysBuildersRecognised checks that every name a builder makes is
// one of a run's keys, under the run's own prefix and under a shorter one
// (rlbench cleanup --prefix rlbench:), and that names outside are not.
func TestRunKeysBuildersRecognised(t *testing.T) {
	t.Parallel()
	r := keyspace.NewRunKeys(clientNames)
	p := keyspace.RunPrefix(runID)
	for name, by := range builtNames(p) {
		for _, under := range []string{p, keyspace.DefaultPrefix, ""} {
			if !r.Contains(under, name) {
				t.Errorf("Contains(%q, %q) = false; want true (made by %s)", under, name, by)
			}
		}
	}
	for _, tc := range []struct{ name, prefix, key string }{
		{"the prefix alone", p, p},
		{"a tenant's key", "r", "rate:user:42"},
		{"a tenant's hash-tagged key", "r", "ratelimit:user:{42}"},
		{"an unknown client", p, keyspace.Key(keyspace.Cell(p, "lua", "jedis"), 42)},
		{"no {N}", p, keyspace.Cell(p, "lua", "go-redis") + "42"},
		{"a tenant's key after {N}", p, keyspace.Key(keyspace.Cell(p, "lua", "go-redis"), 5) + " extra"},
		{"a record of another kind", p, p + keyspace.ObjectName + "channel:x"},
		{"a record with no name", p, keyspace.ObjectKey(p, keyspace.ObjectLibrary, "")},
		{"a record whose name has a space", p, keyspace.ObjectKey(p, keyspace.ObjectLibrary, "a b")},
		{"a name ending in preflight", p, p + "x" + keyspace.Preflight},
		{"a name ending in the claim's", p, p + "my" + keyspace.ClaimName},
		{"the claim's name and more", p, keyspace.ClaimKey(p) + "x"},
		{"a cell prefix alone", p, keyspace.Cell(p, "lua", "go-redis")},
	} {
		if r.Contains(tc.prefix, tc.key) {
			t.Errorf("%s: Contains(%q, %q) = true; want false", tc.name, tc.prefix, tc.key)
		}
	}
	if (keyspace.RunKeys{}).Contains(p, keyspace.ClaimKey(p)) {
		t.Error("RunKeys{}.Contains(the claim) = true; want false (the zero value recognises none)")
	}
}

// TestKeyIndex checks that KeyIndex reads back Key's index, and nothing
// of another shape.
func TestKeyIndex(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, key string
		want      int
		ok        bool
	}{
		{name: "first key", key: "p:{0}", want: 0, ok: true},
		{name: "large index", key: "p:{123456}", want: 123456, ok: true},
		{name: "other prefix", key: "q:{1}", ok: false},
		{name: "no braces", key: "p:12", ok: false},
		{name: "not a number", key: "p:{1a}", ok: false},
		{name: "empty index", key: "p:{}", ok: false},
		{name: "prefix only", key: "p:", ok: false},
		{name: "a suffix after it", key: "p:{1}:seq", ok: false},
		{name: "too many digits", key: "p:{" + strings.Repeat("9", 19) + "}", ok: false},
	} {
		if got, ok := keyspace.KeyIndex("p:", tc.key); got != tc.want || ok != tc.ok {
			t.Errorf("%s: KeyIndex(%q, %q) = (%d, %t); want (%d, %t)", tc.name, "p:", tc.key, got, ok, tc.want, tc.ok)
		}
	}
	for _, i := range []int{0, 7, 9999, 1_000_000_000} {
		if got, ok := keyspace.KeyIndex("p:", keyspace.Key("p:", i)); got != i || !ok {
			t.Errorf("KeyIndex(Key(p:, %d)) = (%d, %t); want (%d, true)", i, got, ok, i)
		}
	}
}

// TestKeyIndexAllocs checks that KeyIndex allocates nothing: the failover
// watch reads it on every decision. Not parallel: AllocsPerRun counts the
// whole process's allocations.
func TestKeyIndexAllocs(t *testing.T) {
	prefix := strings.Repeat("p", 100) + ":"
	key := keyspace.Key(prefix, 12345)
	if allocs := testing.AllocsPerRun(100, func() { keyspace.KeyIndex(prefix, key) }); allocs != 0 {
		t.Errorf("KeyIndex allocates %.0f times; want 0", allocs)
	}
}

// TestClaim checks that a claim's key and value are told back: its
// prefix, its run id, and a tenant's value of that name is no claim.
func TestClaim(t *testing.T) {
	t.Parallel()
	p := keyspace.RunPrefix(runID)
	key := keyspace.ClaimKey(p)
	if !keyspace.IsClaimKey(key) || keyspace.ClaimPrefix(key) != p {
		t.Errorf("IsClaimKey(%q), ClaimPrefix = %t, %q; want true, %q", key, keyspace.IsClaimKey(key), keyspace.ClaimPrefix(key), p)
	}
	if keyspace.IsClaimKey(p + "lua:go-redis:{1}") {
		t.Errorf("IsClaimKey(a counter) = true; want false")
	}
	v := keyspace.ClaimValue(runID, 4242, "host.example", time.Now())
	if !keyspace.IsClaimValue(v) || keyspace.ClaimRunID(v) != runID {
		t.Errorf("IsClaimValue(%q), ClaimRunID = %t, %q; want true, %q", v, keyspace.IsClaimValue(v), keyspace.ClaimRunID(v), runID)
	}
	long := keyspace.ClaimValue(runID, 1, strings.Repeat("h", keyspace.MaxClaimValue), time.Now())
	for _, tenant := range []string{"42", "run", "run x", long} {
		if keyspace.IsClaimValue(tenant) {
			t.Errorf("IsClaimValue(%.40q) = true; want false", tenant)
		}
	}
	if got := keyspace.ClaimRunID("42"); got != "" {
		t.Errorf("ClaimRunID(%q) = %q; want \"\"", "42", got)
	}
}

// TestParseObjectKey checks that a record's kind and name are read back
// from ObjectKey, and that other keys are no record.
func TestParseObjectKey(t *testing.T) {
	t.Parallel()
	p := keyspace.RunPrefix(runID)
	for _, kind := range []string{keyspace.ObjectACLUser, keyspace.ObjectLibrary} {
		k, n, ok := keyspace.ParseObjectKey(keyspace.ObjectKey(p, kind, "name_1"))
		if k != kind || n != "name_1" || !ok {
			t.Errorf("ParseObjectKey(ObjectKey(%q)) = %q, %q, %t; want %q, name_1, true", kind, k, n, ok, kind)
		}
	}
	for _, key := range []string{p + "rlbench-object:channel:x", keyspace.ObjectKey(p, keyspace.ObjectLibrary, "a:b"), keyspace.ObjectKey(p, keyspace.ObjectLibrary, ""), keyspace.Key(p, 1)} {
		if k, n, ok := keyspace.ParseObjectKey(key); ok {
			t.Errorf("ParseObjectKey(%q) = %q, %q, true; want false", key, k, n)
		}
	}
}

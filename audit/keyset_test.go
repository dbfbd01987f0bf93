package audit

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
)

// TestKeySetDistinguishes checks that keys which share a number or a shape
// stay distinct, that a key seen again is not new, and that every key ends
// up in the bitmaps or the hashes as its shape says.
func TestKeySetDistinguishes(t *testing.T) {
	t.Parallel()
	keys := []string{
		"rl:{5}", "rl:{05}", "rl:{50}", "rl:{5}x", "rl{5}", "rl:{5}:seq",
		"x#5", "x5#", "x##5", "5", "05", "0", "00", "a0", "a00",
		"user:123", "user:1234567890", "user:12345678901234567890", "user:999999999",
		"nodigits", "", "\x00", "a\x001", "a1\x00", "pfx:9:b", "pfx:9:c", "pfx:9b:9",
	}
	s := newKeySet()
	for _, k := range keys {
		if !s.add(k) {
			t.Errorf("add(%q), first time = false; want true", k)
		}
	}
	for _, k := range keys {
		if s.add(k) {
			t.Errorf("add(%q), again = true; want false", k)
		}
	}
	numbered := 0
	for _, bm := range s.shapes {
		numbered += int(bm.GetCardinality())
	}
	if numbered+len(s.hashes) != len(keys) {
		t.Errorf("%d keys in the bitmaps and %d in the hashes; want %d in all", numbered, len(s.hashes), len(keys))
	}
	if _, ok := s.shape("rl:{05}"); ok {
		t.Errorf(`shape("rl:{05}") ok; want a leading zero kept out of the bitmaps`)
	}
	if _, ok := s.shape("user:1234567890"); ok {
		t.Errorf(`shape("user:1234567890") ok; want a 10-digit number kept out of the bitmaps`)
	}
}

// TestKeySetMatchesMap adds random keys of a few shapes, with repeats, and
// checks each answer against a map of the keys themselves.
func TestKeySetMatchesMap(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	shapes := []string{"rl:lua:go-redis:{%d}", "rl:sliding-log:rueidis:{%d}:seq", "ratelimit:user:%d", "tok%d#", "%d"}
	s, want := newKeySet(), map[string]bool{}
	for range 200_000 {
		n := r.IntN(50_000)
		var k string
		switch r.IntN(3) {
		case 0:
			k = fmt.Sprintf(shapes[r.IntN(len(shapes))], n)
		case 1:
			k = "0" + strconv.Itoa(n) // a leading zero: the hashes
		default:
			k = fmt.Sprintf("k%x", n) // hex: digits, letters, or both
		}
		if got := s.add(k); got != !want[k] {
			t.Fatalf("add(%q) = %v; want %v", k, got, !want[k])
		}
		want[k] = true
	}
}

// BenchmarkKeySetMemory reports the heap a key set holds per key, for keys
// with a number in them (rlbench's own, a bitmap per shape) and for keys
// without (a hash each). An operation adds one distinct key; run it with
// -benchtime 1000000x for a figure per million keys.
func BenchmarkKeySetMemory(b *testing.B) {
	for _, tc := range []struct {
		name string
		key  func(i int) string
	}{
		{"numbered", func(i int) string { return "rl:lua:go-redis:{" + strconv.Itoa(i) + "}" }},
		{"hashed", func(i int) string { return "rl:lua:go-redis:" + letters(i) }},
	} {
		b.Run("keys="+tc.name, func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			s := newKeySet()
			for i := range b.N {
				s.add(tc.key(i * 10)) // spread, as random keys of a larger keyspace
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(s)
			if tc.name == "hashed" && len(s.hashes) != b.N {
				b.Fatalf("%d of %d keys hashed; want all", len(s.hashes), b.N)
			}
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "heap-B/key")
		})
	}
}

// letters writes i in base 26 with the letters a to z: a key part with no
// digit.
func letters(i int) string {
	b := []byte{byte('a' + i%26)}
	for i /= 26; i > 0; i /= 26 {
		b = append(b, byte('a'+i%26))
	}
	return string(b)
}

// TestKeySetShapeCap adds keys whose last number is not the one that varies
// (a shape each) past maxShapes, and checks that the bitmaps stop at the cap
// while every key still counts once.
func TestKeySetShapeCap(t *testing.T) {
	t.Parallel()
	s := newKeySet()
	const n = 3 * maxShapes
	for round := range 2 {
		for i := range n {
			k := "user:" + letters(i) + ":v2"
			if got := s.add(k); got != (round == 0) {
				t.Fatalf("round %d: add(%q) = %v; want %v", round, k, got, round == 0)
			}
		}
	}
	if len(s.shapes) != maxShapes || len(s.hashes) != n-maxShapes {
		t.Errorf("%d shapes and %d hashes; want %d and %d", len(s.shapes), len(s.hashes), maxShapes, n-maxShapes)
	}
}

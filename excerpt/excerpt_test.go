package excerpt

import (
	"fmt"
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 50<<20)
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"short", "ERR wrong number of arguments", "ERR wrong number of arguments"},
		{"at the limit", strings.Repeat("a", MaxBytes), strings.Repeat("a", MaxBytes)},
		{"50 MB", long, strings.Repeat("x", MaxBytes) + "... (52428800 bytes)"},
		// A 3-byte rune across the cut is left out whole.
		{"cut inside a rune", strings.Repeat("a", MaxBytes-1) + "€" + "tail", strings.Repeat("a", MaxBytes-1) + "... (262 bytes)"},
	}
	for _, tc := range tests {
		if got := Text(tc.in); got != tc.want {
			t.Errorf("%s: Text(%d bytes) = %.80q (%d bytes); want %.80q", tc.name, len(tc.in), got, len(got), tc.want)
		}
	}
}

func TestInts(t *testing.T) {
	t.Parallel()
	big := make([]int64, 200000)
	tests := []struct {
		in   []int64
		want string
	}{
		{nil, "[]"},
		{[]int64{1, 0}, fmt.Sprint([]int64{1, 0})},
		{big[:MaxInts], fmt.Sprint(big[:MaxInts])},
		{big, "[0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 ...] (200000 elements)"},
	}
	for _, tc := range tests {
		if got := Ints(tc.in); got != tc.want {
			t.Errorf("Ints(%d elements) = %q; want %q", len(tc.in), got, tc.want)
		}
	}
}

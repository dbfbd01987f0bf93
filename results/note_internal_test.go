package results

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestWriteNoteWraps checks writeNote's breaks, counted in characters, on
// text that is not all ASCII: multi-byte runes, and bytes that are not
// UTF-8 (a server's error text, a key name), which []rune widens to three
// bytes each.
func TestWriteNoteWraps(t *testing.T) {
	for _, tc := range []struct {
		name, line string
	}{
		// Two-byte runes: each line is cut at a space, whole runes.
		{"multi-byte", strings.Repeat("é ", 200)},
		// Bytes that are not UTF-8 before the first space past the width.
		{"not utf-8", strings.Repeat("\xff", 150) + " " + strings.Repeat("ab ", 20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			writeNote(&buf, tc.line)
			out := strings.TrimSuffix(buf.String(), "\n")
			var joined []string
			for i, l := range strings.Split(out, "\n") {
				if n := utf8.RuneCountInString(l); n > MaxNoteWidth {
					t.Errorf("line %d has %d characters; want at most %d", i, n, MaxNoteWidth)
				}
				joined = append(joined, strings.TrimSpace(l))
			}
			if got, want := strings.Join(joined, " "), strings.TrimSpace(tc.line); got != want {
				t.Errorf("writeNote lost or changed text: got %q; want %q", got, want)
			}
		})
	}
}

// Package excerpt shortens what rlbench quotes from a server in a message (a
// reply, an error reply, a key name) to a few hundred bytes, with the full
// size, so that a 50 MB error reply or a 200,000-element array does not
// become a 50 MB line on stderr or in a report.
package excerpt

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxBytes is the most of a quoted text that Text keeps.
const MaxBytes = 256

// MaxInts is the most elements of a quoted array that Ints keeps.
const MaxInts = 16

// Text returns s when it is at most MaxBytes long; else its first MaxBytes
// (cut at a UTF-8 boundary) and "... (N bytes)", N being len(s).
func Text(s string) string {
	if len(s) <= MaxBytes {
		return s
	}
	cut := MaxBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// Ints formats v as fmt's %v does, "[1 0]", keeping at most MaxInts
// elements: "[1 1 1 ... ] (200000 elements)" beyond.
func Ints(v []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, n := range v {
		if i == MaxInts {
			b.WriteString(" ...] (" + strconv.Itoa(len(v)) + " elements)")
			return b.String()
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(n, 10))
	}
	b.WriteByte(']')
	return b.String()
}

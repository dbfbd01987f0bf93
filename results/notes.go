package results

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The text report's notes after the table: said once for the cells they
// concern, and wrapped at MaxNoteWidth.

// MaxNoteWidth is the longest line of a note after the table, in
// characters: a longer one goes on over indented lines, broken between
// words. The notes say what they must in that room; docs/output.md gives
// each one's full reading.
const MaxNoteWidth = 160

// labelMark stands for a cell's label in the notes a section writes, so
// that the notes which say the same thing of several cells are printed
// once, naming them all.
const labelMark = "\x00"

// note is one line of a section, labelMark where its cells' labels go,
// and the cells it was said of, in run order.
type note struct {
	text   string
	labels []string
}

// addNote adds line, said of the cell labelled label, to notes: to the
// note that says the same, or as a new one.
func addNote(notes []note, line, label string) []note {
	for i := range notes {
		if notes[i].text == line {
			notes[i].labels = append(notes[i].labels, label)
			return notes
		}
	}
	return append(notes, note{text: line, labels: []string{label}})
}

// cellsText names the cells of a note: "all N cells" when they are every
// cell of a report of three or more; else their labels, joined by ", ",
// those of one strategy after another written once with their clients
// joined by "+": "naive/go-redis+rueidis, lua/go-redis".
func cellsText(labels []string, cells int) string {
	if len(labels) == cells && cells >= 3 {
		return fmt.Sprintf("all %d cells", cells)
	}
	var out []string
	prev := ""
	for _, l := range labels {
		i := strings.LastIndexByte(l, '/')
		if strategy := l[:i+1]; i >= 0 && strategy == prev {
			out[len(out)-1] += "+" + l[i+1:]
			continue
		}
		prev = l[:i+1]
		out = append(out, l)
	}
	return strings.Join(out, ", ")
}

// writeNote writes line, broken between words into lines of at most
// MaxNoteWidth characters, each after the first indented by two spaces.
func writeNote(buf *bytes.Buffer, line string) {
	prefix := ""
	for {
		room := MaxNoteWidth - utf8.RuneCountInString(prefix)
		if utf8.RuneCountInString(line) <= room {
			break
		}
		// The byte where the room's character after the last ends: a
		// byte that is not UTF-8 counts as one character, as
		// RuneCountInString counts it ([]rune would widen it to three).
		end, runes := len(line), 0
		for i := range line {
			if runes == room+1 {
				end = i
				break
			}
			runes++
		}
		cut := strings.LastIndexByte(line[:end], ' ')
		if cut <= 0 {
			break // one word longer than the line: left whole
		}
		buf.WriteString(prefix + line[:cut] + "\n")
		line, prefix = strings.TrimLeft(line[cut:], " "), "  "
	}
	buf.WriteString(prefix + line + "\n")
}

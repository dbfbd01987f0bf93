package results

import (
	"bytes"
	"fmt"
)

// Library is what a cell did with one library of Redis Functions: the
// function strategy's, or a --function file's. A library is server-wide
// state, outside the run's prefix.
type Library struct {
	// Name is the library's name.
	Name string `json:"name"`
	// Loaded is true when rlbench loaded it (it was absent); false when it
	// was there, with the same code, before the run: it was left as it was.
	Loaded bool `json:"loaded_by_rlbench"`
	// Reloads counts the times rlbench loaded it again during the run,
	// each after it had vanished: a FUNCTION FLUSH or FUNCTION DELETE by
	// another client, or a restart without persistence.
	Reloads int64 `json:"reloads"`
	// Deleted is true when rlbench deleted it (FUNCTION DELETE) at the end
	// of the cell, having loaded it.
	Deleted bool `json:"deleted"`
	// DeleteError is why that deletion failed; "" when it did not.
	DeleteError string `json:"delete_error,omitempty"`
}

// AddLibraries is the libraries of two parts of one cell (package merge):
// by name, loaded and deleted by either, their reloads added up.
func AddLibraries(a, b []Library) []Library {
	out := append([]Library(nil), a...)
	for _, l := range b {
		i := 0
		for i < len(out) && out[i].Name != l.Name {
			i++
		}
		if i == len(out) {
			out = append(out, l)
			continue
		}
		o := &out[i]
		// Deleted only when every part that loaded it deleted it: one
		// part's failed deletion is not hidden by another's success.
		deleted := (o.Deleted || !o.Loaded) && (l.Deleted || !l.Loaded) && (o.Loaded || l.Loaded)
		o.Loaded, o.Deleted, o.Reloads = o.Loaded || l.Loaded, deleted, o.Reloads+l.Reloads
		if o.DeleteError == "" {
			o.DeleteError = l.DeleteError
		}
	}
	return out
}

// String says what rlbench did with the library: "library rlbench:
// loaded by rlbench, deleted at the end (FUNCTION DELETE)", and how often
// it loaded it again after it vanished.
func (l Library) String() string {
	var what string
	switch {
	case !l.Loaded:
		what = "loaded, with the same code, before the run: left as it was"
	case l.Deleted && l.DeleteError == "":
		what = "loaded by rlbench, deleted at the end (FUNCTION DELETE)"
	case l.DeleteError != "":
		what = fmt.Sprintf("loaded by rlbench, NOT deleted (%s): FUNCTION DELETE %s removes it", l.DeleteError, l.Name)
	default:
		what = fmt.Sprintf("loaded by rlbench and left loaded: FUNCTION DELETE %s removes it", l.Name)
	}
	if l.Reloads > 0 {
		what += fmt.Sprintf("; it vanished during the run (a FUNCTION FLUSH or DELETE by another client, or a restart) and rlbench loaded it again %d %s",
			l.Reloads, plural(l.Reloads, "time", "times"))
	}
	return "library " + l.Name + ": " + what
}

// writeLibraries says, for each library of the run, whether rlbench
// loaded it and deleted it, and how often it had to load it again.
func writeLibraries(buf *bytes.Buffer, r Run, label string) {
	for _, l := range r.Libraries {
		fmt.Fprintf(buf, "%s %s\n", label, l)
	}
}

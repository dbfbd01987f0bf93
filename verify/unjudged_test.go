package verify_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/verify"
)

// TestUnjudged checks that a cell whose every try read too late to judge
// (Cell.TooLate) fails the matrix as one that could not judge, said in
// the verdict, and is not counted as a strategy not as documented.
func TestUnjudged(t *testing.T) {
	t.Parallel()
	late := verify.Cell{Outcome: verify.Fail, Note: "x (each of 3 tries read too late to judge)", TooLate: true}
	wrong := verify.Cell{Outcome: verify.Fail, Note: "y"}
	for _, tc := range []struct {
		name            string
		cells           map[string]verify.Cell
		wrong, unjudged int
		verdict         string
	}{
		{name: "could not judge", cells: map[string]verify.Cell{verify.CheckFirst: late}, unjudged: 1, verdict: "COULD NOT JUDGE (*): 1 cell: lua/go-redis first (FAIL): every try read too late"},
		{name: "both", cells: map[string]verify.Cell{verify.CheckFirst: late, verify.CheckExpiry: wrong}, wrong: 1, unjudged: 1,
			verdict: "NOT AS DOCUMENTED (*): 1 cell: lua/go-redis expiry (FAIL); COULD NOT JUDGE: lua/go-redis first (FAIL)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := matrix(private7, row("lua", "go-redis", luaProps, private7, tc.cells))
			if w, u := len(m.Wrong()), len(m.Unjudged()); w != tc.wrong || u != tc.unjudged || m.AsDocumented() {
				t.Errorf("Wrong() %d, Unjudged() %d, AsDocumented() %t; want %d, %d, false", w, u, m.AsDocumented(), tc.wrong, tc.unjudged)
			}
			var text bytes.Buffer
			if err := verify.Text(m)(&text); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), tc.verdict) || !strings.Contains(text.String(), "(COULD NOT JUDGE: expected pass)") {
				t.Errorf("Text() =\n%s\nwant the verdict %q and the note's (COULD NOT JUDGE: expected pass)", text.String(), tc.verdict)
			}
		})
	}
}

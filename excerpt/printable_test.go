package excerpt

import (
	"strings"
	"testing"
)

func TestPrintable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"plain", "lua", "lua"},
		{"a space and symbols", "redis 7.0.15 at 127.0.0.1:6379 (µs, €)", "redis 7.0.15 at 127.0.0.1:6379 (µs, €)"},
		{"clear-screen", "lua\x1b[2J", `"lua\x1b[2J"`},
		{"OSC title", "\x1b]0;pwned\x07", `"\x1b]0;pwned\a"`},
		{"carriage return and a fake line", "lua\rFAKE: all good\n", `"lua\rFAKE: all good\n"`},
		{"a tab", "a\tb", `"a\tb"`},
		{"a C1 control", "a\u009bb", `"a\u009bb"`},
		{"right-to-left override", "a\u202eb", `"a\u202eb"`},
		{"invalid UTF-8", "a\xffb", `"a\xffb"`},
	}
	for _, tc := range tests {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("%s: Printable(%q) = %s; want %s", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestQuote(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 1<<20)
	tests := []struct {
		name, in, want string
	}{
		{"short", "user:1", `"user:1"`},
		{"a control character", "a\nb", `"a\nb"`},
		{"1 MB", long, `"` + strings.Repeat("k", MaxBytes) + `"... (1048576 bytes)`},
	}
	for _, tc := range tests {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("%s: Quote(%d bytes) = %.80s (%d bytes); want %.80s", tc.name, len(tc.in), got, len(got), tc.want)
		}
	}
}

func TestPrintableAll(t *testing.T) {
	t.Parallel()
	type inner struct {
		Name   string
		hidden string
	}
	type outer struct {
		Label  string
		Ptr    *inner
		List   []inner
		Counts map[string]int
		Any    any
		Raw    []byte
	}
	v := outer{
		Label:  "a\rb",
		Ptr:    &inner{Name: "\x1b[2J", hidden: "\x1b"},
		List:   []inner{{Name: "ok"}, {Name: "x\ny"}},
		Counts: map[string]int{"ERR\x1b": 3, "plain": 1},
		Any:    map[string]any{"k": []any{"v\x07"}},
		Raw:    []byte("\x1b"),
	}
	PrintableAll(&v)
	if v.Label != `"a\rb"` || v.Ptr.Name != `"\x1b[2J"` || v.List[0].Name != "ok" || v.List[1].Name != `"x\ny"` {
		t.Errorf("PrintableAll: strings = %s, %s, %s, %s; want each quoted when it holds a control character", v.Label, v.Ptr.Name, v.List[0].Name, v.List[1].Name)
	}
	if v.Ptr.hidden != "\x1b" || string(v.Raw) != "\x1b" {
		t.Errorf("PrintableAll changed an unexported field or bytes: %q, %q", v.Ptr.hidden, v.Raw)
	}
	if len(v.Counts) != 2 || v.Counts[`"ERR\x1b"`] != 3 || v.Counts["plain"] != 1 {
		t.Errorf("PrintableAll: map = %v; want its key quoted, its values kept", v.Counts)
	}
	if got := v.Any.(map[string]any)["k"].([]any)[0]; got != `"v\a"` {
		t.Errorf("PrintableAll: a string in an interface = %s; want it quoted", got)
	}
}

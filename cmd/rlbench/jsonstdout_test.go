package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/verify"
)

// TestJSONToStdout runs the load run, verify and audit with --json -: the
// JSON is all of stdout, the human text goes to stderr, and no file named
// "-" is written (report and merge treat "-" the same way).
func TestJSONToStdout(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	auditPrefix := redistest.Prefix(t) + "audit:"
	if err := redistest.Client(t, srv).Set(t.Context(), auditPrefix+"k", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		decode func([]byte) error
		text   string // a line of the human text, on stderr
	}{
		{
			name: "load",
			args: []string{"--addr", srv.Addr(), "--prefix", redistest.Prefix(t) + "load:", "--strategy", "lua",
				"--client", "rueidis", "--clients", "2", "--keys", "2", "--duration", "200ms", "--json", "-"},
			decode: func(b []byte) error { var r results.Report; return json.Unmarshal(b, &r) },
			text:   "lua",
		},
		{
			name: "verify",
			args: []string{"verify", "--addr", srv.Addr(), "--prefix", redistest.Prefix(t) + "verify:",
				"--strategy", "lua", "--client", "rueidis", "--json", "-"},
			decode: func(b []byte) error { var m verify.Matrix; return json.Unmarshal(b, &m) },
			text:   "every cell is as documented",
		},
		{
			name:   "audit",
			args:   []string{"audit", "--addr", srv.Addr(), "--match", auditPrefix + "*", "--json", "-"},
			decode: func(b []byte) error { var r audit.Report; return json.Unmarshal(b, &r) },
			text:   "immortal",
		},
	}
	for _, tc := range tests {
		res := mustRun(t, exitOK, tc.args...)
		if !json.Valid([]byte(res.stdout)) || tc.decode([]byte(res.stdout)) != nil {
			t.Errorf("%s: run(%q) stdout is not the JSON report:\n%s", tc.name, tc.args, res.stdout)
		}
		if !strings.Contains(res.stderr, tc.text) {
			t.Errorf("%s: run(%q) stderr lacks the text %q:\n%s", tc.name, tc.args, tc.text, res.stderr)
		}
		if _, err := os.Stat("-"); err == nil {
			os.Remove("-")
			t.Errorf("%s: run(%q) wrote a file named -", tc.name, tc.args)
		}
	}
}

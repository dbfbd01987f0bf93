package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/redistest"
)

// TestHugeReplyQuotedShort is issue 22, item 15: a script's 5 MB error
// reply went whole to stderr, and so did a 200,000-element reply. A quote
// keeps a few hundred bytes and says how long the whole was.
func TestHugeReplyQuotedShort(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := t.TempDir()
	tests := []struct {
		name, src, want string
	}{
		{"error", "return redis.error_reply(string.rep('x', 5000000))", "... (5000004 bytes)"},
		{"array", "local t = {} for i = 1, 200000 do t[i] = 1 end return t", "got [1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 ...] (200000 elements)"},
	}
	for _, tc := range tests {
		path := filepath.Join(dir, tc.name+".lua")
		if err := os.WriteFile(path, []byte(tc.src+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, client := range []string{"go-redis", "rueidis"} {
			args := []string{"--addr", srv.Addr(), "--prefix", redistest.Prefix(t) + tc.name + ":" + client + ":",
				"--script", tc.name + "=" + path, "--client", client, "--clients", "1", "--duration", "100ms", "-q"}
			res := mustRun(t, exitFailure, args...)
			if len(res.stderr) > 4096 || !strings.Contains(res.stderr, tc.want) {
				t.Errorf("%s/%s: run(%q) stderr is %d bytes, %.600q; want at most 4096 and %q", tc.name, client, args, len(res.stderr), res.stderr, tc.want)
			}
		}
	}
}

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/redistest"
)

// TestHugeReplyQuotedShort is issue 22, item 15: a script's 5 MB error
// reply went whole to stderr, and so did a 200,000-element reply. A quote
// keeps a few hundred bytes and says how long the whole was. It runs the
// built command: a --script registers its strategy for the process, and
// "all" in the other tests of this one would then include it.
func TestHugeReplyQuotedShort(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	bin := rlbenchBinary(t)
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
				"--script", tc.name + "=" + path, "--client", client, "--clients", "1", "--duration", "100ms", "--warmup", "0", "-q"}
			var stderr bytes.Buffer
			cmd := exec.Command(bin, args...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != exitFailure {
				t.Errorf("%s/%s: rlbench %q: %v; want exit status %d", tc.name, client, args, err, exitFailure)
			}
			if stderr.Len() > 4096 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("%s/%s: rlbench %q stderr is %d bytes, %.600q; want at most 4096 and %q", tc.name, client, args, stderr.Len(), stderr.String(), tc.want)
			}
		}
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUserCodeFilesRegularOnly is issue 34, item 12: a file of user code
// (--script, --function, for a load run and for verify) is read only when
// it is a regular file of 1 MiB at most. /dev/zero (which grew rlbench
// to 24 GB), a FIFO with no writer (which held it forever, deaf to
// signals), a directory and a file too large are each refused at once,
// exit 2, naming the flag, before anything touches a server.
func TestUserCodeFilesRegularOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.lua")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	large := filepath.Join(dir, "large.lua")
	if err := os.WriteFile(large, []byte("return {1, 1}\n"+strings.Repeat("-- padding\n", 100_000)), 0o600); err != nil {
		t.Fatal(err)
	}
	files := []struct{ name, path, want string }{
		{"zero", "/dev/zero", "not a regular file (a device)"},
		{"fifo", fifo, "not a regular file (a FIFO)"},
		{"dir", dir, "not a regular file (a directory)"},
		{"large", large, "larger than the 1024 KiB a file of user code may be: 1100014 bytes"},
	}
	for _, f := range files {
		for _, flag := range []string{"--script", "--function"} {
			for _, cmd := range [][]string{{"--addr", closedAddr(t)}, {"verify", "--addr", closedAddr(t)}} {
				args := append(cmd, flag, "u_"+f.name+"="+f.path)
				done := make(chan cliResult, 1)
				go func() { done <- runCLI(t, t.Context(), args...) }()
				select {
				case res := <-done:
					want := flag + ": bad user strategy: " + f.path + ": " + f.want
					if res.code != exitUsage || !strings.Contains(res.stderr, want) {
						t.Errorf("run(%q) = %d, stderr %q; want %d saying %q", args, res.code, res.stderr, exitUsage, want)
					}
				case <-time.After(60 * time.Second):
					t.Fatalf("run(%q) still reading after 60 s; want a refusal at once", args)
				}
			}
		}
	}
}

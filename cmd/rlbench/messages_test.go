package main

import (
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/redistest"
)

// TestCommandInfoConnectionLost is issue 34, item 19: a
// client-output-buffer limit that closed the connection mid-reply of
// COMMAND INFO was reported as bad input ("--strategy: ...: acl: command
// info: EOF", exit status 2). A connection that fails is a failure (exit
// status 1) that says what happened.
func TestCommandInfoConnectionLost(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	// Larger than INFO's replies, smaller than COMMAND INFO's.
	if err := rdb.ConfigSet(t.Context(), "client-output-buffer-limit", "normal 4096 4096 0").Err(); err != nil {
		t.Fatal(err)
	}
	args := []string{"--addr", srv.Addr(), "--prefix", redistest.Prefix(t), "--requests", "100", "--clients", "2"}
	res := mustRun(t, exitFailure, args...)
	for _, want := range []string{"COMMAND INFO: the connection failed before the reply", "client-output-buffer-limit"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("rlbench %q stderr =\n%s\nwant %q", args, res.stderr, want)
		}
	}
	if strings.Contains(res.stderr, "--strategy:") {
		t.Errorf("rlbench %q stderr =\n%s\nwant no flag blamed: the input was good", args, res.stderr)
	}
}

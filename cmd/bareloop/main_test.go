package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunRejectsBadFlags checks that bad flags end with exit 2 and a
// message naming the flag, before anything connects.
func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{name: "no addr", args: nil, want: "--addr is required"},
		{name: "unknown client", args: []string{"--addr", "x:1", "--client", "jedis"}, want: `--client: unknown client "jedis"`},
		{name: "connections not a power of two", args: []string{"--addr", "x:1", "--client", "valkey-go", "--connections", "3"}, want: "--connections: valkey-go: invalid connection count"},
		{name: "negative connections", args: []string{"--addr", "x:1", "--connections", "-1"}, want: "--connections: go-redis: invalid connection count"},
		{name: "zero clients", args: []string{"--addr", "x:1", "--clients", "0"}, want: "--clients must be >= 1"},
		{name: "zero workers", args: []string{"--addr", "x:1", "--workers", "0"}, want: "--workers must be >= 1"},
		{name: "too many keys", args: []string{"--addr", "x:1", "--keys", "2000000000"}, want: "--keys must be from 1 to 1000000000"},
		{name: "zero duration", args: []string{"--addr", "x:1", "--duration", "0s"}, want: "--duration must be > 0"},
		{name: "argument", args: []string{"--addr", "x:1", "extra"}, want: `unexpected argument "extra"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tc.args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("run(%q) = %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), exitUsage, tc.want)
			}
		})
	}
}

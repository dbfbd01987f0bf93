package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{name: "zero runs", args: []string{"--runs", "0"}, want: "--runs must be >= 1"},
		{name: "zero seconds", args: []string{"--seconds", "0"}, want: "--seconds must be >= 1"},
		{name: "negative threads", args: []string{"--rb-threads", "-1"}, want: "--rb-threads must be >= 0"},
		{name: "zero keys", args: []string{"--keys", "0"}, want: "--keys must be 1 to 1000000000"},
		{name: "too many keys", args: []string{"--keys", "1000000001"}, want: "--keys must be 1 to 1000000000"},
		{name: "unknown flag", args: []string{"--duration", "5s"}, want: "unknown flag: --duration"},
		{name: "argument", args: []string{"extra"}, want: `unexpected argument "extra"`},
		{name: "unknown client", args: []string{"--client", "rueidis,jedis"}, want: `--client: "jedis": no target has this client (accepted: go-redis, rueidis, valkey-go, redigo)`},
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

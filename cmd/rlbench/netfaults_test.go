package main

import (
	"strings"
	"testing"
)

// TestNetworkFaultBadInput: a malformed network fault, or one on a
// topology whose clients would dial past the proxy, is bad input (exit
// status 2) that names the flag and the accepted syntax, before any server
// is started.
func TestNetworkFaultBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"latency without its ms", []string{"--fault", "latency@1s:2s"}, `latency needs MS after its length`},
		{"jitter above the latency", []string{"--fault", "latency@1s:2s:50~60"}, `bad jitter "60"`},
		{"probability above 1", []string{"--fault", "reply-loss@1s:2s:1.5"}, `bad probability "1.5": want a number in (0, 1]`},
		{"partition without a length", []string{"--fault", "partition@1s"}, `partition needs a length D`},
		{"reset with an argument", []string{"--fault", "reset@1s:2s"}, `reset takes no argument`},
		{"on a cluster", []string{"--fault", "reset@1s", "--managed-cluster", "3"}, `reset@1s needs a single server`},
		{"on sentinel", []string{"--fault", "partition@1s:1s", "--managed-sentinel", "1"}, `partition@1s:1s needs a single server`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := mustRun(t, exitUsage, append([]string{"--duration", "3s"}, tc.args...)...)
			if !strings.Contains(res.stderr, "--fault: ") || !strings.Contains(res.stderr, tc.want) {
				t.Errorf("%q: stderr %q; want --fault and %q", tc.args, res.stderr, tc.want)
			}
		})
	}
}

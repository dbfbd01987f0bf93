package main

import (
	"bytes"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestDidYouMean checks the did-you-mean of a mistyped flag or command:
// exit status 2 and the name meant, on every command.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"load flag", []string{"--strategi", "lua"}, `rlbench: unknown flag: --strategi; did you mean --strategy? (see rlbench --help)`},
		{"load flag with a value", []string{"--client=all", "--duraton=1s"}, `did you mean --duration?`},
		{"subcommand flag", []string{"audit", "--mach", "x:*"}, `rlbench audit: unknown flag: --mach; did you mean --match?`},
		{"verify flag", []string{"verify", "--clinet", "all"}, `did you mean --client?`},
		{"transposed command", []string{"audti"}, `rlbench: unknown command "audti"; did you mean audit? (see rlbench --help)`},
		{"command missing a letter", []string{"verfy", "--strategy", "lua"}, `did you mean verify?`},
		{"version", []string{"--verison"}, `rlbench: unknown flag: --verison; did you mean --version?`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stderr := runArgs(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("run(%q) = %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.want)
			}
		})
	}
	// Nothing close: no guess.
	for _, args := range [][]string{{"--zzzzzz"}, {"frobnicate"}, {"--seed", "x"}} {
		code, stderr := runArgs(t, args...)
		if code != exitUsage || strings.Contains(stderr, "did you mean") {
			t.Errorf("run(%q) = %d, stderr %q; want %d and no guess", args, code, stderr, exitUsage)
		}
	}
}

// runArgs calls run with exactly args (runCLI adds --warmup to a load
// run), and returns its exit status and stderr.
func runArgs(t *testing.T, args ...string) (code int, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = testCLI.main(t.Context(), args, &out, &errOut)
	return code, errOut.String()
}

// TestEditDistance checks the distance behind the did-you-mean.
func TestEditDistance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"audit", "audit", 0},
		{"audti", "audit", 1}, // a transposition
		{"strategi", "strategy", 1},
		{"verfy", "verify", 1},
		{"", "abc", 3},
		{"kitten", "sitting", 3},
	}
	for _, tc := range tests {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d; want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestVersion runs a built rlbench --version: the Go version and the
// client libraries' versions of the build, and a commit line.
func TestVersion(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(rlbenchBinary(t), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("rlbench --version: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 7 {
		t.Fatalf("rlbench --version printed %d lines; want 7 (rlbench, its commit, Go, four clients):\n%s", len(lines), out)
	}
	for i, prefix := range []string{"rlbench ", "commit ", "go " + runtime.Version() + " ", "go-redis github.com/redis/go-redis/v9 v9.", "rueidis github.com/redis/rueidis v1.",
		"redigo github.com/gomodule/redigo v1.", "valkey-go github.com/valkey-io/valkey-go v1."} {
		if !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("rlbench --version line %d = %q; want it to start with %q", i+1, lines[i], prefix)
		}
	}
	if code, stderr := runArgs(t, "--version", "extra"); code != exitUsage || !strings.Contains(stderr, `rlbench --version: unexpected argument "extra"`) {
		t.Errorf("run(--version extra) = %d, stderr %q; want %d and the unexpected argument", code, stderr, exitUsage)
	}
}

// TestVersionText checks the lines of --version for a build with a
// commit, a replaced client module and none of the other.
func TestVersionText(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{
		GoVersion: "go1.99.1",
		Main:      debug.Module{Path: "github.com/rlbench/rlbench", Version: "v1.2.3"},
		Deps: []*debug.Module{
			{Path: "github.com/redis/go-redis/v9", Version: "v9.0.0", Replace: &debug.Module{Path: "../go-redis", Version: "v9.9.9"}},
		},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef"},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	want := "rlbench v1.2.3\n" +
		"commit 0123456789abcdef (with uncommitted changes), committed 2026-01-02T03:04:05Z\n" +
		"go go1.99.1 " + runtime.GOOS + "/" + runtime.GOARCH + "\n" +
		"go-redis github.com/redis/go-redis/v9 v9.9.9\n" +
		"rueidis github.com/redis/rueidis unknown\n" +
		"redigo github.com/gomodule/redigo unknown\n" +
		"valkey-go github.com/valkey-io/valkey-go unknown\n"
	if got := versionText(bi); got != want {
		t.Errorf("versionText() =\n%s\nwant\n%s", got, want)
	}
}

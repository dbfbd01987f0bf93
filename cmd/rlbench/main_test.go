package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/porttest"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

// cliResult is what one call of run returned and wrote.
type cliResult struct {
	code   int
	stdout string
	stderr string
}

// runCLI calls run with args, stdout and stderr captured in buffers (so
// stdout is never a terminal), under ctx.
//
// A load run gets --warmup 0 unless the test gives one: the default warm-up
// (a second per cell) would only slow the tests; TestRunPrivateServer keeps
// the default.
func runCLI(t *testing.T, ctx context.Context, args ...string) cliResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	loadRun := len(args) > 0 && strings.HasPrefix(args[0], "-")
	if loadRun && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--warmup") }) &&
		!strings.HasPrefix(t.Name(), "TestRunPrivateServer") {
		args = append([]string{"--warmup=0"}, args...)
	}
	code := testCLI.main(ctx, args, &stdout, &stderr)
	return cliResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// mustRun calls run with args and fails the test unless it exits with want.
func mustRun(t *testing.T, want int, args ...string) cliResult {
	t.Helper()
	res := runCLI(t, t.Context(), args...)
	if res.code != want {
		t.Fatalf("run(%q) = %d; want %d\nstdout:\n%s\nstderr:\n%s", args, res.code, want, res.stdout, res.stderr)
	}
	return res
}

// closedAddr returns a loopback address that refuses connections while the
// test runs (porttest.Refused: the port is held, so no server of a test
// beside it can take it).
func closedAddr(t *testing.T) string {
	t.Helper()
	return porttest.Refused(t)
}

// untouchedCommands are the only commands a server may have run when rlbench
// must not have touched it: the connection handshake of the probe that reads
// INFO server, and the test's own DBSIZE and INFO. Subcommands of CLIENT
// (e.g. client|setinfo) are also allowed.
var untouchedCommands = []string{"ping", "info", "hello", "auth", "select", "dbsize"}

// checkUntouched fails the test unless the server behind rdb holds no key and
// has run no command beyond untouchedCommands: no SET, INCR, EXPIRE, EVALSHA,
// EVAL, MULTI, SCAN, UNLINK or anything else.
func checkUntouched(t *testing.T, rdb *redis.Client, args []string) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	n, err := rdb.DBSize(ctx).Result()
	if err != nil {
		t.Fatalf("DBSIZE: %v", err)
	}
	if n != 0 {
		t.Errorf("after run(%q): DBSIZE = %d; want 0", args, n)
	}
	stats, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	var ran []string // commands beyond untouchedCommands, with their call counts
	for _, line := range strings.Split(stats, "\n") {
		stat, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
		if !ok {
			continue
		}
		name, rest, _ := strings.Cut(stat, ":")
		if slices.Contains(untouchedCommands, name) || strings.HasPrefix(name, "client|") {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		ran = append(ran, name+" ("+calls+")")
	}
	if len(ran) > 0 {
		slices.Sort(ran)
		t.Errorf("after run(%q): server ran %s; want nothing beyond %v", args, strings.Join(ran, ", "), untouchedCommands)
	}
}

func TestRunBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		// target points the run at a private redistest server with --addr and
		// checks afterwards that nothing touched it.
		target bool
		// want are substrings of the single stderr line: the flag at fault
		// and what is accepted; notWant must not be in it. In both, and in
		// args, {closed} is a loopback address nothing listens on, {dir} a
		// directory and {file} a regular file.
		want, notWant []string
	}{
		{
			name:   "unknown strategy",
			args:   []string{"--strategy", "nope"},
			target: true,
			want:   append([]string{"--strategy", `"nope"`}, strategies.Names()...),
		},
		{
			name:   "unknown strategy after a good one",
			args:   []string{"--strategy", "lua,nope"},
			target: true,
			want:   append([]string{"--strategy", `"nope"`}, strategies.Names()...),
		},
		{
			name:   "unknown strategy beside all",
			args:   []string{"--strategy", "all,nope"},
			target: true,
			want:   append([]string{"--strategy", `"nope"`}, strategies.Names()...),
		},
		{
			name:   "negative script timeout",
			args:   []string{"--script-timeout", "-1s"},
			target: true,
			want:   []string{"--script-timeout", "-1s"},
		},
		{
			name:   "sequence with an unknown placeholder",
			args:   []string{"--sequence", "x=INCRBY {key} {nope}"},
			target: true,
			want:   []string{"--sequence", "{nope}", "{window}"},
		},
		{
			name:   "sequence with a key outside the prefix",
			args:   []string{"--sequence", "x=INCR {key} | EXPIRE other 1"},
			target: true,
			want:   []string{"--sequence", `"other"`, "{key}"},
		},
		{
			name:   "unknown client",
			args:   []string{"--client", "nope"},
			target: true,
			want:   append([]string{"--client", `"nope"`}, clients.Names...),
		},
		{
			name:   "unknown client beside all",
			args:   []string{"--client", "all,nope"},
			target: true,
			want:   append([]string{"--client", `"nope"`}, clients.Names...),
		},
		{
			name:   "zero clients",
			args:   []string{"--clients", "0"},
			target: true,
			want:   []string{"--clients", "from 1 to 1000000"},
		},
		{
			name:   "negative clients",
			args:   []string{"--clients", "-3"},
			target: true,
			want:   []string{"--clients", "from 1 to 1000000"},
		},
		{
			name:   "zero workers",
			args:   []string{"--workers", "0"},
			target: true,
			want:   []string{"--workers", "from 1 to 1000000"},
		},
		{
			name:   "zero procs",
			args:   []string{"--procs", "0"},
			target: true,
			want:   []string{"--procs", ">= 1"},
		},
		{
			name:   "zero keys",
			args:   []string{"--keys", "0"},
			target: true,
			want:   []string{"--keys", ">= 1"},
		},
		{
			name:   "zero window",
			args:   []string{"--window", "0"},
			target: true,
			want:   []string{"--window", "whole number of seconds >= 1"},
		},
		{
			name:   "fractional window",
			args:   []string{"--window", "1.5"},
			target: true,
			want:   []string{"--window", "whole number of seconds >= 1", `"1.5"`},
		},
		{
			name:   "sub-second window",
			args:   []string{"--window", "500ms"},
			target: true,
			want:   []string{"--window", "whole number of seconds >= 1", `"500ms"`},
		},
		{
			name:   "zero limit",
			args:   []string{"--limit", "0"},
			target: true,
			want:   []string{"--limit", ">= 1"},
		},
		{
			name:   "negative limit",
			args:   []string{"--limit", "-1"},
			target: true,
			want:   []string{"--limit", ">= 1"},
		},
		{
			name:   "unknown key distribution",
			args:   []string{"--key-dist", "nope"},
			target: true,
			want:   []string{"--key-dist", `"nope"`, "uniform", "zipf", "hot"},
		},
		{
			name:   "negative requests",
			args:   []string{"--requests", "-1"},
			target: true,
			want:   []string{"--requests", ">= 0"},
		},
		{
			name:   "neither duration nor requests",
			args:   []string{"--duration", "0", "--requests", "0"},
			target: true,
			want:   []string{"--duration", "request"},
		},
		{
			name:   "negative db",
			args:   []string{"--db", "-1"},
			target: true,
			want:   []string{"--db", ">= 0"},
		},
		{
			name:   "unparsable clients",
			args:   []string{"--clients", "abc"},
			target: true,
			want:   []string{"--clients", `"abc"`, "integer"},
		},
		{
			name:   "unknown flag",
			args:   []string{"--bogus"},
			target: true,
			want:   []string{"--bogus"},
		},
		{
			name:   "stray argument",
			args:   []string{"lua"},
			target: true,
			want:   []string{`"lua"`, "--help"},
		},
		{
			name: "unreachable addr",
			// The address is filled in below: a port nothing listens on.
			args: []string{"--addr", "{closed}"},
			want: []string{"--addr", "leave out --addr"},
		},
		// Issue 12: an explicitly empty value is bad input (usually an
		// unset shell variable), not the default.
		{name: "empty addr", args: []string{"--addr", ""}, target: true, want: []string{"--addr", "empty value", "leave out --addr"}},
		{name: "empty addr alone", args: []string{"--addr", ""}, want: []string{"--addr", "empty value"}},
		{name: "empty addr after a label", args: []string{"--addr", "a="}, target: true, want: []string{"--addr", "empty value"}},
		{name: "empty strategy", args: []string{"--strategy", ""}, target: true, want: append([]string{"--strategy", "empty name"}, strategies.Names()...)},
		{name: "empty strategy in a list", args: []string{"--strategy", "lua,"}, target: true, want: []string{"--strategy", "empty name"}},
		{name: "empty client", args: []string{"--client", ""}, target: true, want: append([]string{"--client", "empty name"}, clients.Names...)},
		{name: "empty redis-server", args: []string{"--redis-server", ""}, target: true, want: []string{"--redis-server", "empty value"}},
		{name: "empty cluster", args: []string{"--cluster", ""}, target: true, want: []string{"--cluster", "empty value"}},
		{name: "empty cluster node", args: []string{"--cluster", "{closed},,{closed}"}, want: []string{"--cluster", "empty node"}},
		{name: "empty managed-cluster", args: []string{"--managed-cluster", ""}, target: true, want: []string{"--managed-cluster", "empty value"}},
		{name: "empty prefix", args: []string{"--prefix", ""}, target: true, want: []string{"--prefix", "empty value"}},
		// Issue 12: every output path is checked before the first write.
		{name: "json is a directory", args: []string{"--json", "{dir}"}, target: true, want: []string{"--json", "{dir}", "is a directory"}},
		{name: "cpuprofile is a directory", args: []string{"--cpuprofile", "{dir}"}, target: true, want: []string{"--cpuprofile", "{dir}", "is a directory"}},
		{name: "hdr-dir is a file", args: []string{"--hdr-dir", "{file}"}, target: true, want: []string{"--hdr-dir", "{file}"}},
		// Issue 24: the client settings are checked before any load.
		{name: "negative retries", args: []string{"--retries", "-1"}, target: true, want: []string{"--retries", ">= 0", "-1"}},
		{name: "unparsable retries", args: []string{"--retries", "x"}, target: true, want: []string{"--retries", `"x"`}},
		{name: "negative read timeout", args: []string{"--read-timeout", "-1s"}, target: true, want: []string{"--read-timeout", ">= 0"}},
		{name: "negative write timeout", args: []string{"--write-timeout", "-1s"}, target: true, want: []string{"--write-timeout", ">= 0"}},
		{name: "negative dial timeout", args: []string{"--dial-timeout", "-1s"}, target: true, want: []string{"--dial-timeout", ">= 0"}},
		{
			name:   "rueidis with two timeouts",
			args:   []string{"--client", "rueidis", "--read-timeout", "1s", "--write-timeout", "2s"},
			target: true,
			want:   []string{"--read-timeout", "ConnWriteTimeout", "same value"},
		},
		// Issue 27: what a client cannot take is refused before any load,
		// naming the flag and what the client accepts.
		{name: "redigo on a cluster", args: []string{"--client", "redigo", "--cluster", "{closed}"}, want: []string{"--client", "redigo", "cluster", "redigo supports: single server"}},
		{name: "redigo on sentinel", args: []string{"--client", "redigo", "--managed-sentinel", "0"}, want: []string{"--client", "redigo", "sentinel", "redigo supports: single server"}},
		{name: "redigo with retries", args: []string{"--client", "redigo", "--retries", "1"}, target: true, want: []string{"--retries", "redigo has no retries"}},
		{name: "valkey-go with two timeouts", args: []string{"--client", "valkey-go", "--read-timeout", "1s", "--write-timeout", "2s"}, target: true, want: []string{"--read-timeout", "ConnWriteTimeout"}},
		{name: "connections not a power of two", args: []string{"--client", "go-redis,valkey-go", "--connections", "3"}, target: true, want: []string{"--connections", "valkey-go", "power of two", "got 3"}},
		{name: "negative connections", args: []string{"--connections", "-1"}, target: true, want: []string{"--connections", ">= 1", "-1"}},
		// Issue 24: --min-replicas and split-brain need a private Sentinel set-up.
		{name: "min-replicas on a server", args: []string{"--min-replicas", "1"}, target: true, want: []string{"--min-replicas", "--managed-sentinel R"}},
		{name: "min-replicas above the replicas", args: []string{"--managed-sentinel", "1", "--min-replicas", "2"}, want: []string{"--min-replicas", "R >= 2"}},
		{name: "min-replicas-max-lag alone", args: []string{"--managed-sentinel", "1", "--min-replicas-max-lag", "2"}, want: []string{"--min-replicas-max-lag", "--min-replicas N"}},
		{name: "split brain on a server", args: []string{"--fault", "split-brain@10ms:1s", "--duration", "5s"}, target: true, want: []string{"--fault", "split-brain", "--managed-sentinel R"}},
		{name: "threshold of no cell", args: []string{"--strategy", "lua", "--client", "go-redis", "--threshold", "lua/rueidis:errors==0"}, target: true, want: []string{"--threshold", "lua/rueidis:errors==0", "no cell lua/rueidis", "clients go-redis"}},
		{name: "overlapping partitions", args: []string{"--fault", "partition@1s:3s", "--fault", "partition@1500ms:500ms", "--duration", "5s"}, target: true, want: []string{"--fault", "partition@1s:3s", "partition@1.5s:500ms", "overlap"}},
		{name: "split brain without a length", args: []string{"--managed-sentinel", "1", "--fault", "split-brain@1s"}, want: []string{"--fault", "split-brain@T:D"}},
		// Issue 12: --procs has a bound.
		{name: "too many procs", args: []string{"--procs", "100000"}, target: true, want: []string{"--procs", "<= 1024", "100000"}},
		// Issue 12: credentials given in an address are never echoed.
		{
			name:    "URL with credentials",
			args:    []string{"--addr", "redis://user:secret@{closed}/0"},
			want:    []string{"--addr", "redis://xxxxx@", "host:port", "--password"},
			notWant: []string{"secret", "user"},
		},
		{
			name:    "URL with credentials and a label",
			args:    []string{"--addr", "prod=redis://user:s3cr=t@{closed}"},
			want:    []string{"--addr", "xxxxx@"},
			notWant: []string{"s3cr", "=t@"},
		},
		{
			name:    "credentials without a scheme",
			args:    []string{"--addr", "user:secret@{closed}"},
			want:    []string{"--addr", "xxxxx@", "credentials"},
			notWant: []string{"secret"},
		},
		{
			name:    "cluster node with credentials",
			args:    []string{"--cluster", "{closed},rediss://:secret@{closed}"},
			want:    []string{"--cluster", "xxxxx@"},
			notWant: []string{"secret"},
		},
		{name: "URL without credentials", args: []string{"--addr", "redis://{closed}"}, want: []string{"--addr", "is a URL", "host:port"}},
		{
			name:    "URL with a password not percent-encoded, and --cacert",
			args:    []string{"--url", "rediss://u:top/secret@{closed}", "--cacert", "ca.pem"},
			want:    []string{"--url", "percent-encoded"},
			notWant: []string{"secret", "top", "--cacert"},
		},
		{
			name:    "sentinel with a password",
			args:    []string{"--sentinel", "m@u:secret@{closed}"},
			want:    []string{"--sentinel", "takes no credentials"},
			notWant: []string{"secret"},
		},
		{
			name: "missing redis-server",
			args: []string{"--redis-server", "/nonexistent/redis-server"},
			want: []string{"--redis-server", "/nonexistent/redis-server", "name an executable redis-server"},
		},
		// Issue 26: the metrics address is checked, and listened on, first.
		{name: "metrics-addr without a port", args: []string{"--metrics-addr", "localhost"}, target: true, want: []string{"--metrics-addr", `"localhost"`, "HOST:PORT"}},
		{name: "metrics-addr port out of range", args: []string{"--metrics-addr", "127.0.0.1:70000"}, target: true, want: []string{"--metrics-addr", "70000", "HOST:PORT"}},
		{name: "malformed threshold", args: []string{"--threshold", "p99<5"}, target: true, want: []string{"--threshold", `"p99<5"`, "METRIC OP VALUE", "p99<5ms"}},
		{name: "threshold of no metric", args: []string{"--threshold", "latency<5ms"}, target: true, want: []string{"--threshold", "unknown metric", "throughput"}},
		{name: "metrics-addr in use", args: []string{"--metrics-addr", "{closed}"}, target: true, want: []string{"--metrics-addr", "listen"}},
		// Not covered: a strategy the server is too old to run (also exit 2,
		// naming --strategy). redis-server 7.0 runs every strategy, so it
		// cannot be produced here.
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			placeholders := strings.NewReplacer("{closed}", closedAddr(t), "{dir}", t.TempDir(), "{file}", tempFile(t))
			args := slices.Clone(tc.args)
			for i := range args {
				args[i] = placeholders.Replace(args[i])
			}
			var rdb *redis.Client
			if tc.target {
				srv := redistest.Start(t)
				rdb = redistest.Client(t, srv)
				// A short duration first, so that input wrongly accepted
				// makes short runs instead of 10s ones; the case's own
				// flags come after it and win.
				base := []string{"--addr", srv.Addr(), "--prefix", redistest.Prefix(t), "--duration", "100ms"}
				args = append(base, args...)
			}
			// Bad input is refused before any load; the bound only stops a
			// run that hangs, and is wide enough for a loaded machine that
			// starts many servers at once.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			res := runCLI(t, ctx, args...)
			if rdb != nil {
				defer checkUntouched(t, rdb, args)
			}
			if res.code != exitUsage {
				// The output is that of a run, not of a refusal: show it
				// once rather than check its shape.
				t.Errorf("run(%q) = %d; want %d\nstdout:\n%s\nstderr:\n%s", args, res.code, exitUsage, res.stdout, res.stderr)
				return
			}
			if res.stdout != "" {
				t.Errorf("run(%q) wrote to stdout:\n%s\nwant nothing", args, res.stdout)
			}
			line, rest, _ := strings.Cut(res.stderr, "\n")
			if rest != "" || !strings.HasPrefix(line, "rlbench: ") {
				t.Errorf("run(%q) wrote to stderr:\n%s\nwant one line starting with %q", args, res.stderr, "rlbench: ")
			}
			for _, want := range tc.want {
				if want = placeholders.Replace(want); !strings.Contains(line, want) {
					t.Errorf("run(%q) stderr = %q; want it to contain %q", args, line, want)
				}
			}
			for _, notWant := range tc.notWant {
				if strings.Contains(res.stderr, notWant) {
					t.Errorf("run(%q) stderr = %q; want no %q in it", args, res.stderr, notWant)
				}
			}
		})
	}
}

// tempFile returns the path of a new empty regular file.
func tempFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    int64
		wantErr bool
	}{
		{name: "seconds", in: "60", want: 60},
		{name: "one second", in: "1", want: 1},
		{name: "duration in seconds", in: "60s", want: 60},
		{name: "duration in minutes", in: "1m", want: 60},
		{name: "compound duration", in: "1m30s", want: 90},
		{name: "zero", in: "0", wantErr: true},
		{name: "negative", in: "-1", wantErr: true},
		{name: "fraction", in: "1.5", wantErr: true},
		{name: "sub-second", in: "500ms", wantErr: true},
		{name: "not whole seconds", in: "1500ms", wantErr: true},
		{name: "zero duration", in: "0s", wantErr: true},
		{name: "empty", in: "", wantErr: true},
		{name: "word", in: "abc", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseWindow(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseWindow(%q) = (%d, %v); want (%d, error: %t)", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// readReport reads the --json report at path through the project's own
// reader, as compare, merge and report read it.
func readReport(t *testing.T, path string) *results.Report {
	t.Helper()
	rep, err := results.ReadReportFile(path)
	if err != nil {
		t.Fatalf("read --json report: %v", err)
	}
	return rep
}

// reportPrefix returns the key prefix in the config of a report.
func reportPrefix(t *testing.T, rep *results.Report) string {
	t.Helper()
	raw, ok := rep.Config.(json.RawMessage)
	if !ok {
		t.Fatalf("report config = %T; want the JSON as written", rep.Config)
	}
	var cfg rlbench.Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("report config does not decode as rlbench.Config: %v", err)
	}
	return cfg.Workload.Prefix
}

// scanKeys returns every key matching pattern, a prefix (with no glob
// character) then "*", sorted.
func scanKeys(t *testing.T, rdb *redis.Client, pattern string) []string {
	t.Helper()
	return redistest.KeysUnder(t, rdb, strings.TrimSuffix(pattern, "*"))
}

// tableRows returns the rows of the text report's table on stdout, each
// split into its fields, keyed by "strategy/client".
func tableRows(t *testing.T, stdout string) map[string][]string {
	t.Helper()
	lines := strings.Split(stdout, "\n")
	header := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "strategy ") })
	if header < 0 {
		t.Fatalf("stdout has no table header starting with %q:\n%s", "strategy ", stdout)
	}
	columns := len(strings.Fields(lines[header]))
	rows := map[string][]string{}
	for _, line := range lines[header+1:] {
		f := strings.Fields(line)
		if len(f) != columns || !slices.Contains(strategies.Names(), f[0]) {
			continue
		}
		label := f[0] + "/" + f[1]
		if _, dup := rows[label]; dup {
			t.Errorf("stdout has two table rows for %s:\n%s", label, stdout)
		}
		rows[label] = f
	}
	return rows
}

// checkNoProgress fails the test if stdout, a buffer and not a terminal,
// received the live progress line, which rewrites itself with "\r".
func checkNoProgress(t *testing.T, args []string, stdout string) {
	t.Helper()
	if strings.Contains(stdout, "\r") {
		t.Errorf("run(%q) stdout = %q; want no progress line (no \\r) when stdout is not a terminal", args, stdout)
	}
}

func TestRunReport(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)

	// An unrelated key with no TTL: the run must neither touch nor delete it.
	const bystander, bystanderValue = "someone-else:key", "keep me"
	if err := rdb.Set(ctx, bystander, bystanderValue, 0).Err(); err != nil {
		t.Fatalf("SET %s: %v", bystander, err)
	}

	jsonPath := filepath.Join(t.TempDir(), "report.json")
	args := []string{
		"--addr", srv.Addr(), "--prefix", prefix,
		"--strategy", "naive,lua", "--client", "go-redis,rueidis", "--clients", "4", "--keys", "3",
		"--window", "1", "--duration", "300ms", "--json", jsonPath,
	}
	res := mustRun(t, exitOK, args...)
	checkNoProgress(t, args, res.stdout)

	wantLabels := []string{"naive/go-redis", "naive/rueidis", "lua/go-redis", "lua/rueidis"}
	rows := tableRows(t, res.stdout)
	if len(rows) != len(wantLabels) {
		t.Errorf("run(%q) table has %d rows; want %d (%v):\n%s", args, len(rows), len(wantLabels), wantLabels, res.stdout)
	}

	rep := readReport(t, jsonPath)
	if rep.Server.Addr != srv.Addr() || rep.Server.Version != srv.Info().Version {
		t.Errorf("--json server = %+v; want addr %s, version %s", rep.Server, srv.Addr(), srv.Info().Version)
	}
	if got := reportPrefix(t, rep); got != prefix {
		t.Errorf("--json config.workload.prefix = %q; want %q", got, prefix)
	}
	if len(rep.Runs) != len(wantLabels) {
		t.Fatalf("--json runs has %d entries; want %d (%v)", len(rep.Runs), len(wantLabels), wantLabels)
	}
	for i, r := range rep.Runs {
		label := r.Strategy + "/" + r.Client
		if label != wantLabels[i] {
			t.Errorf("--json runs[%d] is %s; want %s", i, label, wantLabels[i])
		}
		if r.Workers != 4 {
			t.Errorf("%s: clients = %v; want 4", label, r.Workers)
		}
		if r.Decisions <= 0 {
			t.Errorf("%s: decisions = %v; want > 0", label, r.Decisions)
		}
		if sum := r.Allowed + r.Rejected + r.Errors; sum != r.Decisions {
			t.Errorf("%s: allowed + rejected + errors = %v + %v + %v = %v; want decisions = %v",
				label, r.Allowed, r.Rejected, r.Errors, sum, r.Decisions)
		}
		if r.DurationS < 0.25 || r.DurationS > 5 {
			t.Errorf("%s: duration_s = %v; want about 0.3", label, r.DurationS)
		}
		if want := float64(r.Decisions) / r.DurationS; math.Abs(r.ThroughputPerS-want) > 0.01*want {
			t.Errorf("%s: throughput_per_s = %v; want decisions / duration_s = %v", label, r.ThroughputPerS, want)
		}
		l := r.LatencyUS
		var prev float64
		for _, p := range []struct {
			name string
			v    float64
		}{{"p50", l.P50}, {"p90", l.P90}, {"p99", l.P99}, {"p999", l.P999}, {"max", l.Max}} {
			if p.v <= 0 || p.v < prev {
				t.Errorf("%s: latency_us.%s = %v; want > 0 and >= the percentile before (%v)", label, p.name, p.v, prev)
			}
			prev = p.v
		}
		if l.Mean <= 0 {
			t.Errorf("%s: latency_us.mean = %v; want > 0", label, l.Mean)
		}
		if r.Audit.Keys > 3 {
			t.Errorf("%s: audit.keys = %v; want <= 3 (--keys 3)", label, r.Audit.Keys)
		}
		if r.Strategy == "lua" {
			// The script sets the TTL in the same atomic unit as the INCR
			// that creates the counter: never immortal, never over 1s.
			if r.Audit.Immortal != 0 || r.Audit.TTLOverWindow != 0 {
				t.Errorf("%s: audit = %+v; want immortal 0, ttl_over_window 0", label, r.Audit)
			}
		}
		row, ok := rows[label]
		if !ok {
			t.Errorf("stdout has no table row for %s:\n%s", label, res.stdout)
		} else if row[3] != strconv.FormatInt(r.Decisions, 10) {
			t.Errorf("table row %s: decisions = %s; want %v as in --json", label, row[3], r.Decisions)
		}
	}

	// Keys are UNLINKed by default, and nothing outside the prefix was
	// created or deleted.
	if keys := scanKeys(t, rdb, prefix+"*"); len(keys) != 0 {
		t.Errorf("after run(%q): keys under %q = %q; want none", args, prefix, keys)
	}
	if keys := scanKeys(t, rdb, "*"); !slices.Equal(keys, []string{bystander}) {
		t.Errorf("after run(%q): keys = %q; want only %q", args, keys, bystander)
	}
	if got, err := rdb.Get(ctx, bystander).Result(); got != bystanderValue || err != nil {
		t.Errorf("after run: GET %s = (%q, %v); want (%q, nil)", bystander, got, err, bystanderValue)
	}
	if got, err := rdb.TTL(ctx, bystander).Result(); got != -1 || err != nil {
		t.Errorf("after run: TTL %s = (%v, %v); want (-1, nil)", bystander, got, err)
	}
}

func TestRunKeepKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		wantKeys int // keys left under the cell's prefix
	}{
		{name: "default unlinks", wantKeys: 0},
		{name: "keep-keys", args: []string{"--keep-keys"}, wantKeys: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			rdb := redistest.Client(t, srv)
			prefix := redistest.Prefix(t)
			jsonPath := filepath.Join(t.TempDir(), "report.json")
			// A 60s window: keys cannot expire on their own before the check.
			args := append([]string{
				"--addr", srv.Addr(), "--prefix", prefix,
				"--strategy", "lua", "--client", "go-redis", "--clients", "2", "--keys", "3",
				"--window", "60", "--duration", "300ms", "--json", jsonPath,
			}, tc.args...)
			res := mustRun(t, exitOK, args...)
			checkNoProgress(t, args, res.stdout)

			runs := readReport(t, jsonPath).Runs
			if len(runs) != 1 {
				t.Fatalf("--json runs has %d entries; want 1", len(runs))
			}
			if got := runs[0].Audit.Keys; got != 3 {
				t.Errorf("run(%q): audit.keys = %v; want 3", args, got)
			}
			cell := keyspace.Cell(prefix, "lua", "go-redis")
			keys := scanKeys(t, rdb, "*")
			if len(keys) != tc.wantKeys {
				t.Errorf("after run(%q): keys = %q; want %d keys under %q", args, keys, tc.wantKeys, cell)
			}
			for _, key := range keys {
				if !strings.HasPrefix(key, cell) {
					t.Errorf("after run(%q): key %q; want every key under %q", args, key, cell)
				}
				ttl, err := rdb.TTL(t.Context(), key).Result()
				if err != nil || ttl <= 0 || ttl > 60*time.Second {
					t.Errorf("after run(%q): TTL %s = (%v, %v); want in (0, 60s]", args, key, ttl, err)
				}
			}
		})
	}
}

// TestRunFailOnImmortal produces immortal keys for real. With a 1s window and
// a limit that is never reached, a naive worker that GETs a key just before it
// expires and INCRs it just after recreates it with no TTL; it stays so unless
// a SET EXAT from a worker that found the key missing lands after the INCR.
// naive's keys all expire on the same whole second, so with 20 keys each
// second boundary is 20 chances: on this 2-CPU machine every 2.5s run left 9
// to 19 immortal keys, whereas with 2 keys one run in four or five left none.
// The run also lasts long enough for the 1s progress ticker to fire.
func TestRunFailOnImmortal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		strategy     string
		wantCode     int
		wantImmortal bool
	}{
		{name: "naive leaves immortal keys", strategy: "naive", wantCode: exitFailure, wantImmortal: true},
		{name: "lua leaves none", strategy: "lua", wantCode: exitOK, wantImmortal: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			jsonPath := filepath.Join(t.TempDir(), "report.json")
			args := []string{
				"--addr", srv.Addr(), "--prefix", redistest.Prefix(t),
				"--strategy", tc.strategy, "--clients", "64", "--keys", "20", "--window", "1",
				"--limit", "1000000", "--duration", "2500ms", "--fail-on-immortal", "--json", jsonPath,
			}
			res := mustRun(t, tc.wantCode, args...)
			checkNoProgress(t, args, res.stdout)
			if got := strings.Contains(res.stdout, "IMMORTAL KEYS"); got != tc.wantImmortal {
				t.Errorf("run(%q) stdout has an IMMORTAL KEYS line: %t; want %t\nstdout:\n%s", args, got, tc.wantImmortal, res.stdout)
			}
			runs := readReport(t, jsonPath).Runs
			if len(runs) != 1 {
				t.Fatalf("--json runs has %d entries; want 1", len(runs))
			}
			if got := runs[0].Audit.Immortal; (got > 0) != tc.wantImmortal {
				t.Errorf("run(%q): audit.immortal = %v; want > 0: %t", args, got, tc.wantImmortal)
			}
		})
	}
}

// TestRunJSONUnwritable checks that a --json path that cannot be written
// fails the command loudly and still prints the text report, so the
// measurements are not lost.
func TestRunJSONUnwritable(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	jsonPath := filepath.Join(t.TempDir(), "no-such-dir", "report.json")
	args := []string{
		"--addr", srv.Addr(), "--prefix", redistest.Prefix(t),
		"--clients", "2", "--keys", "3", "--duration", "300ms", "--json", jsonPath,
	}
	// The path is checked before any load: bad input, nothing run.
	res := runCLI(t, t.Context(), args...)
	if res.code != exitUsage {
		t.Errorf("run(%q) = %d; want %d\nstderr:\n%s", args, res.code, exitUsage, res.stderr)
	}
	if !strings.Contains(res.stderr, "--json") || !strings.Contains(res.stderr, jsonPath) {
		t.Errorf("run(%q) stderr =\n%s\nwant a line naming --json and %s", args, res.stderr, jsonPath)
	}
	if res.stdout != "" {
		t.Errorf("run(%q) stdout = %q; want nothing", args, res.stdout)
	}
	if n := redistest.Client(t, srv).DBSize(t.Context()).Val(); n != 0 {
		t.Errorf("DBSIZE after run(%q) = %d; want 0", args, n)
	}
}

func TestRunNoProgressWhenNotTerminal(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// Over a second, so that the progress ticker would fire at least once.
	args := []string{
		"--addr", srv.Addr(), "--prefix", redistest.Prefix(t),
		"--clients", "2", "--keys", "3", "--window", "1", "--duration", "1200ms",
	}
	res := mustRun(t, exitOK, args...)
	checkNoProgress(t, args, res.stdout)
	checkNoProgress(t, args, res.stderr)
}

func TestRunWithoutServer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		wantStdout []string // substrings of stdout
		wantStderr []string // substrings of stderr
	}{
		{
			name:       "list strategies",
			args:       []string{"--list-strategies"},
			wantStdout: strategies.Names(),
		},
		{
			name: "list strategies needs no server",
			// Neither a redis-server binary nor a reachable --addr.
			args:       []string{"--list-strategies", "--redis-server", "/nonexistent/redis-server", "--addr", closedAddr(t)},
			wantStdout: strategies.Names(),
		},
		{
			name:       "help",
			args:       []string{"--help"},
			wantStderr: []string{"Usage: rlbench", "--strategy", "--addr", "--fail-on-immortal"},
		},
		{
			name:       "help shorthand",
			args:       []string{"-h"},
			wantStderr: []string{"Usage: rlbench"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := mustRun(t, exitOK, tc.args...)
			for _, want := range tc.wantStdout {
				if !strings.Contains(res.stdout, want) {
					t.Errorf("run(%q) stdout =\n%s\nwant it to contain %q", tc.args, res.stdout, want)
				}
			}
			for _, want := range tc.wantStderr {
				if !strings.Contains(res.stderr, want) {
					t.Errorf("run(%q) stderr =\n%s\nwant it to contain %q", tc.args, res.stderr, want)
				}
			}
		})
	}
}

func TestListStrategiesRows(t *testing.T) {
	t.Parallel()
	args := []string{"--list-strategies"}
	res := mustRun(t, exitOK, args...)
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 {
			listed = append(listed, f[0])
		}
	}
	if want := strategies.Names(); !slices.Equal(listed, want) {
		t.Errorf("run(%q) lists %q; want %q", args, listed, want)
	}
}

func TestRunPrivateServer(t *testing.T) {
	t.Parallel()
	args := []string{"--clients", "2", "--duration", "200ms"}
	if binary := os.Getenv(redistest.BinaryEnv); binary != "" {
		args = append(args, "--redis-server", binary)
	}
	res := mustRun(t, exitOK, args...)
	checkNoProgress(t, args, res.stdout)
	if header, _, _ := strings.Cut(res.stderr, "\n"); !strings.Contains(header, "private redis") {
		t.Errorf("run(%q) stderr header = %q; want it to mention %q\nstderr:\n%s", args, header, "private redis", res.stderr)
	}
	if want := "(private server started by rlbench)"; !strings.Contains(res.stdout, want) {
		t.Errorf("run(%q) stdout =\n%s\nwant it to contain %q", args, res.stdout, want)
	}
	if rows := tableRows(t, res.stdout); len(rows) != 1 || rows["lua/go-redis"] == nil {
		t.Errorf("run(%q) table rows = %q; want one, for lua/go-redis (the defaults)", args, rows)
	}
}

// testCLI is the command line as the tests run it, many commands in one
// process: it leaves GOMAXPROCS alone, which a command would set for the
// whole test binary, under the other tests running in parallel.
// TestBinaryRecordsEnvironment checks it on a built binary instead, and
// TestProcsToSet the decision.
var testCLI = cli{setProcs: func(int) func() { return func() {} }}

// TestBinaryRecordsEnvironment builds the command and runs it, since only
// a built binary records its modules' versions: each cell's environment
// names the client library's version, and the GOMAXPROCS that --procs
// chose by default.
func TestBinaryRecordsEnvironment(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := t.TempDir()
	bin := rlbenchBinary(t)
	jsonPath := filepath.Join(dir, "out.json")
	args := []string{"--addr", srv.Addr(), "--client", "go-redis,rueidis", "--clients", "2", "--duration", "200ms", "--warmup", "0", "--json", jsonPath, "-q"}
	cmd := exec.Command(bin, args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") })
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rlbench %q: %v\n%s", args, err, out)
	}
	rep := readReport(t, jsonPath)
	if len(rep.Runs) != 2 {
		t.Fatalf("runs = %d; want 2", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		e := r.Environment
		if e == nil {
			t.Errorf("%s has no environment; want one", r.Client)
			continue
		}
		if !strings.HasPrefix(e.ClientVersion, "v") || e.ClientModule == "" || !strings.HasPrefix(e.GoVersion, "go") {
			t.Errorf("%s environment = %+v; want the module, a version like v1.2.3 and the Go version", r.Client, e)
		}
		// The server is on loopback: rlbench leaves it a CPU.
		if want := max(e.NumCPU-1, 1); e.GOMAXPROCS != want {
			t.Errorf("%s gomaxprocs = %d with %d CPUs; want %d (all but one, for the local server)", r.Client, e.GOMAXPROCS, e.NumCPU, want)
		}
	}
}

// TestCPUProfile checks that --cpuprofile writes a profile (gzipped
// protocol buffers, as runtime/pprof writes them), and that bad input found by the run leaves an existing file
// as it was.
func TestCPUProfile(t *testing.T) {
	// Not parallel: one CPU profile at a time per process.
	srv := redistest.Start(t)
	path := filepath.Join(t.TempDir(), "cpu.prof")
	mustRun(t, exitOK, "--addr", srv.Addr(), "--requests", "2000", "--clients", "4", "--cpuprofile", path)
	zr, err := gzip.NewReader(mustOpen(t, path))
	if err != nil {
		t.Fatalf("--cpuprofile wrote %s, which is not gzipped: %v", path, err)
	}
	if body, err := io.ReadAll(zr); err != nil || len(body) == 0 {
		t.Errorf("--cpuprofile wrote %s: %d bytes inside, %v; want a profile", path, len(body), err)
	}
	// Readable by others, as --json's file and any file os.Create makes.
	if fi, err := os.Stat(path); err != nil {
		t.Error(err)
	} else if got := fi.Mode().Perm(); got != 0o644 {
		t.Errorf("--cpuprofile wrote %s with mode %v; want 0644", path, got)
	}
	if err := os.WriteFile(path, []byte("earlier"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, exitUsage, "--addr", srv.Addr(), "--strategy", "nope", "--cpuprofile", path)
	if got, _ := os.ReadFile(path); string(got) != "earlier" {
		t.Errorf("after bad input, %s holds %q; want the earlier file untouched", path, got)
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestWorkersAndClients checks that --workers sets the number of workers
// and that --clients, its first name, still does.
func TestWorkersAndClients(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, flag := range []string{"--workers", "--clients"} {
		path := filepath.Join(t.TempDir(), "run.json")
		mustRun(t, exitOK, "--addr", srv.Addr(), "--prefix", redistest.Prefix(t)+flag[2:]+":", flag, "3", "--keys", "2", "--duration", "100ms", "--json", path, "-q")
		f, err := results.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if runs := f.Report.Runs; len(runs) != 1 || runs[0].Workers != 3 {
			t.Errorf("%s 3: runs %+v; want one run of 3 workers", flag, runs)
		}
	}
}

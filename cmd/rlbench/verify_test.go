package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/porttest"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/verify"
)

// verifyCLI calls run with "verify" and args, and returns its exit status,
// stdout and stderr.
func verifyCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = testCLI.main(t.Context(), append([]string{"verify"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestVerifyGoodRun runs `rlbench verify` on two strategies against a server
// it does not manage: every cell is as documented, so the exit status is 0,
// and the table and the JSON file say the same.
func TestVerifyGoodRun(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	jsonPath := filepath.Join(t.TempDir(), "verify.json")
	args := []string{"--addr", srv.Addr(), "--strategy", "lua,incr-expire", "--client", "rueidis",
		"--prefix", redistest.Prefix(t), "--json", jsonPath}
	code, stdout, stderr := verifyCLI(t, args...)
	if code != exitOK {
		t.Fatalf("run(verify %q) = %d; want %d\nstdout:\n%s\nstderr:\n%s", args, code, exitOK, stdout, stderr)
	}
	cells := verifyCells(stdout)
	for check, want := range map[string]string{
		"first": "pass", "repeated": "pass", "expiry": "pass", "not-extended": "pass", "wrong-type": "pass",
		"concurrent": "pass", "crash": "leaks", "race": "pass", "healing": "leaks", "noscript": "n/a", "restart": "n/a",
	} {
		if got := cells["incr-expire/rueidis/"+check]; got != want {
			t.Errorf("table cell incr-expire/rueidis %s = %q; want %q\n%s", check, got, want, stdout)
		}
	}
	if _, ok := cells["lua/rueidis/first"]; !ok || len(cells) != 2*len(verify.Checks()) {
		t.Errorf("table cells = %v; want lua/rueidis and incr-expire/rueidis, a cell per check\n%s", cells, stdout)
	}
	for _, want := range []string{
		"every row restart: n/a (as documented): needs the private server",
		"every cell is as documented",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "rlbench verify: redis") {
		t.Errorf("stderr lacks the server line:\n%s", stderr)
	}

	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		AsDocumented bool `json:"as_documented"`
		Server       struct {
			Addr    string `json:"addr"`
			Managed bool   `json:"managed"`
		} `json:"server"`
		Rows []struct {
			Strategy string `json:"strategy"`
			Client   string `json:"client"`
			Cells    []struct {
				Check   string `json:"check"`
				Outcome string `json:"outcome"`
			} `json:"cells"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("--json file does not parse: %v\n%s", err, data)
	}
	if !doc.AsDocumented || doc.Server.Addr != srv.Addr() || doc.Server.Managed || len(doc.Rows) != 2 {
		t.Errorf("JSON as_documented %t, server %+v, %d rows; want true, %s not managed, 2 rows", doc.AsDocumented, doc.Server, len(doc.Rows), srv.Addr())
	}
	crashCells := 0
	for _, r := range doc.Rows {
		if r.Strategy == "incr-expire" {
			for _, c := range r.Cells {
				if c.Check == "crash" {
					crashCells++
					if c.Outcome != "leaks" {
						t.Errorf("JSON incr-expire/%s crash = %s; want leaks", r.Client, c.Outcome)
					}
				}
			}
		}
	}
	if crashCells != 1 {
		t.Errorf("JSON has %d incr-expire crash cells; want 1", crashCells)
	}
	if n, err := rdb.DBSize(t.Context()).Result(); n != 0 || err != nil {
		t.Errorf("DBSIZE after verify = %d, %v; want 0: the checks' keys are deleted", n, err)
	}
}

func TestVerifyBadInput(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	closed := porttest.Refused(t)

	tests := []struct {
		name string
		args []string
		want []string // substrings of stderr
	}{
		{"unknown strategy", []string{"--addr", srv.Addr(), "--strategy", "nope"}, []string{"--strategy", `"nope"`, "lua", "multi-nx"}},
		{"unknown client", []string{"--addr", srv.Addr(), "--client", "nope"}, []string{"--client", `"nope"`, "go-redis", "rueidis"}},
		{"sequence with a command it may not send", []string{"--addr", srv.Addr(), "--sequence", "x=INCR {key} | FLUSHALL"}, []string{"--sequence", `"FLUSHALL"`, "INCRBY"}},
		{"unreachable address", []string{"--addr", closed}, []string{"--addr", closed}},
		{"missing redis-server", []string{"--redis-server", "/nonexistent/redis-server"}, []string{"--redis-server", "/nonexistent/redis-server"}},
		{"negative db", []string{"--addr", srv.Addr(), "--db", "-1"}, []string{"--db", ">= 0"}},
		{"negative script timeout", []string{"--addr", srv.Addr(), "--script-timeout", "-1s"}, []string{"--script-timeout: script timeout must be > 0, got -1s"}},
		{"unknown flag", []string{"--nope"}, []string{"unknown flag", "--nope", "rlbench verify --help"}},
		{"unexpected argument", []string{"--addr", srv.Addr(), "lua"}, []string{"unexpected argument", `"lua"`}},
		{"unwritable json", []string{"--addr", srv.Addr(), "--json", filepath.Join(t.TempDir(), "no", "such", "dir", "x.json")}, []string{"--json"}},
		// Issue 12: an empty value is bad input; credentials are never echoed;
		// an output path is checked before any write.
		{"empty addr", []string{"--addr", ""}, []string{"--addr", "empty value"}},
		{"empty prefix", []string{"--addr", srv.Addr(), "--prefix", ""}, []string{"--prefix", "empty value"}},
		{"empty redis-server", []string{"--redis-server", ""}, []string{"--redis-server", "empty value"}},
		{"empty strategy", []string{"--addr", srv.Addr(), "--strategy", ""}, []string{"--strategy", "empty name"}},
		{"empty client", []string{"--addr", srv.Addr(), "--client", ""}, []string{"--client", "empty name"}},
		{"URL with credentials", []string{"--addr", "redis://user:secret@" + closed}, []string{"--addr", "redis://xxxxx@" + closed}},
		{"json is a directory", []string{"--addr", srv.Addr(), "--json", t.TempDir()}, []string{"--json", "is a directory"}},
		// Issue 25: every target flag of the load run, one target at most.
		{"two targets", []string{"--addr", srv.Addr(), "--managed-cluster", "3"}, []string{"verify checks one target", "--managed-cluster"}},
		{"a bad cluster size", []string{"--managed-cluster", "1x"}, []string{"--managed-cluster"}},
		{"too many sentinel replicas", []string{"--managed-sentinel", "101"}, []string{"--managed-sentinel", "0 to 100"}},
		{"a db on a cluster", []string{"--cluster", srv.Addr(), "--db", "1"}, []string{"--db", "cluster"}},
		{"a client without cluster support", []string{"--managed-cluster", "3", "--client", "redigo"}, []string{"--client", "redigo", "cluster", "does not support"}},
		{"a redis-server beside a cluster", []string{"--managed-cluster", "3", "--redis-server", "/nonexistent/redis-server"}, []string{"--redis-server", "one target"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := verifyCLI(t, tc.args...)
			if code != exitUsage {
				t.Fatalf("run(verify %q) = %d; want %d\nstdout:\n%s\nstderr:\n%s", tc.args, code, exitUsage, stdout, stderr)
			}
			for _, want := range tc.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("run(verify %q) stderr = %q; want it to contain %q", tc.args, stderr, want)
				}
			}
			if stdout != "" {
				t.Errorf("run(verify %q) stdout = %q; want nothing on bad input", tc.args, stdout)
			}
			if strings.Contains(stderr, "secret") {
				t.Errorf("run(verify %q) stderr = %q; want no password in it", tc.args, stderr)
			}
		})
	}
	// Bad input writes nothing: the server saw no key and no write.
	if n, err := rdb.DBSize(t.Context()).Result(); n != 0 || err != nil {
		t.Errorf("DBSIZE after bad input = %d, %v; want 0", n, err)
	}
	stats, err := rdb.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"cmdstat_set:", "cmdstat_incr:", "cmdstat_evalsha:", "cmdstat_hset:", "cmdstat_unlink:", "cmdstat_scan:"} {
		if strings.Contains(stats, cmd) {
			t.Errorf("after bad input the server ran %s; want no command beyond the probe", strings.TrimSuffix(cmd, ":"))
		}
	}
}

func TestVerifyHelp(t *testing.T) {
	t.Parallel()
	code, _, stderr := verifyCLI(t, "--help")
	if code != exitOK {
		t.Errorf("run(verify --help) = %d; want %d", code, exitOK)
	}
	for _, want := range []string{"Usage: rlbench verify", "--strategy", "--client", "--addr", "--redis-server", "--json", "healing", "restart"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("verify --help lacks %q:\n%s", want, stderr)
		}
	}
}

// TestVerifySequences runs `rlbench verify` on --sequence strategies on
// both clients: a spec that heals and one that does not show the crash
// and healing cells each design implies, and since a user strategy's leak
// is a failure whatever it claims, the verdict names each leak and fails
// (exit 1); so does a spec whose claims are false.
func TestVerifySequences(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	args := []string{"--addr", srv.Addr(), "--client", "go-redis,rueidis", "--prefix", redistest.Prefix(t),
		// Two round trips: a crash after INCR leaves no TTL, which the
		// next request's EXPIRE NX gives back.
		"--sequence", "seq-heal=INCR {key}; EXPIRE {key} {window} NX -- rlbench: heals fixed-window",
		// One pipeline: SET NX EX creates the key with its TTL, but does
		// nothing for a key that lost it.
		"--sequence", "seq-noheal=SET {key} 0 NX EX {window} | INCR {key} -- rlbench: fixed-window"}
	code, stdout, stderr := verifyCLI(t, args...)
	if code != exitFailure {
		t.Fatalf("run(verify %q) = %d; want %d\nstdout:\n%s\nstderr:\n%s", args, code, exitFailure, stdout, stderr)
	}
	got := verifyCells(stdout)
	for _, c := range []string{"go-redis", "rueidis"} {
		for cell, want := range map[string]string{
			"seq-heal/" + c + "/crash": "leaks*", "seq-heal/" + c + "/healing": "pass",
			"seq-noheal/" + c + "/crash": "pass", "seq-noheal/" + c + "/healing": "leaks*",
		} {
			if got[cell] != want {
				t.Errorf("%s = %q; want %q\n%s", cell, got[cell], want, stdout)
			}
		}
		for _, leak := range []string{"seq-heal/" + c + " crash (leaks)", "seq-noheal/" + c + " healing (leaks)"} {
			if !strings.Contains(stdout, leak) {
				t.Errorf("stdout lacks %q in its verdict:\n%s", leak, stdout)
			}
		}
	}
	liar := []string{"--addr", srv.Addr(), "--client", "rueidis", "--prefix", redistest.Prefix(t) + "liar:",
		"--sequence", "seq-liar=INCR {key}; EXPIRE {key} {window} NX -- rlbench: atomic heals fixed-window"}
	code, stdout, stderr = verifyCLI(t, liar...)
	if code != exitFailure || !strings.Contains(stdout, "seq-liar/rueidis crash") || !strings.Contains(stdout, "NOT AS DOCUMENTED") {
		t.Errorf("run(verify %q) = %d; want %d, the crash cell not as documented\nstdout:\n%s\nstderr:\n%s", liar, code, exitFailure, stdout, stderr)
	}
}

// TestVerifyManagedCluster runs the matrix on a private Redis Cluster
// (issue 25): every cell as documented, exit 0, the checks that act on the
// whole server n/a (a cluster is not the private single server they
// restart and flush), and no key left on any master.
func TestVerifyManagedCluster(t *testing.T) {
	t.Parallel()
	verifyElsewhere(t, clients.TopologyCluster, []string{"lua", "function", "incr-expire", "sliding-log", "python-limits"}, "--managed-cluster", "3")
}

// TestVerifyManagedSentinel runs the matrix through the sentinels of a
// private Sentinel set-up (issue 25), as TestVerifyManagedCluster does, on
// the same strategies: each fixed-window row's split-brain check, one row
// at a time, waits some 5 s for a replica's promotion and the old master's
// rejoin (the set-up's quick periods, topology.Spec.QuickRejoin).
func TestVerifyManagedSentinel(t *testing.T) {
	t.Parallel()
	verifyElsewhere(t, clients.TopologySentinel, []string{"lua", "function", "incr-expire", "sliding-log", "python-limits"}, "--managed-sentinel", "1")
}

// verifyElsewhere runs verify on the target of the flags target, of
// topology topo, on strategyNames (of each kind: a script, a function,
// several commands, two keys, a script loaded with SCRIPT LOAD after
// NOSCRIPT) and every client (all: those that support topo), and checks
// that its matrix is as documented, with the server-wide checks n/a.
func verifyElsewhere(t *testing.T, topo string, strategyNames []string, target ...string) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "verify.json")
	var clientNames []string
	for _, c := range clients.Names {
		if slices.Contains(clients.Topologies[c], topo) {
			clientNames = append(clientNames, c)
		}
	}
	args := append(slices.Clone(target), "--strategy", strings.Join(strategyNames, ","), "--json", jsonPath)
	code, stdout, stderr := verifyCLI(t, args...)
	if code != exitOK {
		t.Fatalf("run(verify %q) = %d; want %d (every cell as documented)\nstdout:\n%s\nstderr:\n%s", args, code, exitOK, stdout, stderr)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Rows []struct {
			Strategy, Client string
			Cells            []struct{ Check, Outcome string }
		}
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("verify JSON: %v", err)
	}
	if len(m.Rows) != len(strategyNames)*len(clientNames) {
		t.Fatalf("verify JSON has %d rows; want %d (%q x %q)", len(m.Rows), len(strategyNames)*len(clientNames), strategyNames, clientNames)
	}
	for _, r := range m.Rows {
		if !slices.Contains(clientNames, r.Client) {
			t.Errorf("verify JSON has a row of %s/%s; want only the clients that support a %s (%q)", r.Strategy, r.Client, topo, clientNames)
		}
		for _, c := range r.Cells {
			serverWide := c.Check == "noscript" || c.Check == "restart"
			if serverWide && c.Outcome != "n/a" {
				t.Errorf("%s/%s %s = %s; want n/a: it acts on the whole server", r.Strategy, r.Client, c.Check, c.Outcome)
			}
			if c.Check == "first" && c.Outcome != "pass" {
				t.Errorf("%s/%s first = %s; want pass", r.Strategy, r.Client, c.Outcome)
			}
		}
	}
}

// verifyCells reads verify's table in stdout: "strategy/client/check" ->
// outcome, the checks named by the header line.
func verifyCells(stdout string) map[string]string {
	out := map[string]string{}
	var header []string
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 2 && f[0] == "strategy" && f[1] == "client":
			header = f
		case len(f) == 0:
			header = nil // the table ends at its first empty line
		case header != nil && len(f) == len(header):
			for i := 2; i < len(f); i++ {
				out[f[0]+"/"+f[1]+"/"+header[i]] = f[i]
			}
		}
	}
	return out
}

// TestVerifyUnclaimedSequence runs `rlbench verify` on a sequence that
// claims nothing and whose EXPIRE, sent on every request, pushes the
// window's end later: a user locked out under steady traffic. The
// not-extended check runs on it though it claims no fixed window, fails,
// and so does the verdict, with exit status 1.
func TestVerifyUnclaimedSequence(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	args := []string{"--addr", srv.Addr(), "--sequence", "mine=INCRBY {key} 1 | EXPIRE {key} {window}", "--strategy", "mine",
		"--client", "go-redis", "--prefix", redistest.Prefix(t)}
	code, stdout, stderr := verifyCLI(t, args...)
	if code != exitFailure {
		t.Errorf("run(verify %q) = %d; want %d\nstdout:\n%s\nstderr:\n%s", args, code, exitFailure, stdout, stderr)
	}
	if got := verifyCells(stdout)["mine/go-redis/not-extended"]; got != "FAIL*" {
		t.Errorf("table cell mine/go-redis not-extended = %q; want FAIL*\n%s", got, stdout)
	}
	if want := "NOT AS DOCUMENTED (*): 1 cell: mine/go-redis not-extended (FAIL)"; !strings.Contains(stdout, want) {
		t.Errorf("stdout lacks %q:\n%s", want, stdout)
	}
}

// TestVerifyDocumentedLeakHeadline runs `rlbench verify` on rails-cache,
// whose INCR and EXPIRE are two round trips: a crash between them leaks,
// as documented. The verdict says every cell is as documented, and in the
// same line which cells leak.
func TestVerifyDocumentedLeakHeadline(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	args := []string{"--addr", srv.Addr(), "--strategy", "rails-cache", "--client", "go-redis", "--prefix", redistest.Prefix(t)}
	code, stdout, stderr := verifyCLI(t, args...)
	if code != exitOK {
		t.Fatalf("run(verify %q) = %d; want %d\nstdout:\n%s\nstderr:\n%s", args, code, exitOK, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "every cell is as documented") || !strings.Contains(last, "but rails-cache/go-redis leaks under crash") || !strings.HasSuffix(last, ", as documented.") {
		t.Errorf("verdict = %q; want every cell as documented, but rails-cache/go-redis leaks under crash, as documented\n%s", last, stdout)
	}
}

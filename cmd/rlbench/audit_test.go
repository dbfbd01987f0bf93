package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/htmlreport"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redisserver"
)

// readOnlyACL is the ACL rule list of a user that can run the default
// audit of the keys matching PATTERN and nothing else: the README's line,
// with PATTERN in place of the pattern. %R~ grants read access to keys only
// (Redis >= 7.0): a write fails with NOPERM even where the command is allowed.
const readOnlyACL = "on >PASSWORD resetkeys %R~PATTERN resetchannels -@all +ping +scan +dbsize +pttl +type +getrange +object|idletime +object|refcount +info"

// fixACL is what --fix-ttl needs beyond readOnlyACL: EVAL of its script,
// the EXPIRE in it, and write access to the keys.
const fixACL = "+eval +expire %RW~PATTERN"

// setUser creates user with rules, PASSWORD and PATTERN filled in.
func setUser(t *testing.T, admin *redis.Client, user, password, pattern string, rules ...string) {
	t.Helper()
	args := []any{"ACL", "SETUSER", user}
	for _, r := range rules {
		r = strings.NewReplacer("PASSWORD", password, "PATTERN", pattern).Replace(r)
		for _, f := range strings.Fields(r) {
			args = append(args, f)
		}
	}
	if err := admin.Do(t.Context(), args...).Err(); err != nil {
		t.Fatalf("ACL SETUSER %s: %v", user, err)
	}
}

// seedAuditMix writes, with plain commands, 3 keys with a TTL (one over
// 60 s), 2 immortal counters (one at 100 or more), an immortal hash and a
// key outside the prefix.
func seedAuditMix(t *testing.T, rdb *redis.Client, prefix string) {
	t.Helper()
	cmds := [][]any{
		{"SET", prefix + "a", "1", "EX", "30"}, {"SET", prefix + "b", "1", "EX", "50"}, {"SET", prefix + "c", "1", "EX", "3600"},
		{"SET", prefix + "n", "7"}, {"SET", prefix + "locked", "150"}, {"HSET", prefix + "h", "f", "1"}, {"SET", "outside", "999"},
	}
	for _, c := range cmds {
		if err := rdb.Do(t.Context(), c...).Err(); err != nil {
			t.Fatalf("seed %v: %v", c, err)
		}
	}
}

// readAudit reads the audit JSON file at path.
func readAudit(t *testing.T, path string) audit.Report {
	t.Helper()
	rep, err := audit.ReadReportFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestAuditReadOnlyACL runs the audit as a user whose ACL allows only the
// audit's read commands and read access to the keys: every figure comes
// out, and --fix-ttl, a write, fails for want of permission and changes
// nothing; with the extra rules of fixACL it succeeds.
func TestAuditReadOnlyACL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	seedAuditMix(t, admin, prefix)
	setUser(t, admin, "auditor", "pw", prefix+"*", readOnlyACL)
	jsonPath := filepath.Join(t.TempDir(), "audit.json")
	base := []string{"audit", "--match", prefix + "*", "--addr", srv.Addr(), "--user", "auditor", "--password", "pw"}
	args := append(base, "--limit", "100", "--max-ttl", "60", "--types", "--sample", "5", "--json", jsonPath)
	res := mustRun(t, exitOK, args...)
	rep := readAudit(t, jsonPath)
	got := fmt.Sprintf("keys %d ttl %d immortal %d over %d locked %d sample %d/%d",
		rep.Keys, rep.WithTTL, rep.Immortal, rep.TTLOverMax, rep.LockedOut, len(rep.ImmortalSample), len(rep.LockedOutSample))
	if want := "keys 6 ttl 3 immortal 3 over 1 locked 1 sample 3/1"; got != want || !rep.Complete {
		t.Errorf("run(%q) = %s, complete %t; want %s, complete\n%s", args, got, rep.Complete, want, res.stdout)
	}

	fix := append(base, "--fix-ttl", "60")
	res = mustRun(t, exitFailure, fix...)
	if !strings.Contains(res.stderr, "NOPERM") {
		t.Errorf("run(%q) as the read-only user: stderr %q; want NOPERM", fix, res.stderr)
	}
	if n := admin.TTL(t.Context(), prefix+"n").Val(); n != -1 {
		t.Errorf("TTL %sn after a refused fix = %s; want -1", prefix, n)
	}
	setUser(t, admin, "auditor", "pw", prefix+"*", fixACL)
	res = mustRun(t, exitOK, fix...)
	if n := admin.TTL(t.Context(), prefix+"n").Val(); n <= 0 || n > time.Minute {
		t.Errorf("TTL %sn after --fix-ttl 60 with %q = %s; want up to 60 s\n%s", prefix, fixACL, n, res.stdout)
	}
	if n := admin.TTL(t.Context(), "outside").Val(); n != -1 {
		t.Errorf("TTL outside = %s; want -1: outside the pattern", n)
	}
}

// TestAuditFailOnImmortal checks the exit status: 0 with immortal keys but
// no --fail-on-immortal, 1 with it, 0 with it on a clean keyspace.
func TestAuditFailOnImmortal(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	seedAuditMix(t, rdb, prefix)
	mustRun(t, exitOK, "audit", "--match", prefix+"*", "--addr", srv.Addr())
	res := mustRun(t, exitFailure, "audit", "--match", prefix+"*", "--addr", srv.Addr(), "--fail-on-immortal")
	if !strings.Contains(res.stderr, "3 immortal keys found") {
		t.Errorf("stderr = %q; want it to count the 3 immortal keys", res.stderr)
	}
	mustRun(t, exitOK, "audit", "--match", prefix+"[abc]", "--addr", srv.Addr(), "--fail-on-immortal")
	res = mustRun(t, exitOK, "audit", "--match", prefix+"*", "--addr", srv.Addr(), "--json", "-")
	var doc map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || doc["tool"] != audit.ReportTool {
		t.Errorf("--json - stdout = %q (%v); want the JSON report", res.stdout, err)
	}
}

// TestAuditCluster audits every master of a 3-master cluster through
// --cluster with one seed node.
func TestAuditCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	rdb := redistest.ClusterClient(t, cl)
	prefix := redistest.Prefix(t)
	for i := range 30 {
		if err := rdb.Set(t.Context(), fmt.Sprintf("%s{%d}", prefix, i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	jsonPath := filepath.Join(t.TempDir(), "audit.json")
	mustRun(t, exitOK, "audit", "--match", prefix+"*", "--cluster", cl.Addrs()[0], "--json", jsonPath)
	rep := readAudit(t, jsonPath)
	if rep.Keys != 30 || rep.Immortal != 30 || len(rep.PerNode) != 3 {
		t.Fatalf("audit of the cluster = %d keys, %d immortal, %d nodes; want 30, 30, 3", rep.Keys, rep.Immortal, len(rep.PerNode))
	}
	masters := slices.Sorted(slices.Values(cl.MasterAddrs()))
	for i, n := range rep.PerNode {
		if n.Addr != masters[i] || n.Keys == 0 || n.DBSize != n.Keys {
			t.Errorf("node %d = %s with %d keys, DBSIZE %d; want %s (masters by address) with some, all of its DBSIZE", i, n.Addr, n.Keys, n.DBSize, masters[i])
		}
	}
}

// TestAuditInterrupted interrupts a slow audit: it still prints and writes
// what it saw, marked incomplete, and exits 1.
func TestAuditInterrupted(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	pipe := rdb.Pipeline()
	for i := range 1000 {
		pipe.Set(t.Context(), fmt.Sprintf("%s%d", prefix, i), i, 0)
	}
	if _, err := pipe.Exec(t.Context()); err != nil {
		t.Fatal(err)
	}
	jsonPath := filepath.Join(t.TempDir(), "audit.json")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Interrupted (as SIGINT does) once the audit has read its first page
	// and asked for the next (the second SCAN), whenever a loaded machine
	// gets there: at 200 keys a second, 1,000 keys take 5 s more.
	go func() {
		for ctx.Err() == nil {
			if n, err := serverScans(ctx, rdb); err != nil || n >= 2 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	args := []string{"audit", "--match", prefix + "*", "--addr", srv.Addr(), "--rate", "200", "--count", "10", "--json", jsonPath}
	res := runCLI(t, ctx, args...)
	rep := readAudit(t, jsonPath)
	if res.code != exitFailure || !strings.Contains(res.stdout, "INCOMPLETE") || !strings.Contains(res.stderr, "interrupted") {
		t.Errorf("run(%q) interrupted = %d\nstdout:\n%s\nstderr:\n%s\nwant exit 1, INCOMPLETE, interrupted", args, res.code, res.stdout, res.stderr)
	}
	if rep.Complete || rep.Keys == 0 || rep.Keys >= 1000 {
		t.Errorf("JSON of the interrupted audit: complete %t, %d keys; want incomplete with some of the 1000 keys", rep.Complete, rep.Keys)
	}
}

// TestAuditBadInput checks that bad input exits 2 with a message naming the
// flag, before any command reaches the server.
func TestAuditBadInput(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	a := srv.Addr()
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no match", []string{"--addr", a}, "--match is required"},
		{"empty match", []string{"--match", "", "--addr", a}, "--match is required"},
		{"no target", []string{"--match", "x*"}, "--addr or --cluster is required"},
		{"empty addr", []string{"--match", "x*", "--addr", ""}, "empty address"},
		{"both targets", []string{"--match", "x*", "--addr", a, "--cluster", a}, "exclusive"},
		{"addr and url", []string{"--match", "x*", "--addr", a, "--url", "redis://" + a}, "exclusive"},
		{"two addrs", []string{"--match", "x*", "--addr", a, "--addr", a}, "exclusive"},
		{"empty labelled addr", []string{"--match", "x*", "--addr", "prod="}, "empty address"},
		{"bad url", []string{"--match", "x*", "--url", "http://" + a}, "--url"},
		{"cacert without tls", []string{"--match", "x*", "--addr", a, "--cacert", "ca.pem"}, "--cacert"},
		{"db on cluster", []string{"--match", "x*", "--cluster", a, "--db", "1"}, "--db"},
		{"negative db", []string{"--match", "x*", "--addr", a, "--db", "-1"}, "--db"},
		{"zero count", []string{"--match", "x*", "--addr", a, "--count", "0"}, "--count"},
		{"huge count", []string{"--match", "x*", "--addr", a, "--count", "1000001"}, "--count"},
		{"negative rate", []string{"--match", "x*", "--addr", a, "--rate", "-1"}, "--rate"},
		{"nan rate", []string{"--match", "x*", "--addr", a, "--rate", "NaN"}, "--rate"},
		{"bad max-ttl", []string{"--match", "x*", "--addr", a, "--max-ttl", "1.5s"}, "--max-ttl"},
		{"zero max-ttl", []string{"--match", "x*", "--addr", a, "--max-ttl", "0"}, "--max-ttl"},
		{"negative limit", []string{"--match", "x*", "--addr", a, "--limit", "-3"}, "--limit"},
		{"negative sample", []string{"--match", "x*", "--addr", a, "--sample", "-1"}, "--sample"},
		{"bad fix-ttl", []string{"--match", "x*", "--addr", a, "--fix-ttl", "-5"}, "--fix-ttl"},
		{"dry run alone", []string{"--match", "x*", "--addr", a, "--dry-run"}, "--dry-run"},
		{"empty type", []string{"--match", "x*", "--addr", a, "--type", ""}, "--type"},
		{"mistyped type", []string{"--match", "x*", "--addr", a, "--type", "strng"}, "--type: type must be one of string, list, set, zset, hash, stream"},
		{"type in capitals", []string{"--match", "x*", "--addr", a, "--type", "STRING"}, "--type"},
		{"type too long for a module", []string{"--match", "x*", "--addr", a, "--type", "ReJSON-RL2"}, "--type"},
		{"extra argument", []string{"--match", "x*", "--addr", a, "extra"}, "unexpected argument"},
		{"unknown flag", []string{"--match", "x*", "--addr", a, "--nope"}, "unknown flag"},
		{"json in a missing dir", []string{"--match", "x*", "--addr", a, "--json", filepath.Join(dir, "no", "a.json")}, "--json"},
		{"json a dir", []string{"--match", "x*", "--addr", a, "--json", dir}, "--json"},
	}
	for _, tc := range tests {
		args := append([]string{"audit"}, tc.args...)
		res := runCLI(t, t.Context(), args...)
		if res.code != exitUsage || !strings.Contains(res.stderr, tc.want) {
			t.Errorf("%s: run(%q) = %d, stderr %q; want %d and %q", tc.name, args, res.code, res.stderr, exitUsage, tc.want)
		}
	}
	checkUntouched(t, rdb, []string{"audit", "(bad input)"})
	if _, err := os.Stat(filepath.Join(dir, "no")); err == nil {
		t.Errorf("a bad --json created %s", filepath.Join(dir, "no"))
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		// The login check's messages, as every command's (connection.Check).
		{[]string{"--user", "nobody", "--password", "wrong"}, "--user/--password"},
		{[]string{"--db", "16"}, "--db: "},
	} {
		args := append([]string{"audit", "--match", "x*", "--addr", a}, tc.args...)
		if res := runCLI(t, t.Context(), args...); res.code != exitUsage || !strings.Contains(res.stderr, tc.want) {
			t.Errorf("run(%q) = %d, %q; want %d naming %s", args, res.code, res.stderr, exitUsage, tc.want)
		}
	}
	jsonPath := filepath.Join(dir, "new.json")
	res := runCLI(t, t.Context(), "audit", "--match", "x*", "--addr", closedAddr(t), "--json", jsonPath)
	if res.code != exitUsage || !strings.Contains(res.stderr, "--addr") {
		t.Errorf("audit of a closed address = %d, %q; want %d naming --addr", res.code, res.stderr, exitUsage)
	}
	if _, err := os.Stat(jsonPath); err == nil {
		t.Errorf("audit of a closed address left %s behind", jsonPath)
	}
}

// TestAuditProgressLine checks the live line's figures, and that it is
// drawn at most every progressEvery and erased at the end.
func TestAuditProgressLine(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	l := &progressLine{w: &b}
	p := audit.Progress{Node: 1, Nodes: 3, Addr: "h:1", Keys: 5000, Immortal: 7, Scans: 25, Count: 1000, DBSize: 100000, Elapsed: 2 * time.Second}
	l.show(p)
	l.show(p) // too soon: not drawn
	want := "\r\033[Kaudit: node 2/3 h:1: 5000 keys examined, 2500 keys/s, 7 immortal, ~25% walked, ETA 6s"
	if b.String() != want {
		t.Errorf("show(%+v) wrote %q; want %q", p, b.String(), want)
	}
	l.clear()
	if !strings.HasSuffix(b.String(), "\r\033[K") {
		t.Errorf("clear() wrote %q; want the line erased", b.String())
	}
}

// TestReportAudit renders an audit file beside a load run's report.
func TestReportAudit(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	seedAuditMix(t, rdb, prefix)
	dir := t.TempDir()
	auditPath, runPath, page := filepath.Join(dir, "audit.json"), filepath.Join(dir, "run.json"), filepath.Join(dir, "page.html")
	mustRun(t, exitOK, "audit", "--match", prefix+"*", "--addr", srv.Addr(), "--json", auditPath)
	mustRun(t, exitOK, "--addr", srv.Addr(), "--requests", "50", "--duration", "0", "--prefix", prefix+"run:", "--json", runPath)
	res := mustRun(t, exitOK, "report", runPath, auditPath, "-o", page)
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(data)
	for _, want := range []string{`<section id="audits">`, "audit.json: MATCH", "3 immortal", `<section id="summary">`} {
		if !strings.Contains(html, want) {
			t.Errorf("report(%s, %s) page lacks %q\n%s", runPath, auditPath, want, res.stderr)
		}
	}
	// An audit alone (issue 34, item 19): the line says what was drawn,
	// not "0 cells from 0 files".
	res = mustRun(t, exitOK, "report", auditPath, "-o", page)
	if want := "wrote " + page + ": the audit report " + auditPath + " alone"; !strings.Contains(res.stderr, want) || strings.Contains(res.stderr, "0 cells") {
		t.Errorf("rlbench report %s stderr = %q; want %q and how to add runs", auditPath, res.stderr, want)
	}
	if want := "rlbench --json"; !strings.Contains(res.stderr, want) {
		t.Errorf("rlbench report %s stderr = %q; want it to say what to add (%q)", auditPath, res.stderr, want)
	}
	res = mustRun(t, exitOK, "report", runPath, auditPath, "-o", page)
	// The overview, the immortal keys and the cell's curve; and its time
	// series when the run lasted long enough for one (a loaded machine's
	// does): what the page says it draws.
	data, err = os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	_, total, _ := strings.Cut(string(data), htmlreport.TotalAttr+`="`)
	total, _, _ = strings.Cut(total, `"`)
	if n, _ := strconv.Atoi(total); n < 3 {
		t.Errorf("the page draws %q charts; want 3 or more", total)
	}
	if want := "from 1 files, " + total + " charts, and 1 audit report"; !strings.Contains(res.stderr, want) {
		t.Errorf("rlbench report %s %s stderr = %q; want %q", runPath, auditPath, res.stderr, want)
	}
}

// TestReportAuditOfEveryKey is issue 34, item 17: an audit of --match '*'
// was recorded as "match": "" and shown as an empty pattern in the HTML
// report; both now say *.
func TestReportAuditOfEveryKey(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	seedAuditMix(t, rdb, redistest.Prefix(t))
	dir := t.TempDir()
	auditPath, page := filepath.Join(dir, "audit.json"), filepath.Join(dir, "page.html")
	mustRun(t, exitOK, "audit", "--match", "*", "--addr", srv.Addr(), "--json", auditPath)
	mustRun(t, exitOK, "report", auditPath, "-o", page)
	for path, want := range map[string]string{auditPath: `"match": "*"`, page: "audit.json: MATCH <code>*</code>"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), want) {
			t.Errorf("%s lacks %q", filepath.Base(path), want)
		}
	}
}

// clusterACL is what --cluster needs beyond readOnlyACL: the cluster's
// slot map (CLUSTER SLOTS), which the client reads to find the masters.
const clusterACL = "+cluster|slots"

// TestAuditClusterReadOnlyACL audits a 3-master cluster as a user with the
// read-only rules plus clusterACL on every node.
func TestAuditClusterReadOnlyACL(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	rdb := redistest.ClusterClient(t, cl)
	prefix := redistest.Prefix(t)
	for i := range 12 {
		if err := rdb.Set(t.Context(), fmt.Sprintf("%s{%d}", prefix, i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, addr := range cl.Addrs() {
		admin := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
		setUser(t, admin, "auditor", "pw", prefix+"*", readOnlyACL, clusterACL)
		admin.Close()
	}
	jsonPath := filepath.Join(t.TempDir(), "audit.json")
	mustRun(t, exitOK, "audit", "--match", prefix+"*", "--cluster", cl.Addrs()[0], "--user", "auditor", "--password", "pw",
		"--limit", "5", "--types", "--json", jsonPath)
	if rep := readAudit(t, jsonPath); rep.Keys != 12 || rep.Immortal != 12 || rep.LockedOut != 7 || len(rep.PerNode) != 3 {
		t.Errorf("audit as the read-only user = %d keys, %d immortal, %d locked out, %d nodes; want 12, 12, 7, 3",
			rep.Keys, rep.Immortal, rep.LockedOut, len(rep.PerNode))
	}
}

// TestAuditURL audits through --url as the read-only ACL user, whose name
// and password the URL carries: the figures of the known mix, and the
// password in no output.
func TestAuditURL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	seedAuditMix(t, admin, prefix)
	setUser(t, admin, "auditor", "s3cret", prefix+"*", readOnlyACL)
	jsonPath := filepath.Join(t.TempDir(), "audit.json")
	args := []string{"audit", "--match", prefix + "*", "--url", "redis://auditor:s3cret@" + srv.Addr() + "/0", "--limit", "100", "--json", jsonPath}
	res := mustRun(t, exitOK, args...)
	rep := readAudit(t, jsonPath)
	if rep.Keys != 6 || rep.Immortal != 3 || rep.LockedOut != 1 || !rep.Complete {
		t.Errorf("run(%q) = %d keys, %d immortal, %d locked out; want 6, 3, 1\n%s", args, rep.Keys, rep.Immortal, rep.LockedOut, res.stdout)
	}
	if strings.Contains(res.stdout+res.stderr, "s3cret") {
		t.Errorf("run(%q) printed the URL's password:\n%s%s", args, res.stdout, res.stderr)
	}
	wrong := []string{"audit", "--match", prefix + "*", "--url", "redis://auditor:wrong@" + srv.Addr()}
	if res := runCLI(t, t.Context(), wrong...); res.code != exitUsage || !strings.Contains(res.stderr, "--url") {
		t.Errorf("run(%q) = %d, %q; want %d naming --url", wrong, res.code, res.stderr, exitUsage)
	}
}

// TestAuditTLS audits a private TLS-only server, with --tls --cacert and
// with a rediss:// URL; skipped when redis-server is built without TLS.
func TestAuditTLS(t *testing.T) {
	t.Parallel()
	srv, err := redisserver.Start(t.Context(), redisserver.Options{Binary: os.Getenv(redistest.BinaryEnv), TLS: &redisserver.TLSOptions{}})
	if errors.Is(err, redisserver.ErrNoTLS) {
		t.Skipf("redis-server built without TLS: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	files, _ := srv.TLS()
	rdb := connection.Admin{Settings: connection.Settings{TLS: &connection.TLSFiles{CACert: files.CACert}}}
	admin, err := rdb.Client(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	prefix := redistest.Prefix(t)
	seedAuditMix(t, admin, prefix)
	for _, target := range [][]string{
		{"--addr", srv.Addr(), "--tls", "--cacert", files.CACert},
		{"--url", "rediss://" + srv.Addr(), "--cacert", files.CACert},
	} {
		jsonPath := filepath.Join(t.TempDir(), "audit.json")
		args := append([]string{"audit", "--match", prefix + "*", "--json", jsonPath}, target...)
		res := mustRun(t, exitOK, args...)
		if rep := readAudit(t, jsonPath); rep.Keys != 6 || rep.Immortal != 3 {
			t.Errorf("run(%q) = %d keys, %d immortal; want 6, 3\n%s", args, rep.Keys, rep.Immortal, res.stdout)
		}
	}
	plain := []string{"audit", "--match", prefix + "*", "--addr", srv.Addr()}
	if res := runCLI(t, t.Context(), plain...); res.code != exitUsage || !strings.Contains(res.stderr, "--tls") {
		t.Errorf("run(%q) on a TLS-only server = %d, %q; want %d naming --tls", plain, res.code, res.stderr, exitUsage)
	}
}

// TestAuditSentinel audits the master that Sentinel names, through
// --sentinel MASTER@host:port: the keys of the master, and each sampled
// key named by the master's address.
func TestAuditSentinel(t *testing.T) {
	t.Parallel()
	s, err := redisserver.StartSentinel(t.Context(), redisserver.SentinelOptions{Binary: os.Getenv(redistest.BinaryEnv)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	master, err := s.MasterAddr(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	rdb := connection.Admin{}.PlainClient(master)
	defer rdb.Close()
	prefix := redistest.Prefix(t)
	seedAuditMix(t, rdb, prefix)
	jsonPath := filepath.Join(t.TempDir(), "audit.json")
	args := []string{"audit", "--match", prefix + "*", "--sentinel", s.MasterName() + "@" + strings.Join(s.SentinelAddrs(), ","), "--json", jsonPath}
	res := mustRun(t, exitOK, args...)
	rep := readAudit(t, jsonPath)
	if rep.Keys != 6 || rep.Immortal != 3 || len(rep.ImmortalSample) != 3 {
		t.Fatalf("run(%q) = %d keys, %d immortal, %d sampled; want 6, 3, 3\n%s", args, rep.Keys, rep.Immortal, len(rep.ImmortalSample), res.stdout)
	}
	if node := rep.ImmortalSample[0].Node; node != master {
		t.Errorf("run(%q): sample's node = %q; want the master, %s", args, node, master)
	}
}

// TestAuditLongKeyName is issue 34, item 18: one immortal key with a 1 MB
// name made the audit's text 15.7 MB, every sample row padded to the
// longest name. The text cuts a long name, quoted, with its length; the
// JSON keeps it whole.
func TestAuditLongKeyName(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	long := prefix + strings.Repeat("k", 1<<20)
	for _, k := range []string{long, prefix + "a", prefix + "b", prefix + "c"} {
		if err := rdb.Set(t.Context(), k, "200", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	jsonPath := filepath.Join(t.TempDir(), "audit.json")
	res := mustRun(t, exitOK, "audit", "--match", prefix+"*", "--addr", srv.Addr(), "--limit", "100", "--json", jsonPath)
	if len(res.stdout) > 64<<10 {
		t.Errorf("rlbench audit stdout is %d bytes with one 1 MB key name; want under 64 KiB", len(res.stdout))
	}
	if want := fmt.Sprintf(`... (%d bytes)`, len(long)); strings.Count(res.stdout, want) != 2 {
		t.Errorf("rlbench audit stdout =\n%.2000s\nwant the long name cut, with %q, in the immortal and the locked-out samples", res.stdout, want)
	}
	if want := `"` + prefix + `a"`; !strings.Contains(res.stdout, want) {
		t.Errorf("rlbench audit stdout =\n%.2000s\nwant the short names whole, %s", res.stdout, want)
	}
	rep := readAudit(t, jsonPath)
	if !slices.ContainsFunc(rep.ImmortalSample, func(s audit.Sample) bool { return s.Key == long }) {
		t.Errorf("--json immortal sample lacks the 1 MB name whole")
	}
}

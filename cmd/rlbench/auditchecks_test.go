package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/serverinfo"
)

// readAuditDoc reads the audit JSON file at path as a generic document,
// to check the wire format itself.
func readAuditDoc(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

// TestAuditEmpty: an audit that matched no key (a pattern that matches
// nothing, a module type the server does not have) says so on stderr and
// in the JSON, and exits 1, also with --fail-on-immortal; --allow-empty
// accepts it.
func TestAuditEmpty(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	seedAuditMix(t, rdb, prefix)
	jsonPath := filepath.Join(t.TempDir(), "audit.json")
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"no match", []string{"--match", prefix + "nothing*"}, exitFailure},
		{"fail on immortal", []string{"--match", prefix + "nothing*", "--fail-on-immortal"}, exitFailure},
		{"module type", []string{"--match", prefix + "*", "--type", "ReJSON-RL"}, exitFailure},
		{"type with none", []string{"--match", prefix + "*", "--type", "stream"}, exitFailure},
		{"allowed", []string{"--match", prefix + "nothing*", "--allow-empty", "--fail-on-immortal"}, exitOK},
	} {
		args := append([]string{"audit", "--addr", srv.Addr(), "--json", jsonPath}, tc.args...)
		res := runCLI(t, t.Context(), args...)
		if res.code != tc.code || !strings.Contains(res.stderr, "no key matched") {
			t.Errorf("%s: run(%q) = %d, stderr %q; want %d, saying no key matched", tc.name, args, res.code, res.stderr, tc.code)
		}
		if doc := readAuditDoc(t, jsonPath); doc["matched"] != 0.0 || doc["complete"] != true {
			t.Errorf("%s: JSON matched %v, complete %v; want 0, true", tc.name, doc["matched"], doc["complete"])
		}
	}
	args := []string{"audit", "--addr", srv.Addr(), "--json", jsonPath, "--match", prefix + "*", "--type", "hash"}
	if res := mustRun(t, exitOK, args...); strings.Contains(res.stderr, "no key matched") {
		t.Errorf("run(%q): stderr %q; want nothing about no key matched", args, res.stderr)
	}
	if doc := readAuditDoc(t, jsonPath); doc["matched"] != 1.0 {
		t.Errorf("run(%q): JSON matched %v; want 1 (the hash)", args, doc["matched"])
	}
}

// TestAuditServerRestarted kills and restarts the server (empty) in the
// middle of a paced audit of 20,000 keys, as the issue did: the audit is
// incomplete and exits 1, not a complete audit of what was left.
func TestAuditServerRestarted(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	pipe := rdb.Pipeline()
	for i := range 20000 {
		pipe.Set(ctx, fmt.Sprintf("%s%d", prefix, i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	jsonPath := filepath.Join(t.TempDir(), "audit.json")
	args := []string{"audit", "--match", prefix + "*", "--addr", srv.Addr(), "--rate", "2000", "--count", "100", "--json", jsonPath}
	done := make(chan cliResult, 1)
	go func() { done <- runCLI(t, ctx, args...) }()
	// Restart once the audit has walked a few pages (of its 10 s).
	deadline := time.Now().Add(30 * time.Second)
	for scanCalls(t, rdb) < 5 {
		if time.Now().After(deadline) {
			t.Fatal("the audit sent no 5 SCANs in 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	res := <-done
	rep := readAudit(t, jsonPath)
	// Whether a command failed on the dropped connection or the next
	// identity read saw the new run_id, the audit is incomplete.
	if res.code != exitFailure || rep.Complete {
		t.Errorf("run(%q) across a restart = %d, complete %t, %d keys\nstderr: %s\nwant exit 1, incomplete", args, res.code, rep.Complete, rep.Keys, res.stderr)
	}
}

// scanCalls is the server's count of SCAN calls so far, 0 before the first.
func scanCalls(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	n, err := serverScans(t.Context(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// serverScans is scanCalls for any goroutine: the error instead of a
// failed test.
func serverScans(ctx context.Context, rdb *redis.Client) (int, error) {
	stats, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO commandstats: %w", err)
	}
	_, rest, ok := strings.Cut(stats, "cmdstat_scan:calls=")
	if !ok {
		return 0, nil
	}
	var n int
	fmt.Sscanf(rest, "%d", &n)
	return n, nil
}

// TestAuditJSONServer: a saved audit says what it audited: the server's
// address, name and version, db and run_id, and the pattern and type.
func TestAuditJSONServer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	db2 := redis.NewClient(&redis.Options{Addr: srv.Addr(), DB: 2, DisableIdentity: true})
	defer db2.Close()
	if err := db2.Set(ctx, prefix+"k", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	runID := serverinfo.Parse(rdb.Info(ctx, "server").Val())["run_id"]
	jsonPath := filepath.Join(t.TempDir(), "audit.json")
	mustRun(t, exitOK, "audit", "--addr", srv.Addr(), "--db", "2", "--match", prefix+"*", "--type", "string", "--json", jsonPath)
	doc := readAuditDoc(t, jsonPath)
	servers, _ := doc["servers"].([]any)
	want := map[string]any{"addr": srv.Addr(), "db": 2.0, "name": srv.Info().Name, "version": srv.Info().Version, "run_id": runID, "role": "master"}
	if len(servers) != 1 || fmt.Sprint(servers[0]) != fmt.Sprint(want) {
		t.Errorf("JSON servers = %v; want [%v]", doc["servers"], want)
	}
	if doc["match"] != prefix+"*" || doc["type"] != "string" {
		t.Errorf("JSON match %v, type %v; want %s*, string", doc["match"], doc["type"], prefix)
	}
}

// TestAuditNonUTF8Keys: keys whose names are not valid UTF-8 come out of
// the JSON whole (key_b64), two of them distinct, and found again by name;
// a valid UTF-8 name is as it is, with no key_b64.
func TestAuditNonUTF8Keys(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	names := []string{prefix + "\xff\xfe", prefix + "\xff\xfd", prefix + "ключ"}
	for _, k := range names {
		if err := rdb.Set(ctx, k, "\xc3", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	jsonPath := filepath.Join(t.TempDir(), "audit.json")
	mustRun(t, exitOK, "audit", "--addr", srv.Addr(), "--match", prefix+"*", "--json", jsonPath)
	doc := readAuditDoc(t, jsonPath)
	samples, _ := doc["immortal_sample"].([]any)
	found := map[string]bool{}
	for _, s := range samples {
		m, _ := s.(map[string]any)
		key, _ := m["key"].(string)
		if b, ok := m["key_b64"].(string); ok {
			raw, err := base64.StdEncoding.DecodeString(b)
			if err != nil {
				t.Errorf("key_b64 %q: %v", b, err)
			}
			key = string(raw)
		}
		if v, _ := m["value_b64"].(string); v != base64.StdEncoding.EncodeToString([]byte("\xc3")) {
			t.Errorf("sample %v: value_b64 %q; want the value's byte in base64", m, v)
		}
		if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 1 {
			t.Errorf("sample %v names %q, which EXISTS = %d, %v; want the key found again", m, key, n, err)
		}
		found[key] = true
		if key == names[2] && (m["key"] != names[2] || m["key_b64"] != nil) {
			t.Errorf("sample of a UTF-8 name = %v; want key %q as is, no key_b64", m, names[2])
		}
	}
	if len(found) != 3 {
		t.Errorf("immortal_sample names %d distinct keys; want the 3 (%q)", len(found), names)
	}
	rep := readAudit(t, jsonPath)
	for _, s := range rep.ImmortalSample {
		if s.Key != names[0] && s.Key != names[1] && s.Key != names[2] {
			t.Errorf("ReadReportFile: sample key %q; want one of %q", s.Key, names)
		}
	}
}

// TestAuditFieldsNeeds74 refuses --fields on Debian's Redis 7.0 (no HPTTL)
// up front: exit 2 naming the flag and the command, and no SCAN sent.
func TestAuditFieldsNeeds74(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	if serverinfo.VersionAtLeast(srv.Info().RedisVersion, "7.4.0") {
		t.Skipf("redis-server on PATH is %s, which has HPTTL", srv.Info().Version)
	}
	rdb := redistest.Client(t, srv)
	args := []string{"audit", "--addr", srv.Addr(), "--match", "x*", "--fields"}
	res := runCLI(t, t.Context(), args...)
	if res.code != exitUsage || !strings.Contains(res.stderr, "--fields") || !strings.Contains(res.stderr, "HPTTL") {
		t.Errorf("run(%q) on %s = %d, stderr %q; want %d naming --fields and HPTTL", args, srv.Info().Version, res.code, res.stderr, exitUsage)
	}
	if n := scanCalls(t, rdb); n != 0 {
		t.Errorf("run(%q) sent %d SCANs; want none before the refusal", args, n)
	}
}

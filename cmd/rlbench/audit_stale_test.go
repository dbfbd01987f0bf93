package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/redistest"
)

// TestAuditWindowStamp checks --window-stamp on keys written by the test
// with plain commands, for each stamp: the immortal keys whose window has
// ended are stale, exactly, apart from the live ones (windows to come, a
// name without a number), with their memory from MEMORY USAGE scaled to
// their count; a stale counter over --limit is not locked out, a live one
// is; a stale key with a TTL is not stale. --fix-ttl then gives every
// immortal key, stale ones too, the TTL and deletes none.
func TestAuditWindowStamp(t *testing.T) {
	t.Parallel()
	const window = 60
	cur := time.Now().Unix() / window * window
	tests := []struct {
		stamp string
		// name is the key of counter user:7 in the window starting at
		// start, Unix seconds.
		name func(start int64) string
	}{
		{"unix", func(s int64) string { return "rl:user:7_" + strconv.FormatInt(s, 10) }},
		{"index", func(s int64) string { return "rl:user:7:" + strconv.FormatInt(s/window, 10) }},
		{"unix-ms", func(s int64) string { return "rl:user:7:" + strconv.FormatInt(s*1000, 10) + ":minute" }},
	}
	srv := redistest.Start(t)
	for _, tc := range tests {
		t.Run(tc.stamp, func(t *testing.T) {
			t.Parallel()
			rdb := redistest.Client(t, srv)
			ctx := t.Context()
			prefix := redistest.Prefix(t)
			stale := []string{prefix + tc.name(cur-10*window), prefix + tc.name(cur-2*window), prefix + tc.name(1_000_000_020)}
			live := []string{prefix + tc.name(cur+10*window), prefix + tc.name(cur+100*window), prefix + "rl:user:none"}
			for _, k := range append(stale, live...) {
				rdb.Set(ctx, k, 7, 0)
			}
			rdb.Set(ctx, prefix+"x"+tc.name(cur-5*window), 7, time.Hour) // a stale window, with a TTL
			rdb.Set(ctx, prefix+"over"+tc.name(cur-3*window), 150, 0)    // stale, over the limit
			rdb.Set(ctx, prefix+"over"+tc.name(cur+3*window), 150, 0)    // live, over the limit
			jsonPath := filepath.Join(t.TempDir(), "audit.json")
			args := []string{"audit", "--match", prefix + "*", "--addr", srv.Addr(), "--window-stamp", tc.stamp, "--window", "1m",
				"--limit", "100", "--json", jsonPath}
			res := mustRun(t, exitOK, args...)
			rep := readAudit(t, jsonPath)
			if rep.StaleFindings == nil {
				t.Fatalf("run(%q): no stale figures in the JSON\n%s", args, res.stdout)
			}
			got := fmt.Sprintf("keys %d immortal %d stale %d unstamped %d locked %d sampled %d",
				rep.Keys, rep.Immortal, rep.Stale, rep.Unstamped, rep.LockedOut, rep.StaleMemorySampled)
			if want := "keys 9 immortal 8 stale 4 unstamped 1 locked 1 sampled 4"; got != want {
				t.Errorf("run(%q) = %s; want %s\n%s", args, got, want, res.stdout)
			}
			if rep.StaleMemoryBytes <= 0 || rep.StaleMemoryBytes != rep.StaleMemorySampleBytes {
				t.Errorf("run(%q): stale memory %d bytes (sample %d); want the whole sample's, > 0", args, rep.StaleMemoryBytes, rep.StaleMemorySampleBytes)
			}
			for _, want := range []string{"stale (window ended)", "stale memory, bytes (estimate)", "live (window not ended)"} {
				if !strings.Contains(res.stdout, want) {
					t.Errorf("run(%q) text lacks %q:\n%s", args, want, res.stdout)
				}
			}

			fix := append(args, "--fix-ttl", "60")
			res = mustRun(t, exitOK, fix...)
			rep = readAudit(t, jsonPath)
			if rep.Fixed != 8 || rep.Stale != 4 {
				t.Errorf("run(%q): fixed %d, stale %d; want 8 and 4\n%s", fix, rep.Fixed, rep.Stale, res.stdout)
			}
			for _, k := range stale {
				if ttl := rdb.TTL(ctx, k).Val(); ttl <= 0 || ttl > time.Minute {
					t.Errorf("TTL %s after --fix-ttl 60 = %s; want up to 60 s, the key kept", k, ttl)
				}
			}
		})
	}
}

// TestAuditWindowStampBadInput checks that --window-stamp and --window are
// refused as bad input, naming the flag and the accepted values, before
// any command reaches the server.
func TestAuditWindowStampBadInput(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	a := srv.Addr()
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"unknown stamp", []string{"--window-stamp", "unix-s", "--window", "60"}, "--window-stamp: want one of unix, unix-ms, unix-ns, index, got \"unix-s\""},
		{"empty stamp", []string{"--window-stamp", "", "--window", "60"}, "--window-stamp: want one of"},
		{"hashed", []string{"--window-stamp", "hashed", "--window", "60"}, "--window-stamp: want one of"},
		{"no window", []string{"--window-stamp", "unix"}, "--window-stamp needs --window"},
		{"window alone", []string{"--window", "60"}, "--window: only with --window-stamp"},
		{"fractional window", []string{"--window-stamp", "index", "--window", "1.5s"}, "--window: want a whole number of seconds"},
		{"zero window", []string{"--window-stamp", "index", "--window", "0"}, "--window: want a whole number of seconds"},
	}
	for _, tc := range tests {
		args := append([]string{"audit", "--match", "x*", "--addr", a}, tc.args...)
		res := runCLI(t, t.Context(), args...)
		if res.code != exitUsage || !strings.Contains(res.stderr, tc.want) {
			t.Errorf("%s: run(%q) = %d, stderr %q; want %d and %q", tc.name, args, res.code, res.stderr, exitUsage, tc.want)
		}
	}
	checkUntouched(t, rdb, []string{"audit", "(bad --window-stamp)"})
}

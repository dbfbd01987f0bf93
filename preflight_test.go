package rlbench_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/rlbench/rlbench/connection"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/topology"
	"github.com/rlbench/rlbench/workload"
)

// usageField returns the Config field of err's *rlbench.UsageError, or ""
// when err is not one.
func usageField(err error) string {
	if uerr, ok := errors.AsType[*rlbench.UsageError](err); ok {
		return uerr.Field
	}
	return ""
}

// TestRunRefusesAPrefixThatHoldsKeys checks that keys already under the
// run's prefix stop the run before any write: they would be audited as the
// run's (a false alarm) and deleted.
func TestRunRefusesAPrefixThatHoldsKeys(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	prefix := redistest.Prefix(t)
	foreign := prefix + "lua:go-redis:x"
	if err := rdb.Set(ctx, foreign, 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := rlbench.Run(ctx, rlbench.Config{
		Targets:  []rlbench.TargetSpec{{Addr: srv.Addr()}},
		Workload: workload.Config{Workers: 2, Keys: 5, Requests: 50, Prefix: prefix},
	}, rlbench.Options{})
	if usageField(err) != "Workload.Prefix" || !strings.Contains(err.Error(), foreign) {
		t.Errorf("Run(prefix holding %s) error = %v; want a Workload.Prefix UsageError naming the key", foreign, err)
	}
	if n := rdb.DBSize(ctx).Val(); n != 1 {
		t.Errorf("DBSIZE after the refused run = %d; want 1", n)
	}
	if v := rdb.Get(ctx, foreign).Val(); v != "1" {
		t.Errorf("GET %s after the refused run = %q; want \"1\" (untouched)", foreign, v)
	}
}

// TestRunRefusesATargetThatTakesNoWrites checks that a replica is refused
// before the load, instead of a run in which every decision is READONLY.
func TestRunRefusesATargetThatTakesNoWrites(t *testing.T) {
	t.Parallel()
	primary := redistest.Start(t)
	replica := redistest.Start(t)
	rdb := redistest.Client(t, replica)
	ctx := context.Background()
	host, port, _ := strings.Cut(primary.Addr(), ":")
	if err := rdb.ReplicaOf(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := rlbench.Run(ctx, rlbench.Config{
		Targets:  []rlbench.TargetSpec{{Addr: replica.Addr()}},
		Workload: workload.Config{Workers: 2, Keys: 5, Requests: 50, Prefix: redistest.Prefix(t)},
	}, rlbench.Options{})
	if usageField(err) != "Targets.Addr" || !strings.Contains(err.Error(), "a replica of "+primary.Addr()) {
		t.Errorf("Run(a replica) error = %v; want a Targets.Addr UsageError naming its master", err)
	}
}

// TestRunRefusesAUserWithoutTheCommands checks that a user who may SET but
// not run scripts, or not send a command rlbench's own checks send before
// that of permissions (INFO, SCAN, COMMAND INFO), is refused at pre-flight
// as a --user error naming the command, rather than running a cell in
// which every decision fails with NOPERM or blaming another flag; and that
// a user without CONFIG GET runs (the maxclients check is skipped).
func TestRunRefusesAUserWithoutTheCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		revoke []any
		says   string // "" for a run that goes ahead
	}{
		{"no scripts", []any{"-evalsha", "-eval"}, "EVALSHA"},
		{"no scan", []any{"-scan"}, "the user may not send SCAN"},
		{"no command info", []any{"-command|info"}, "the user may not send COMMAND INFO"},
		{"no info", []any{"-info"}, "the user may not send INFO"},
		{"no get", []any{"-get"}, "the user may not send GET"},
		{"no watch", []any{"-watch"}, "the user may not send WATCH"},
		{"no config get", []any{"-config|get"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			rdb := redistest.Client(t, srv)
			ctx := context.Background()
			// The admin client is logged in already: its connection keeps
			// working for the checks below whatever the user loses.
			if err := rdb.Do(ctx, append([]any{"ACL", "SETUSER", "default"}, tc.revoke...)...).Err(); err != nil {
				t.Fatal(err)
			}
			_, err := rlbench.Run(ctx, rlbench.Config{
				Targets:  []rlbench.TargetSpec{{Addr: srv.Addr()}},
				Warmup:   0,
				Workload: workload.Config{Workers: 2, Keys: 5, Requests: 50, Prefix: redistest.Prefix(t)},
			}, rlbench.Options{})
			if tc.says == "" {
				if err != nil {
					t.Errorf("Run(%s) error = %v; want a run", tc.name, err)
				}
				return
			}
			if usageField(err) != "Targets.Login.Username" || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "NOPERM") {
				t.Errorf("Run(%s) error = %v; want a Targets.Login.Username UsageError saying %q and quoting NOPERM", tc.name, err, tc.says)
			}
			if n := rdb.DBSize(ctx).Val(); n != 0 {
				t.Errorf("DBSIZE after the refused run = %d; want 0", n)
			}
		})
	}
}

// TestRunBlamesTheRightFlag checks that a database the server does not have
// is a --db error and a refused password a --password one, not an address
// that "is not listening".
func TestRunBlamesTheRightFlag(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	if err := rdb.ConfigSet(ctx, "requirepass", "secret").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "AUTH", "secret").Err(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		cfg   rlbench.Config
		field string
		says  string
	}{
		{"database out of range", rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: srv.Addr(), Login: connection.Settings{Password: "secret", DB: 16}}}}, "Connection", "--db"},
		{"wrong password", rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: srv.Addr(), Login: connection.Settings{Password: "nope"}}}}, "Connection", "--user/--password"},
		{"no password", rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}}, "Connection", "--password"},
	}
	for _, tc := range tests {
		_, err := rlbench.Run(ctx, tc.cfg, rlbench.Options{})
		if usageField(err) != tc.field || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "listening") {
			t.Errorf("Run(%s) error = %v; want a %s UsageError saying %q", tc.name, err, tc.field, tc.says)
		}
	}
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("DBSIZE after refused runs = %d, %v; want 0", n, err)
	}
}

// TestServerWideFaultsNeedConsent checks that a stall, which pauses every
// client of the server, is refused on a server rlbench did not start unless
// the user allows it, and that the report then says whom it hit.
func TestServerWideFaultsNeedConsent(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	stall, err := faults.Parse("stall@300ms:100ms")
	if err != nil {
		t.Fatal(err)
	}
	cfg := rlbench.Config{
		Targets:  []rlbench.TargetSpec{{Addr: srv.Addr()}},
		Faults:   []faults.Fault{stall},
		Warmup:   0,
		Workload: workload.Config{Workers: 2, Keys: 5, Duration: time.Second, Prefix: redistest.Prefix(t)},
	}
	if _, err := rlbench.Run(context.Background(), cfg, rlbench.Options{}); usageField(err) != "Faults" || !strings.Contains(err.Error(), "--allow-server-wide-faults") {
		t.Fatalf("Run(stall on --addr) error = %v; want a Faults UsageError naming --allow-server-wide-faults", err)
	}
	cfg.AllowServerWideFaults = true
	rep, err := rlbench.Run(context.Background(), cfg, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run(stall on --addr, allowed) error = %v", err)
	}
	r := rep.Runs[0]
	if len(r.Faults) != 1 || !strings.Contains(r.Faults[0].Detail, "every client of "+srv.Addr()) {
		t.Errorf("faults = %+v; want the stall, saying it hit every client of %s", r.Faults, srv.Addr())
	}
	if r.Saturation != nil && r.Saturation.Verdict != "" {
		t.Errorf("saturation verdict after a stall = %q; want none (the server was paused)", r.Saturation.Verdict)
	}
}

// TestFailedAuditSaysSo checks that an audit that could not complete (here
// the user loses SCAN during the load) is reported as failed, with unknown
// figures and an error, not as a clean audit of zero keys.
func TestFailedAuditSaysSo(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	// The cell says it is running once the pre-flight (which checks SCAN)
	// is behind it, and before its load and audit.
	revoke := &onWrite{substr: "rlbench: running ", do: func() {
		if err := rdb.Do(ctx, "ACL", "SETUSER", "default", "-scan").Err(); err != nil {
			t.Errorf("ACL SETUSER default -scan: %v", err)
		}
	}}
	rep, err := rlbench.Run(ctx, rlbench.Config{
		Targets:  []rlbench.TargetSpec{{Addr: srv.Addr()}},
		Workload: workload.Config{Workers: 2, Keys: 5, Duration: 500 * time.Millisecond, Prefix: redistest.Prefix(t)},
	}, rlbench.Options{Log: revoke})
	if !revoke.done {
		t.Fatalf("Run never logged %q", revoke.substr)
	}
	if !errors.Is(err, rlbench.ErrAuditFailed) {
		t.Fatalf("Run(SCAN refused after the pre-flight) error = %v; want ErrAuditFailed", err)
	}
	if len(rep.Runs) != 1 || !strings.Contains(rep.Runs[0].Audit.Error, "NOPERM") {
		t.Fatalf("Run(SCAN refused) runs = %+v; want one whose audit error quotes NOPERM", rep.Runs)
	}
	data, jerr := json.Marshal(rep.Runs[0].Audit)
	if jerr != nil || !strings.Contains(string(data), `"immortal":null`) {
		t.Errorf("failed audit as JSON = %s, %v; want null figures", data, jerr)
	}
	var text strings.Builder
	if err := results.Text(rep)(&text); err != nil || !strings.Contains(text.String(), "AUDIT FAILED") {
		t.Errorf("text report = %q, %v; want an AUDIT FAILED line", text.String(), err)
	}
}

// onWrite is an io.Writer for rlbench.Options.Log that calls do, once, in
// the first write containing substr: a step of the test taken at a known
// point of the run rather than after a guessed sleep.
type onWrite struct {
	substr string
	do     func()
	done   bool
}

func (w *onWrite) Write(p []byte) (int, error) {
	if !w.done && strings.Contains(string(p), w.substr) {
		w.done = true
		w.do()
	}
	return len(p), nil
}

// TestTwoRunsOnOnePrefix is issue 21, item 5: two runs started together on
// one prefix both passed the empty-prefix check, shared counters and
// deleted each other's keys. Each now claims the prefix first: exactly one
// proceeds, the other is refused as bad input naming the holder's run id;
// the claim is not among the audited keys and is gone after the run; the
// tenant's keys beside the prefix are untouched.
func TestTwoRunsOnOnePrefix(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	prefix := redistest.Prefix(t)
	// The tenant's own keys, beside the prefix.
	for i := range 20 {
		if err := rdb.Set(ctx, "tenant:"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	load, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		id  string
		rep *results.Report
		err error
	}
	done := make(chan result, 2)
	start := make(chan struct{})
	for _, id := range []string{"run-a", "run-b"} {
		go func() {
			<-start
			rep, err := rlbench.Run(load, rlbench.Config{
				Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}, RunID: id, Strategies: []string{"naive"}, Window: 60,
				Workload: workload.Config{Workers: 2, Keys: 10, Duration: 2 * time.Minute, Prefix: prefix},
			}, rlbench.Options{})
			done <- result{id, rep, err}
		}()
	}
	close(start)
	var refused result
	select {
	case refused = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("neither of two runs on one prefix was refused in 60s")
	}
	holder := map[string]string{"run-a": "run-b", "run-b": "run-a"}[refused.id]
	if usageField(refused.err) != "Workload.Prefix" || !strings.Contains(refused.err.Error(), "run "+holder+" ") {
		t.Errorf("Run(%s) beside %s on one prefix = %v; want a Workload.Prefix UsageError naming run %s", refused.id, holder, refused.err, holder)
	}
	// The other one runs: until its counters are there, then it is
	// interrupted, and audits and deletes them as usual.
	key := keyspace.Cell(prefix, "naive", "go-redis") + "*"
	for deadline := time.Now().Add(30 * time.Second); len(scan(t, rdb, key)) < 10; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run that holds the prefix wrote %d of its 10 keys in 30s", len(scan(t, rdb, key)))
		}
	}
	cancel()
	var ran result
	select {
	case ran = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the run that holds the prefix still runs 60s after its interrupt")
	}
	if ran.id != holder || !errors.Is(ran.err, context.Canceled) || len(ran.rep.Runs) != 1 {
		t.Fatalf("Run(%s) = %v; want %s interrupted with 1 run", ran.id, ran.err, holder)
	}
	if a := ran.rep.Runs[0].Audit; a.Keys != 10 {
		t.Errorf("the holder's audit counted %d keys; want its 10 counters", a.Keys)
	}
	if keys := scan(t, rdb, prefix+"*"); len(keys) != 0 {
		t.Errorf("after the run, %q remain under the prefix; want none (the claim deleted too)", keys)
	}
	if n := rdb.DBSize(ctx).Val(); n != 20 {
		t.Errorf("DBSIZE after the runs = %d; want the tenant's 20 keys", n)
	}
}

// scan returns every key that matches pattern.
func scan(t *testing.T, rdb *redis.Client, pattern string) []string {
	t.Helper()
	var keys []string
	iter := rdb.Scan(t.Context(), 0, pattern, 1000).Iterator()
	for iter.Next(t.Context()) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestRunRefusesAPrefixUnderALiveRun: a run whose prefix lies under a live
// run's (x:y: under x:) is refused naming the holder: the live run would
// audit and delete its keys as its own.
func TestRunRefusesAPrefixUnderALiveRun(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	outer := redistest.Prefix(t)
	holder := "run 20261201T000000-0badc0de (pid 1 on h, since 2026-12-01T00:00:00Z)"
	if err := rdb.Set(t.Context(), keyspace.ClaimKey(outer), holder, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := rlbench.Run(t.Context(), rlbench.Config{
		Targets:  []rlbench.TargetSpec{{Addr: srv.Addr()}},
		Workload: workload.Config{Workers: 1, Keys: 1, Duration: 100 * time.Millisecond, Prefix: outer + "inner:"},
	}, rlbench.Options{})
	if usageField(err) != "Workload.Prefix" || !strings.Contains(err.Error(), "0badc0de") {
		t.Fatalf("Run(prefix under a live run's) error = %v; want a Workload.Prefix error naming the holder", err)
	}
	if n := rdb.DBSize(t.Context()).Val(); n != 1 {
		t.Errorf("DBSIZE after the refusal = %d; want only the live run's claim", n)
	}
}

// TestRunThatLostItsClaimStops is issue 34, item 5: a run stopped for
// longer than its claim's TTL lost the prefix to another run, went on
// counting into that run's keys and deleted them at its end, and both
// exited 0. The claim of run A is replaced mid-run by run B's (a SET from
// the test, as B would take it once A's expired) and B's keys written
// under A's cell prefix: A stops its load early and fails saying it lost
// the claim, and deletes none of B's keys, nor B's claim.
func TestRunThatLostItsClaimStops(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	claim := keyspace.ClaimKey(prefix)
	cellPrefix := keyspace.Cell(prefix, "naive", "go-redis")
	holderB := "run 20261203T000000-0000000b (pid 2 on h, since 2026-12-03T00:00:00Z)"
	bKeys := []string{cellPrefix + "{7}", cellPrefix + "{99999}", prefix + "b:only"}
	take := func() {
		// Run B takes the prefix: its claim, its counters under the
		// same cell prefix (the same strategy and client as A).
		if err := rdb.Set(ctx, claim, holderB, time.Hour).Err(); err != nil {
			t.Error(err)
		}
		for _, k := range bKeys {
			if err := rdb.Set(ctx, k, "b", 0).Err(); err != nil {
				t.Error(err)
			}
		}
	}
	const duration = 2 * time.Minute
	rep, err := rlbench.Run(ctx, rlbench.Config{
		Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}, RunID: "run-a", Strategies: []string{"naive"}, Window: 60,
		Workload: workload.Config{Workers: 2, Keys: 10, Duration: duration, Prefix: prefix},
	}, rlbench.Options{Log: &onWrite{substr: "rlbench: running", do: take}})
	if !errors.Is(err, topology.ErrClaimLost) || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "0000000b") || !strings.Contains(err.Error(), "deleted no key") {
		t.Fatalf("Run(A), its claim taken by B = %v; want topology.ErrClaimLost naming B's claim, saying it deleted no key", err)
	}
	if rep == nil || !rep.Failed || rep.Interrupted {
		t.Fatalf("report of A = %+v; want failed, not interrupted", rep)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].DurationS >= duration.Seconds() || rep.Runs[0].Audit.Error == "" {
		t.Errorf("A's runs = %d (load %.1fs, audit error %q); want 1, its load cut short of %s and not audited", len(rep.Runs), rep.Runs[0].DurationS, rep.Runs[0].Audit.Error, duration)
	}
	for _, k := range bKeys {
		if v := rdb.Get(ctx, k).Val(); v != "b" {
			t.Errorf("after A, GET %s = %q; want B's key as it was (\"b\")", k, v)
		}
	}
	if v := rdb.Get(ctx, claim).Val(); v != holderB {
		t.Errorf("after A, GET %s = %q; want B's claim", claim, v)
	}
}

package verify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/internal/porttest"
	"github.com/rlbench/rlbench/internal/proctest"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/topology"
	"github.com/rlbench/rlbench/verify"
)

// cellID names one cell by strategy and check, for every client.
type cellID struct{ strategy, check string }

// knownFindings are the cells that are not what their strategy documents
// today, with the outcome they show. The test requires exactly that
// outcome, so that a fix fails the test and points here to remove the entry.
var knownFindings = map[cellID]verify.Outcome{}

// pinned are cells whose documentation allows more than one outcome (a
// non-atomic strategy may or may not show a given race) or that show the
// seeds' bugs, pinned to what the seeds' strategies must show.
var pinned = []struct {
	cell cellID
	want verify.Outcome
	why  string
}{
	{cellID{"naive", verify.CheckRace}, verify.Leaks, "the first seed's bug: the key expires between GET and INCR"},
	{cellID{"naive", verify.CheckCrash}, verify.Pass, "a fresh key's one gap is between GET and SET EXAT: a crash there writes nothing"},
	{cellID{"incr-expire", verify.CheckCrash}, verify.Leaks, "the second seed's bug: the client dies between INCR and EXPIRE"},
	{cellID{"incr-expire", verify.CheckRace}, verify.Pass, "it never reads before it writes"},
	{cellID{"incr-expire", verify.CheckConcurrent}, verify.Pass, "INCR's reply decides: exactly the limit"},
	{cellID{"lua", verify.CheckHealing}, verify.Leaks, "the seed script sets the TTL only when n == 1"},
	{cellID{"multi-nx", verify.CheckHealing}, verify.Pass, "EXPIRE NX gives a lost TTL back"},
	{cellID{"multi-nx", verify.CheckWrongType}, verify.Leaks, "MULTI does not roll back: EXPIRE NX runs after INCR fails and gives the user's key a TTL"},
	{cellID{"throttled", verify.CheckCrash}, verify.Leaks, "its first decision's second gap is between SET NX and EXPIRE (after TIME+GET, the first, nothing is written)"},
}

// TestRunEveryStrategy runs every check for every registered strategy on
// every client against a private server and requires every cell to be
// what the strategy documents (Expected), the known findings to be exactly
// as recorded, and the pinned cells to be as pinned. The private server
// is Run's own, stopped at its end (the restart check empties it anyway;
// TestRunExistingServer checks the clean-up).
func TestRunEveryStrategy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	prefix := redistest.Prefix(t)

	start := time.Now()
	m, err := verify.Run(ctx, verify.Config{Target: privateTarget(), Prefix: prefix})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	var text bytes.Buffer
	if err := verify.Text(m)(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("Run took %s:\n%s", time.Since(start).Round(time.Millisecond), text.String())

	var want []string
	for _, s := range strategies.BuiltinNames() {
		for _, c := range clients.Names {
			want = append(want, s+"/"+c)
		}
	}
	var got []string
	for _, r := range m.Rows {
		got = append(got, r.Label())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rows = %v; want %v", got, want)
	}
	if !slices.Equal(m.Checks, checkNames()) {
		t.Errorf("Checks = %v; want %v", m.Checks, checkNames())
	}

	cells := map[string]verify.Cell{} // by "strategy/client/check"
	for _, r := range m.Rows {
		if len(r.Cells) != len(m.Checks) {
			t.Fatalf("%s has %d cells; want %d", r.Label(), len(r.Cells), len(m.Checks))
		}
		for i, c := range r.Cells {
			if c.Check != m.Checks[i] {
				t.Errorf("%s cell %d is %q; want %q", r.Label(), i, c.Check, m.Checks[i])
			}
			cells[r.Label()+"/"+c.Check] = c
			if finding, ok := knownFindings[cellID{r.Strategy, c.Check}]; ok {
				if c.Outcome != finding {
					t.Errorf("%s %s = %s (%s); want the known finding %s: if it is fixed, remove it from knownFindings",
						r.Label(), c.Check, c.Outcome, c.Note, finding)
				}
				continue
			}
			if exp := r.Expected(c.Check, m.Server); !slices.Contains(exp, c.Outcome) {
				t.Errorf("%s %s = %s (%s); want %v", r.Label(), c.Check, c.Outcome, c.Note, exp)
			}
			if c.Outcome != verify.Pass && c.Note == "" {
				t.Errorf("%s %s = %s with no note; want one saying what was seen", r.Label(), c.Check, c.Outcome)
			}
		}
	}
	for _, p := range pinned {
		info, err := strategies.Lookup(p.cell.strategy)
		if err != nil {
			t.Fatalf("pinned cell %v: %v", p.cell, err)
		}
		for _, clientName := range clients.Names {
			if !info.Supports(clientName) {
				continue // its cells there are unsupported, as Expected requires
			}
			label := p.cell.strategy + "/" + clientName + "/" + p.cell.check
			if c := cells[label]; c.Outcome != p.want && !c.TooLate {
				t.Errorf("%s = %s (%s); want %s: %s", label, c.Outcome, c.Note, p.want, p.why)
			}
		}
	}
	// throttled's leak is at its first decision's second gap, which a
	// crash at the first gap alone never reaches.
	if c := cells["throttled/go-redis/"+verify.CheckCrash]; !strings.Contains(c.Note, "gap 2, after SET NX on request 1: key left at") ||
		!strings.Contains(c.Note, "PTTL -1 (no TTL)") {
		t.Errorf("throttled/go-redis crash note = %q; want gap 2, after SET NX, leaving a key with no TTL", c.Note)
	}
	if n := len(m.Wrong()); n != len(knownFindings)*len(clients.Names) {
		t.Errorf("len(Wrong()) = %d; want %d (the known findings)", n, len(knownFindings)*len(clients.Names))
	}
}

// privateTarget is the private server redistest.Start would run, as a
// target that verify.Run starts, and restarts for the restart check.
func privateTarget() topology.Spec {
	return topology.Spec{RedisServer: os.Getenv(redistest.BinaryEnv)}
}

// TestRunExistingServer checks a server rlbench does not manage: the
// server-wide checks are n/a and never run (no SCRIPT FLUSH, no restart),
// the rest are as documented, and nothing outside the prefix is touched.
func TestRunExistingServer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	outside := strings.TrimSuffix(prefix, ":") + "x"
	if err := rdb.Set(ctx, outside, 42, 0).Err(); err != nil {
		t.Fatal(err)
	}
	m, err := verify.Run(ctx, verify.Config{
		Strategies: []string{"lua", "incr-expire"},
		Clients:    []string{"rueidis"},
		Target:     topology.Spec{Addr: srv.Addr()},
		Prefix:     prefix,
	})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if m.Server.Managed {
		t.Errorf("Server.Managed = true for Addr; want false")
	}
	if bad := m.Wrong(); len(bad) > 0 {
		t.Errorf("Wrong() = %+v; want none", bad)
	}
	if len(m.Rows) != 2 {
		t.Fatalf("Run gave %d rows; want 2 (lua and incr-expire on rueidis)", len(m.Rows))
	}
	checked := 0
	for _, r := range m.Rows {
		for _, c := range r.Cells {
			if c.Check == verify.CheckRestart || c.Check == verify.CheckNoscript {
				checked++
			}
			if c.Check == verify.CheckRestart && (c.Outcome != verify.NotApplicable || !strings.Contains(c.Note, "needs the private server")) {
				t.Errorf("%s restart = %s (%s); want n/a, needs the private server", r.Label(), c.Outcome, c.Note)
			}
			if c.Check == verify.CheckNoscript && c.Outcome != verify.NotApplicable {
				t.Errorf("%s noscript = %s (%s); want n/a", r.Label(), c.Outcome, c.Note)
			}
		}
	}
	if checked != 4 {
		t.Errorf("found %d restart and noscript cells; want 4 (2 per row)", checked)
	}
	stats, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stats, "cmdstat_script|flush") {
		t.Errorf("INFO commandstats shows SCRIPT FLUSH on a server rlbench does not manage")
	}
	if v, err := rdb.Get(ctx, outside).Result(); v != "42" || err != nil {
		t.Errorf("GET %s = %q, %v; want 42: keys outside the prefix stay", outside, v, err)
	}
	if n, err := rdb.DBSize(ctx).Result(); n != 1 || err != nil {
		t.Errorf("DBSIZE after Run = %d, %v; want 1 (the checks' keys deleted)", n, err)
	}
}

// logFunc is an io.Writer that calls itself with each line Run logs.
type logFunc func(line string)

func (f logFunc) Write(p []byte) (int, error) {
	f(string(p))
	return len(p), nil
}

// TestRunInterrupted cancels Run while its per-key checks run, as a SIGINT
// does: the checks cut short and those not started are not-run, not FAIL;
// the matrix claims no cell not as documented, and says it is incomplete in
// text and JSON; Run returns the context's error.
func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var once sync.Once
	// The first line is logged just before the checks start; "expiry"
	// alone waits a 2 s window, so 700 ms later the per-key checks are
	// still running and the server-wide ones have not started.
	log := logFunc(func(string) { once.Do(func() { time.AfterFunc(700*time.Millisecond, cancel) }) })
	m, err := verify.Run(ctx, verify.Config{Target: privateTarget(), Prefix: redistest.Prefix(t), Strategies: []string{"naive", "lua"}, Log: log})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v; want %v", err, context.Canceled)
	}
	if m == nil {
		t.Fatal("Run matrix = nil; want the cells seen before the interrupt")
	}
	var text bytes.Buffer
	if err := verify.Text(m)(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("interrupted matrix:\n%s", text.String())

	notRun := 0
	for _, r := range m.Rows {
		for _, c := range r.Cells {
			switch {
			case c.Outcome == verify.Fail:
				t.Errorf("%s %s = FAIL (%s); want not-run for a check the interrupt stopped", r.Label(), c.Check, c.Note)
			case c.Outcome == verify.NotRun:
				notRun++
				if !strings.HasPrefix(c.Note, "interrupted ") {
					t.Errorf("%s %s = not-run with note %q; want it to say it was interrupted", r.Label(), c.Check, c.Note)
				}
			case c.Check == verify.CheckNoscript || c.Check == verify.CheckRestart:
				t.Errorf("%s %s = %s (%s); want not-run: the server-wide checks start after the interrupt", r.Label(), c.Check, c.Outcome, c.Note)
			}
		}
	}
	if notRun == 0 || m.Complete() || m.NotRunCells() != notRun {
		t.Errorf("%d not-run cells, Complete() = %t, NotRunCells() = %d; want some, false, %d", notRun, m.Complete(), m.NotRunCells(), notRun)
	}
	if bad := m.Wrong(); len(bad) > 0 {
		t.Errorf("Wrong() = %+v; want none: cells that did not run are not failures", bad)
	}
	if m.AsDocumented() {
		t.Errorf("AsDocumented() = true; want false for an interrupted matrix")
	}
	for _, want := range []string{"not-run", "INTERRUPTED: "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	for _, unwanted := range []string{"FAIL", "NOT AS DOCUMENTED", "*"} {
		if strings.Contains(text.String(), unwanted) {
			t.Errorf("text report contains %q; want no cell claimed to fail", unwanted)
		}
	}

	var buf bytes.Buffer
	if err := verify.JSON(m)(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		AsDocumented *bool `json:"as_documented"`
		Interrupted  bool  `json:"interrupted"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("JSON report does not parse: %v", err)
	}
	if doc.AsDocumented != nil || !doc.Interrupted {
		t.Errorf("JSON as_documented = %v, interrupted = %t; want null, true", doc.AsDocumented, doc.Interrupted)
	}
}

func TestRunBadInput(t *testing.T) {
	t.Parallel()
	closed := porttest.Refused(t)

	tests := []struct {
		name      string
		cfg       verify.Config
		wantField string
		wantErr   error // matched with errors.Is; nil to skip
	}{
		{"unknown strategy", verify.Config{Strategies: []string{"lua", "nope"}}, "Strategies", strategies.ErrUnknownStrategy},
		{"unknown client", verify.Config{Clients: []string{"nope"}}, "Clients", clients.ErrUnknownClient},
		{"negative limit", verify.Config{Limit: -1}, "Limit", strategies.ErrInvalidLimit},
		{"one-second window", verify.Config{Window: 1}, "Window", verify.ErrInvalidWindow},
		{"one worker", verify.Config{Workers: 1}, "Workers", verify.ErrInvalidWorkers},
		{"negative db", verify.Config{Target: topology.Spec{Addr: closed, Login: connection.Settings{DB: -1}}}, "Target.Login.DB", verify.ErrInvalidDB},
		{"two kinds of target", verify.Config{Target: topology.Spec{Addr: closed, ManagedCluster: "3"}}, "Target.Cluster", nil},
		{"unreachable address", verify.Config{Target: topology.Spec{Addr: closed}}, "Target.Addr", nil},
		{"missing binary", verify.Config{Target: topology.Spec{RedisServer: "/nonexistent/redis-server"}}, "Target.RedisServer", redisserver.ErrNotFound},
		{"TLS without an address", verify.Config{Target: topology.Spec{Login: connection.Settings{TLS: &connection.TLSFiles{}}}}, "Target.Login.TLS", verify.ErrTLSWithoutAddr},
		{"a cluster with a db", verify.Config{Target: topology.Spec{ManagedCluster: "3", Login: connection.Settings{DB: 1}}}, "Target.Login.DB", clients.ErrClusterDB},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := verify.Run(t.Context(), tc.cfg)
			uerr, ok := errors.AsType[*verify.UsageError](err)
			if !ok {
				t.Fatalf("Run(%+v) = %v, %v; want a *UsageError", tc.cfg, m, err)
			}
			if uerr.Field != tc.wantField {
				t.Errorf("Run(%+v) error field = %q (%v); want %q", tc.cfg, uerr.Field, err, tc.wantField)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("Run(%+v) error = %v; want %v", tc.cfg, err, tc.wantErr)
			}
			if m != nil {
				t.Errorf("Run(%+v) matrix = %+v; want nil on bad input", tc.cfg, m)
			}
		})
	}
}

func checkNames() []string {
	var names []string
	for _, c := range verify.Checks() {
		names = append(names, c.Name)
	}
	return names
}

// TestRunDeletesFunctionLibrary is issue 21, item 8: verify of the
// function strategy left library rlbench on the server and never said so.
// The client that loaded it deletes it, each row says so, and another
// tenant's library is left alone.
func TestRunDeletesFunctionLibrary(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	const tenant = "#!lua name=tenant\nredis.register_function('tenant_fn', function(keys, args) return 1 end)\n"
	if err := rdb.FunctionLoad(ctx, tenant).Err(); err != nil {
		t.Fatal(err)
	}
	var log syncLog
	m, err := verify.Run(ctx, verify.Config{
		Strategies: []string{"function"},
		Clients:    clients.Names,
		Target:     topology.Spec{Addr: srv.Addr()},
		Prefix:     redistest.Prefix(t),
		Log:        &log,
	})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if bad := m.Wrong(); len(bad) > 0 {
		t.Errorf("Wrong() = %+v; want none", bad)
	}
	deleted := 0
	for _, r := range m.Rows {
		for _, l := range r.Libraries {
			if l.Name != strategies.FunctionLibrary || l.Loaded != l.Deleted {
				t.Errorf("%s: library %+v; want rlbench's, deleted when it was loaded", r.Label(), l)
			}
			if l.Deleted {
				deleted++
			}
		}
	}
	if deleted == 0 || !strings.Contains(log.String(), "library rlbench: loaded by rlbench, deleted at the end") {
		t.Errorf("no row says it deleted library rlbench (rows %+v)\nlog:\n%s", m.Rows, log.String())
	}
	libs, err := rdb.FunctionList(ctx, redis.FunctionListQuery{WithCode: true}).Result()
	if err != nil || len(libs) != 1 || libs[0].Name != "tenant" || libs[0].Code != tenant {
		t.Errorf("FUNCTION LIST after verify = %+v, %v; want only the tenant's library, untouched", libs, err)
	}
}

// syncLog is a log safe for Run's rows to write at once.
type syncLog = proctest.Buffer

package verify

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/strategies"
)

// TestRowUnsupported checks that a strategy the server's version cannot run
// fills its row with unsupported and the reason, without connecting.
func TestRowUnsupported(t *testing.T) {
	t.Parallel()
	info, err := strategies.Lookup("multi-nx")
	if err != nil {
		t.Fatal(err)
	}
	server := Server{Addr: "127.0.0.1:1", Name: "redis", Version: "6.2.16", RedisVersion: "6.2.16", Managed: true}
	r := newRow(Config{}.withDefaults(), info, "go-redis", server, nil, nil)
	r.run(t.Context(), false)
	r.run(t.Context(), true)
	const note = "multi-nx needs Redis >= 7.0.0; server is redis 6.2.16"
	for i, c := range r.cells {
		if c.Check != allChecks[i].Name || c.Outcome != Unsupported || c.Note != note {
			t.Errorf("cell %d = %+v; want {Check:%s Outcome:unsupported Note:%s}", i, c, allChecks[i].Name, note)
		}
	}
}

// TestRowUnsupportedClient checks that a strategy that names the clients
// it runs on is unsupported on the others, without connecting.
func TestRowUnsupportedClient(t *testing.T) {
	t.Parallel()
	info, err := strategies.Lookup("lua")
	if err != nil {
		t.Fatal(err)
	}
	server := Server{Addr: "127.0.0.1:1", Name: "redis", Version: "7.0.15", RedisVersion: "7.0.15", Managed: true}
	r := newRow(Config{}.withDefaults(), info, "rueidis", server, nil, nil)
	r.info.Clients = []string{"go-redis"} // as a strategies.Info.Clients would set it
	r.run(t.Context(), false)
	r.run(t.Context(), true)
	const note = "lua runs only on go-redis"
	for i, c := range r.cells {
		if c.Check != allChecks[i].Name || c.Outcome != Unsupported || c.Note != note {
			t.Errorf("cell %d = %+v; want {Check:%s Outcome:unsupported Note:%s}", i, c, allChecks[i].Name, note)
		}
	}
	row := Row{Strategy: "lua", Client: "rueidis", Info: r.info, Cells: r.cells}
	m := &Matrix{Server: server, Checks: checkNames(), Rows: []Row{row}}
	if bad := m.Wrong(); len(bad) > 0 {
		t.Errorf("Wrong() = %+v; want none: unsupported is documented on a client the strategy does not list", bad)
	}
}

// TestRowCancelled checks that a row whose context has ended before its
// checks start is all not-run, not FAIL, without connecting.
func TestRowCancelled(t *testing.T) {
	t.Parallel()
	info, err := strategies.Lookup("lua")
	if err != nil {
		t.Fatal(err)
	}
	server := Server{Addr: "127.0.0.1:1", Name: "redis", Version: "7.0.15", RedisVersion: "7.0.15", Managed: true}
	r := newRow(Config{}.withDefaults(), info, "go-redis", server, nil, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r.run(ctx, false)
	r.run(ctx, true)
	const note = "interrupted before it started: context canceled"
	for i, c := range r.cells {
		if c.Check != allChecks[i].Name || c.Outcome != NotRun || c.Note != note {
			t.Errorf("cell %d = %+v; want {Check:%s Outcome:not-run Note:%s}", i, c, allChecks[i].Name, note)
		}
	}
}

// TestChecksRegistered checks what each check file registers: every check
// once, in column order, with a one-line doc, and only the checks that act
// on the whole server marked server-wide.
func TestChecksRegistered(t *testing.T) {
	t.Parallel()
	serverWide := []string{CheckNoscript, CheckRestart, CheckSplitBrain}
	if got := checkNames(); !slices.Equal(got, columns) {
		t.Errorf("checkNames() = %v; want the columns %v", got, columns)
	}
	for _, c := range allChecks {
		if c.Doc == "" || strings.Contains(c.Doc, "\n") {
			t.Errorf("check %s Doc = %q; want one line", c.Name, c.Doc)
		}
		if want := slices.Contains(serverWide, c.Name); c.ServerWide != want {
			t.Errorf("check %s ServerWide = %t; want %t", c.Name, c.ServerWide, want)
		}
	}
}

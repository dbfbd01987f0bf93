package verify_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/golden"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/verify"
)

// The Info of strategies like the seeds', written out so that
// these tests do not change when a strategy's documentation does.
var (
	naiveProps = strategies.Info{FixedWindow: true, MinRedis: "6.2.0", Commands: "GET; SET EXAT (when missing); INCR"}
	multiProps = strategies.Info{Atomic: true, Heals: true, FixedWindow: true, MinRedis: "7.0.0", Commands: "MULTI; INCR; EXPIRE NX; EXEC"}
	luaProps   = strategies.Info{Atomic: true, FixedWindow: true, EVALSHA: true, MinRedis: "2.6.0", Commands: "EVALSHA (EVAL on NOSCRIPT)"}
	gcraProps  = strategies.Info{Atomic: true, EVALSHA: true, MinRedis: "3.2.0", Commands: "EVALSHA (EVAL on NOSCRIPT)"}
	// A user sequence that claims nothing: checked as a fixed window.
	userProps = strategies.Info{FixedWindow: true, MinRedis: "2.6.0", Commands: "INCRBY {key} 1 | EXPIRE {key} {window}", ChangesWrongType: true, Source: "--sequence"}
	// bucket4j's and spring-gateway's: no TTL by design; state beside K.
	noTTLProps  = strategies.Info{MinRedis: "2.6.12", Commands: "GET; EVAL", NoTTL: true}
	besideProps = strategies.Info{Atomic: true, EVALSHA: true, MinRedis: "3.2.0", Commands: "EVALSHA (EVAL on NOSCRIPT)", KeysBeside: true, TTLWindows: 2}
	private7    = verify.Server{Addr: "127.0.0.1:40123", Name: "redis", Version: "7.0.15", RedisVersion: "7.0.15", Managed: true}
	external6   = verify.Server{Addr: "10.0.0.5:6379", Name: "redis", Version: "6.2.16", RedisVersion: "6.2.16"}
)

func TestExpected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		check  string
		props  strategies.Info
		server verify.Server
		want   []verify.Outcome
	}{
		{"version too low", verify.CheckFirst, multiProps, external6, []verify.Outcome{verify.Unsupported}},
		{"version too low for any check", verify.CheckRestart, multiProps, external6, []verify.Outcome{verify.Unsupported}},
		{"plain check", verify.CheckRepeated, naiveProps, private7, []verify.Outcome{verify.Pass}},
		{"wrong type for every strategy", verify.CheckWrongType, naiveProps, private7, []verify.Outcome{verify.Pass}},
		{"window not extended, fixed window", verify.CheckNotExtended, luaProps, private7, []verify.Outcome{verify.Pass}},
		{"window not extended, no fixed window", verify.CheckNotExtended, gcraProps, private7, []verify.Outcome{verify.NotApplicable}},
		{"atomic under concurrency", verify.CheckConcurrent, luaProps, private7, []verify.Outcome{verify.Pass}},
		{"non-atomic under concurrency", verify.CheckConcurrent, naiveProps, private7, []verify.Outcome{verify.Pass, verify.Leaks}},
		{"non-atomic crash", verify.CheckCrash, naiveProps, private7, []verify.Outcome{verify.Pass, verify.Leaks}},
		{"atomic race", verify.CheckRace, multiProps, private7, []verify.Outcome{verify.Pass}},
		{"healing", verify.CheckHealing, multiProps, private7, []verify.Outcome{verify.Pass}},
		{"no healing", verify.CheckHealing, luaProps, private7, []verify.Outcome{verify.Leaks}},
		{"no healing, non-atomic", verify.CheckHealing, naiveProps, private7, []verify.Outcome{verify.Leaks}},
		{"healing, no fixed window", verify.CheckHealing, gcraProps, private7, []verify.Outcome{verify.NotApplicable}},
		{"noscript with EVALSHA", verify.CheckNoscript, luaProps, private7, []verify.Outcome{verify.Pass}},
		{"noscript without EVALSHA", verify.CheckNoscript, multiProps, private7, []verify.Outcome{verify.NotApplicable}},
		{"noscript on a server not managed", verify.CheckNoscript, luaProps, verify.Server{RedisVersion: "7.0.15"}, []verify.Outcome{verify.NotApplicable}},
		{"restart on the private server", verify.CheckRestart, naiveProps, private7, []verify.Outcome{verify.Pass}},
		{"restart on a server not managed", verify.CheckRestart, naiveProps, external6, []verify.Outcome{verify.NotApplicable}},
		{"no TTL by design: first", verify.CheckFirst, noTTLProps, private7, []verify.Outcome{verify.Leaks}},
		{"no TTL by design: expiry", verify.CheckExpiry, noTTLProps, private7, []verify.Outcome{verify.Leaks}},
		{"no TTL by design: restart", verify.CheckRestart, noTTLProps, private7, []verify.Outcome{verify.Leaks}},
		{"no TTL by design: wrong type", verify.CheckWrongType, noTTLProps, private7, []verify.Outcome{verify.Pass}},
		{"state beside the key: first", verify.CheckFirst, besideProps, private7, []verify.Outcome{verify.Pass}},
		{"state beside the key: wrong type", verify.CheckWrongType, besideProps, private7, []verify.Outcome{verify.NotApplicable}},
		{"state beside the key: race", verify.CheckRace, besideProps, private7, []verify.Outcome{verify.NotApplicable}},
		{"retry, fixed window, no client named", verify.CheckRetry, luaProps, external6, []verify.Outcome{verify.Pass, verify.Leaks}},
		{"retry, no fixed window", verify.CheckRetry, gcraProps, private7, []verify.Outcome{verify.NotApplicable}},
		{"unknown check", "nope", luaProps, private7, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := verify.Expected(tc.check, tc.props, tc.server); !slices.Equal(got, tc.want) {
				t.Errorf("Expected(%q, %+v, %s) = %v; want %v", tc.check, tc.props, tc.server.Version, got, tc.want)
			}
		})
	}
}

// TestExpectedOn: the retry check's outcome depends on the client: go-redis
// sends a write again after its reply was lost (leaks) but not a MULTI/EXEC
// transaction; rueidis, valkey-go and redigo do not.
func TestExpectedOn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		client string
		props  strategies.Info
		want   verify.Outcome
	}{
		{"go-redis", luaProps, verify.Leaks},
		{"go-redis", naiveProps, verify.Leaks},
		{"go-redis", multiProps, verify.Pass},
		{"rueidis", luaProps, verify.Pass},
		{"valkey-go", naiveProps, verify.Pass},
		{"redigo", luaProps, verify.Pass},
	}
	for _, tc := range tests {
		got := verify.ExpectedOn(verify.CheckRetry, tc.client, tc.props, private7)
		if !slices.Equal(got, []verify.Outcome{tc.want}) {
			t.Errorf("ExpectedOn(retry, %s, %s) = %v; want [%s]", tc.client, tc.props.Commands, got, tc.want)
		}
	}
}

// row builds a row with every check's expected outcome (the first one
// listed) and a note on each non-pass cell, then applies set.
func row(strategy, client string, p strategies.Info, s verify.Server, set map[string]verify.Cell) verify.Row {
	r := verify.Row{Strategy: strategy, Client: client, Info: p}
	for _, c := range verify.Checks() {
		cell := verify.Cell{Check: c.Name, Outcome: r.Expected(c.Name, s)[0]}
		if cell.Outcome != verify.Pass {
			cell.Note = "as documented"
		}
		if s, ok := set[c.Name]; ok {
			s.Check = c.Name
			cell = s
		}
		r.Cells = append(r.Cells, cell)
	}
	return r
}

// every sets every check to c.
func every(c verify.Cell) map[string]verify.Cell {
	set := map[string]verify.Cell{}
	for _, name := range checkNames() {
		set[name] = c
	}
	return set
}

func matrix(s verify.Server, rows ...verify.Row) *verify.Matrix {
	return &verify.Matrix{
		Tool:     "rlbench verify",
		Started:  time.Date(2026, 11, 29, 19, 40, 0, 0, time.UTC),
		ElapsedS: 7.5,
		Server:   s,
		Prefix:   "rlbench-verify:20261129T194000-1a2b3c4d:",
		Limit:    5,
		Window:   2,
		Workers:  50,
		Checks:   checkNames(),
		Rows:     rows,
	}
}

func TestUnexpected(t *testing.T) {
	t.Parallel()
	leaks := verify.Cell{Outcome: verify.Leaks, Note: "counter stays immortal (n never 1 again)"}
	tests := []struct {
		name string
		m    *verify.Matrix
		want []string // "row check" of each mismatch
	}{
		{
			name: "every cell as documented",
			m: matrix(private7,
				row("lua", "go-redis", luaProps, private7, map[string]verify.Cell{verify.CheckHealing: leaks}),
				row("naive", "rueidis", naiveProps, private7, map[string]verify.Cell{verify.CheckRace: {Outcome: verify.Leaks, Note: "x"}})),
		},
		{
			name: "pass where leaks is documented",
			m: matrix(private7,
				row("lua", "go-redis", luaProps, private7, map[string]verify.Cell{verify.CheckHealing: {Outcome: verify.Pass}})),
			want: []string{"lua/go-redis healing"},
		},
		{
			name: "leaks where the strategy is atomic",
			m: matrix(private7,
				row("multi-nx", "rueidis", multiProps, private7, map[string]verify.Cell{verify.CheckCrash: {Outcome: verify.Leaks, Note: "x"}})),
			want: []string{"multi-nx/rueidis crash"},
		},
		{
			name: "FAIL is never documented",
			m: matrix(private7,
				row("naive", "go-redis", naiveProps, private7, map[string]verify.Cell{verify.CheckConcurrent: {Outcome: verify.Fail, Note: "x"}})),
			want: []string{"naive/go-redis concurrent"},
		},
		{
			name: "leaks of a user strategy, which no claim excuses",
			m: matrix(private7,
				row("mine", "go-redis", userProps, private7, map[string]verify.Cell{
					verify.CheckHealing: {Outcome: verify.Leaks, Note: "x"}, verify.CheckRace: {Outcome: verify.Leaks, Note: "x"},
				})),
			want: []string{"mine/go-redis race", "mine/go-redis healing"},
		},
		{
			// retry's leak is go-redis', wrong-type's read from the commands.
			name: "leaks of a user strategy that are not its claims'",
			m: matrix(private7,
				row("mine", "go-redis", userProps, private7, map[string]verify.Cell{
					verify.CheckRetry: {Outcome: verify.Leaks, Note: "x"}, verify.CheckWrongType: {Outcome: verify.Leaks, Note: "x"},
				})),
		},
		{
			name: "pass where the server cannot run the strategy",
			m: matrix(external6,
				row("multi-nx", "go-redis", multiProps, external6, map[string]verify.Cell{verify.CheckFirst: {Outcome: verify.Pass}})),
			want: []string{"multi-nx/go-redis first"},
		},
		{
			name: "a check run where it does not apply",
			m: matrix(private7,
				row("gcra", "go-redis", gcraProps, private7, map[string]verify.Cell{verify.CheckNotExtended: {Outcome: verify.Pass}})),
			want: []string{"gcra/go-redis not-extended"},
		},
		{
			name: "an unknown check",
			m: func() *verify.Matrix {
				m := matrix(private7, row("lua", "go-redis", luaProps, private7, nil))
				m.Rows[0].Cells = append(m.Rows[0].Cells, verify.Cell{Check: "nope", Outcome: verify.Pass})
				return m
			}(),
			want: []string{"lua/go-redis nope"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, u := range tc.m.Unexpected() {
				got = append(got, u.Row+" "+u.Cell.Check)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Unexpected() = %v; want %v", got, tc.want)
			}
			if ok := tc.m.AsDocumented(); ok != (len(tc.want) == 0) {
				t.Errorf("AsDocumented() = %t; want %t", ok, len(tc.want) == 0)
			}
			var text bytes.Buffer
			if err := verify.Text(tc.m)(&text); err != nil {
				t.Fatal(err)
			}
			if marked := strings.Contains(text.String(), "*"); marked != (len(tc.want) > 0) {
				t.Errorf("Text marks a cell with *: %t; want %t\n%s", marked, len(tc.want) > 0, text.String())
			}
		})
	}
}

// goldenMatrix has a row of each kind: a broken seed, an unsupported
// strategy, one with a cell not as documented, and one that is not a fixed
// window, on a private server.
func goldenMatrix() *verify.Matrix {
	s := verify.Server{Addr: "127.0.0.1:40123", Name: "redis", Version: "6.2.16", RedisVersion: "6.2.16", Managed: true}
	return matrix(s,
		row("naive", "go-redis", naiveProps, s, map[string]verify.Cell{
			verify.CheckConcurrent: {Outcome: verify.Leaks, Note: "admitted 23 of limit 5 (150 requests from 50 workers on one key)"},
			verify.CheckRace:       {Outcome: verify.Leaks, Note: "key expired while paused after GET on request 2 (1.5s); the write recreated it at 1 with no TTL"},
			verify.CheckHealing:    {Outcome: verify.Leaks, Note: "counter stays immortal (n never 1 again)"},
			verify.CheckNoscript:   {Outcome: verify.NotApplicable, Note: "sends no EVALSHA: no script to lose"},
			verify.CheckRestart:    {Outcome: verify.Pass, Note: "restarted in 100ms; 3 of 40 decisions during it errored"},
		}),
		row("multi-nx", "go-redis", multiProps, s, every(verify.Cell{Outcome: verify.Unsupported, Note: "multi-nx needs Redis >= 7.0.0; server is redis 6.2.16"})),
		row("lua", "go-redis", luaProps, s, map[string]verify.Cell{
			verify.CheckHealing:  {Outcome: verify.Pass},
			verify.CheckNoscript: {Outcome: verify.Pass, Note: "1 fallback to EVAL after SCRIPT FLUSH"},
			verify.CheckRestart:  {Outcome: verify.Fail, Note: "no decision succeeded in the 10s after it"},
		}),
		row("lua", "rueidis", luaProps, s, map[string]verify.Cell{
			verify.CheckHealing:  {Outcome: verify.Leaks, Note: "counter stays immortal (n never 1 again)"},
			verify.CheckNoscript: {Outcome: verify.Pass, Note: "1 fallback to EVAL after SCRIPT FLUSH"},
		}),
		row("gcra", "go-redis", gcraProps, s, map[string]verify.Cell{
			verify.CheckNotExtended: {Outcome: verify.NotApplicable, Note: "not a fixed-window strategy"},
			verify.CheckHealing:     {Outcome: verify.NotApplicable, Note: "not a fixed-window counter: no counter to heal"},
			verify.CheckNoscript:    {Outcome: verify.Pass, Note: "1 fallback to EVAL after SCRIPT FLUSH"},
		}),
	)
}

// interruptedMatrix is a matrix Run stopped during its per-key checks: a
// row with a cell not as documented before the interrupt, then cells cut
// short and cells never started.
func interruptedMatrix() *verify.Matrix {
	s := verify.Server{Addr: "127.0.0.1:40123", Name: "redis", Version: "7.0.15", RedisVersion: "7.0.15", Managed: true}
	cut := verify.Cell{Outcome: verify.NotRun, Note: "interrupted while it ran: context canceled"}
	never := verify.Cell{Outcome: verify.NotRun, Note: "interrupted before it started: context canceled"}
	notStarted := func(set map[string]verify.Cell, from int) map[string]verify.Cell {
		for _, name := range checkNames()[from:] {
			if _, ok := set[name]; !ok {
				set[name] = never
			}
		}
		return set
	}
	return matrix(s,
		row("naive", "go-redis", naiveProps, s, notStarted(map[string]verify.Cell{verify.CheckExpiry: cut}, 2)),
		row("lua", "go-redis", luaProps, s, notStarted(map[string]verify.Cell{
			verify.CheckRepeated: {Outcome: verify.Fail, Note: "request 6 allowed (count 6); want exactly 5 allowed, then rejected"},
			verify.CheckExpiry:   cut,
		}, 2)),
		row("lua", "rueidis", luaProps, s, every(never)),
	)
}

func TestReportersGolden(t *testing.T) {
	t.Parallel()
	text := func(m *verify.Matrix) func(*bytes.Buffer) error {
		return func(b *bytes.Buffer) error { return verify.Text(m)(b) }
	}
	jsonReport := func(m *verify.Matrix) func(*bytes.Buffer) error {
		return func(b *bytes.Buffer) error { return verify.JSON(m)(b) }
	}
	tests := []struct {
		name   string
		golden string
		m      *verify.Matrix
		report func(*verify.Matrix) func(w *bytes.Buffer) error
	}{
		{"text", "matrix.txt", goldenMatrix(), text},
		{"json", "matrix.json", goldenMatrix(), jsonReport},
		// Not-run cells are neither marked nor counted as not as
		// documented; a last line says how many did not run.
		{"interrupted text", "interrupted.txt", interruptedMatrix(), text},
		// Not-run cells have as_documented null; the matrix has
		// "interrupted": true and as_documented false (a cell that ran is
		// not as documented).
		{"interrupted json", "interrupted.json", interruptedMatrix(), jsonReport},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got bytes.Buffer
			if err := tc.report(tc.m)(&got); err != nil {
				t.Fatalf("%s report error: %v", tc.name, err)
			}
			golden.Check(t, tc.golden, got.Bytes())
		})
	}
}

// TestJSONFields checks what JSON adds to the matrix: each cell's
// documented outcomes and verdict, and the matrix's.
func TestJSONFields(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := verify.JSON(goldenMatrix())(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		AsDocumented bool `json:"as_documented"`
		Rows         []struct {
			Strategy string `json:"strategy"`
			Client   string `json:"client"`
			Cells    []struct {
				Check        string           `json:"check"`
				Outcome      verify.Outcome   `json:"outcome"`
				Expected     []verify.Outcome `json:"expected"`
				AsDocumented bool             `json:"as_documented"`
			} `json:"cells"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("JSON output does not parse: %v", err)
	}
	if doc.AsDocumented {
		t.Errorf("as_documented = true; want false (lua/go-redis has two cells not as documented)")
	}
	var bad []string
	for _, r := range doc.Rows {
		for _, c := range r.Cells {
			if !c.AsDocumented {
				bad = append(bad, r.Strategy+"/"+r.Client+" "+c.Check+" "+string(c.Outcome)+" expected "+strings.Join(outcomes(c.Expected), "|"))
			}
		}
	}
	want := []string{"lua/go-redis healing pass expected leaks", "lua/go-redis restart FAIL expected pass"}
	if !slices.Equal(bad, want) {
		t.Errorf("cells with as_documented false = %v; want %v", bad, want)
	}
}

func outcomes(list []verify.Outcome) []string {
	s := make([]string, len(list))
	for i, o := range list {
		s[i] = string(o)
	}
	return s
}

// TestVerdictNamesLeaks checks the verdict line: a matrix as documented
// names the cells that leak as documented, row by row, and a long list of
// them is counted, naming their strategies.
func TestVerdictNamesLeaks(t *testing.T) {
	t.Parallel()
	verdict := func(m *verify.Matrix) string {
		var text bytes.Buffer
		if err := verify.Text(m)(&text); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(text.String()), "\n")
		return lines[len(lines)-1]
	}
	short := matrix(private7, row("lua", "rueidis", luaProps, private7, nil))
	if got, want := verdict(short), "every cell is as documented (1 rows x 13 checks), but lua/rueidis leaks under healing, as documented."; got != want {
		t.Errorf("verdict = %q; want %q", got, want)
	}
	var rows []verify.Row
	for i := range 12 {
		rows = append(rows, row(fmt.Sprintf("seed-%d", i), "rueidis", luaProps, private7, nil))
	}
	long := matrix(private7, append(rows, row("gcra", "rueidis", gcraProps, private7, nil))...) // not every row leaks
	if got, want := verdict(long), "but 12 cells of 12 strategies leak (the notes say under which checks): seed-0, seed-1,"; !strings.Contains(got, want) || !strings.HasSuffix(got, "seed-11, as documented.") {
		t.Errorf("verdict = %q; want it to contain %q and end with the last strategy", got, want)
	}
}

// TestInfoEVALSHA checks the fact the noscript check reads of every
// registered strategy: Info.EVALSHA is set exactly where its commands
// start with EVALSHA (a script that meets NOSCRIPT once the cache is
// flushed). A strategy registered without it would be expected n/a on
// noscript and pass it with "sends EVALSHA though its commands do not say
// so".
func TestInfoEVALSHA(t *testing.T) {
	t.Parallel()
	for _, name := range strategies.BuiltinNames() {
		info, err := strategies.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.HasPrefix(info.Commands, "EVALSHA"); info.EVALSHA != want {
			t.Errorf("%s: Info.EVALSHA = %t; want %t for commands %q", name, info.EVALSHA, want, info.Commands)
		}
	}
}

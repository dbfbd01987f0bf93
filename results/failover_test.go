package results

import (
	"errors"
	"strings"
	"testing"
)

func TestFailoverAdd(t *testing.T) {
	t.Parallel()
	a := Failover{
		FailoverRecovery: &FailoverRecovery{FailedDecisions: 10, FirstFailureS: 5, LastFailureS: 5.5, RecoveryS: 0.1, FailingS: 0.6, ClientsSwitchedS: 1.2, ScriptFallbacks: 2},
		LostIncrements:   &LostIncrements{Master: "m:1", ReadAtS: 7, KeysCompared: 100, Keys: 40, Increments: 400, MaxPerKey: 20, Phantom: 1, Unacknowledged: 1, OverAdmitted: 3, OverAdmittedKeys: 1},
	}
	b := Failover{
		FailoverRecovery: &FailoverRecovery{FailedDecisions: 4, FirstFailureS: 4.9, LastFailureS: 6, RecoveryS: 0.05, FailingS: -1, ClientsSwitchedS: 1.5, ScriptFallbacks: 1},
		LostIncrements:   &LostIncrements{Master: "m:1", ReadAtS: 7.2, KeysCompared: 100, Keys: 60, Increments: 500, MaxPerKey: 15, Unacknowledged: 2, Phantom: 2},
	}
	tests := []struct {
		name string
		a, b Failover
		want Failover
	}{
		{name: "neither", want: Failover{}},
		{name: "one side only", a: a, want: a},
		{
			name: "both", a: a, b: b,
			want: Failover{
				// -1 (failures that never ended) wins; the rest add up or take the worst.
				FailoverRecovery: &FailoverRecovery{FailedDecisions: 14, FirstFailureS: 4.9, LastFailureS: 6, RecoveryS: 0.1, FailingS: -1, ClientsSwitchedS: 1.5, ScriptFallbacks: 3},
				LostIncrements:   &LostIncrements{Master: "m:1", ReadAtS: 7.2, KeysCompared: 200, Keys: 100, Increments: 900, MaxPerKey: 20, Unacknowledged: 3, Phantom: 3, OverAdmitted: 3, OverAdmittedKeys: 1},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.a
			got.Add(tc.b)
			if !equalFailover(got, tc.want) {
				t.Errorf("Add = %s; want %s", got.Text("x"), tc.want.Text("x"))
			}
		})
	}
	// Add copies: the parts are not changed through the sum.
	sum := Failover{}
	sum.Add(a)
	sum.FailoverRecovery.FailedDecisions++
	if a.FailoverRecovery.FailedDecisions != 10 {
		t.Errorf("Add shares its operand's FailoverRecovery; want a copy")
	}
}

func equalFailover(a, b Failover) bool {
	eq := func(x, y *FailoverRecovery) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqL := func(x, y *LostIncrements) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return eq(a.FailoverRecovery, b.FailoverRecovery) && eqL(a.LostIncrements, b.LostIncrements)
}

func TestFailoverText(t *testing.T) {
	t.Parallel()
	f := Failover{
		FailoverRecovery: &FailoverRecovery{ClientsSwitchedS: 1.25, ScriptFallbacks: 1},
		LostIncrements:   &LostIncrements{Master: "127.0.0.1:7001", ReadAtS: 6.5, KeysCompared: 10, Keys: 3, Increments: 7, MaxPerKey: 4},
	}
	want := "lua/go-redis failover: clients on the new master 1.25s after it began; no decision failed; 1 NOSCRIPT fallbacks after it\n" +
		"lua/go-redis lost increments: 7 on 3 of 10 keys (at most 4 on one key), counters read on 127.0.0.1:7001 at 6.50s; 0 phantom (unacknowledged); over the limit: 0 requests on 0 keys\n"
	if got := f.Text("lua/go-redis"); got != want {
		t.Errorf("Text =\n%s; want\n%s", got, want)
	}
	if got := (Failover{}).Text("x"); got != "" {
		t.Errorf("Text of no failover = %q; want \"\"", got)
	}
	f.LostIncrements = &LostIncrements{Error: "the strategy keeps no increment-first counter"}
	if got := f.Text("gcra/go-redis"); !strings.Contains(got, "gcra/go-redis lost increments: not measured: the strategy") {
		t.Errorf("Text = %q; want it to say the lost increments were not measured", got)
	}
}

func TestValidateFailover(t *testing.T) {
	t.Parallel()
	for _, f := range []Failover{
		{FailoverRecovery: &FailoverRecovery{RecoveryS: -2}},
		{LostIncrements: &LostIncrements{Keys: 3, KeysCompared: 2}},
		{LostIncrements: &LostIncrements{Increments: -1}},
	} {
		rep := &Report{Runs: []Run{{Failover: f}}}
		if err := Validate(rep); !errors.Is(err, ErrImplausible) {
			t.Errorf("Validate(%s) = %v; want ErrImplausible", f.Text("run"), err)
		}
	}
}

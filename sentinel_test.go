package rlbench_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/workload"
)

// managedSentinel is the target of a private Sentinel set-up with one
// replica.
func managedSentinel() []rlbench.TargetSpec {
	return []rlbench.TargetSpec{{ManagedSentinel: "1", RedisServer: os.Getenv(redistest.BinaryEnv)}}
}

// TestManagedSentinelStrategies runs every built-in strategy on every
// client with Sentinel support (those a strategy supports) against a private Sentinel set-up:
// each cell decides through the master the sentinels name, with no error,
// and the audit, which goes through the sentinels too, finds its keys; a
// counter cell's counts, read there, are exact.
func TestManagedSentinelStrategies(t *testing.T) {
	t.Parallel()
	const keys = 20
	var builtIn []string // not the user strategies other tests register
	want := 0
	for _, name := range strategies.BuiltinNames() {
		info, _ := strategies.Lookup(name)
		if info.Source != "" || info.Layout == strategies.LayoutHashField {
			continue // user strategies; the hash-field ones need Redis 7.4 (TestEveryBuild)
		}
		builtIn = append(builtIn, name)
		// --client all on Sentinel: every client but redigo, which has no
		// Sentinel support (clients.Topologies) and is left out.
		for _, client := range []string{"go-redis", "rueidis", "valkey-go"} {
			if info.Supports(client) {
				want++
			}
		}
	}
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Strategies: builtIn,
		Clients:    []string{"all"},
		Limit:      1_000_000,
		Window:     60,
		Workload:   workload.Config{Workers: 8, Keys: keys, Requests: 400, Prefix: redistest.Prefix(t)},
		Targets:    managedSentinel(),
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if len(rep.Runs) != want {
		t.Fatalf("Run gave %d runs; want %d (every strategy on every client it supports)", len(rep.Runs), want)
	}
	if !rep.Server.Managed || rep.Server.Addr == "" {
		t.Errorf("report server = %+v; want the private master", rep.Server)
	}
	for _, r := range rep.Runs {
		label := r.Strategy + "/" + r.Client
		if r.Decisions != 400 || r.Errors != 0 {
			t.Errorf("%s: decisions %d, errors %d (%v); want 400 and 0", label, r.Decisions, r.Errors, r.ErrorKinds)
		}
		// gcra and token-bucket keys live for well under the window;
		// bucket4j's never get a TTL (Info.NoTTL).
		info, _ := strategies.Lookup(r.Strategy)
		if info.FixedWindow && r.Audit.Keys == 0 || !info.NoTTL && r.Audit.Immortal != 0 || info.NoTTL && r.Audit.Immortal != r.Audit.Keys {
			t.Errorf("%s: audit %+v; want keys (for a fixed window) and none immortal (all, for a strategy that sets no TTL)", label, r.Audit)
		}
		if r.FailoverRecovery != nil {
			t.Errorf("%s: failover recovery %+v without a failover; want none", label, *r.FailoverRecovery)
		}
		// The exact counts of a counter cell, read through the sentinels'
		// master: nothing lost or phantom without a fault.
		if l := r.LostIncrements; l != nil && (l.Increments != 0 || l.Phantom != 0 || l.Error != "" || l.KeysCompared == 0) {
			t.Errorf("%s: lost increments %+v without a fault; want 0 lost and 0 phantom on > 0 keys compared", label, *l)
		}
	}
}

// TestSentinelFailoverMeasured fails a private Sentinel set-up over in the
// middle of a lua load, on each client in turn (the second failover goes
// back to the first master), and checks what the report says of it: the
// clients reached the new master and decided there, the failures (if any)
// ended in a success, the lost increments add up, and the audit after the
// failover went to the new master, where every key is.
func TestSentinelFailoverMeasured(t *testing.T) {
	t.Parallel()
	const keys = 50
	fault := faults.Fault{Kind: faults.SentinelFailover, At: time.Second}
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Strategies: []string{"lua"},
		Clients:    []string{"go-redis", "rueidis"},
		Limit:      1_000_000,
		Window:     60,
		Workload:   workload.Config{Workers: 16, Keys: keys, Duration: 8 * time.Second, Prefix: redistest.Prefix(t)},
		Targets:    managedSentinel(),
		Faults:     []faults.Fault{fault},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("Run gave %d runs; want 2", len(rep.Runs))
	}
	var masters []string
	for _, r := range rep.Runs {
		label := r.Strategy + "/" + r.Client
		if len(r.Faults) != 1 || r.Faults[0].Error != "" || !strings.Contains(r.Faults[0].Detail, "took over from") {
			t.Fatalf("%s: faults %+v; want one failover that succeeded", label, r.Faults)
		}
		checkRecovery(t, label, r, fault)
		l := r.LostIncrements
		if l == nil {
			t.Fatalf("%s: no lost_increments; want them", label)
		}
		if l.Error != "" || l.KeysCompared != keys || l.Keys > l.KeysCompared || l.Increments < l.Keys ||
			l.MaxPerKey > l.Increments || (l.Keys > 0) != (l.MaxPerKey > 0) || l.Unacknowledged < 0 || l.OverAdmitted != 0 {
			t.Errorf("%s: lost increments %+v; want compared = %d keys, lost keys <= that, increments >= lost keys >= 0, no error, none over a limit never reached", label, *l, keys)
		}
		if l.ReadAtS < fault.At.Seconds() {
			t.Errorf("%s: counters read at %.2fs; want after the failover at %s", label, l.ReadAtS, fault.At)
		}
		masters = append(masters, l.Master)
		// The audit follows the master: the keys are all there, and the
		// clean-up (through the same connection) deleted them without a
		// READONLY error.
		if r.Audit.Keys != keys || r.Audit.Immortal != 0 {
			t.Errorf("%s: audit %+v after the failover; want %d keys, none immortal", label, r.Audit, keys)
		}
		if r.Saturation != nil {
			t.Errorf("%s: saturation %+v after a failover; want none (the master changed)", label, *r.Saturation)
		}
		var text strings.Builder
		if err := results.Text(&results.Report{Runs: []results.Run{r}})(&text); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{label + " failover: clients on the new master", label + " lost increments: "} {
			if !strings.Contains(text.String(), want) {
				t.Errorf("%s: text report lacks %q:\n%s", label, want, text.String())
			}
		}
	}
	if len(masters) == 2 && (masters[0] == "" || masters[0] == masters[1] || masters[0] == rep.Server.Addr || masters[1] != rep.Server.Addr) {
		t.Errorf("new masters %q from %s; want the replica, then the first master again", masters, rep.Server.Addr)
	}
}

// checkRecovery checks r's failover recovery: the clients reached the new
// master, decisions succeeded there, and failures, if any, ended.
func checkRecovery(t *testing.T, label string, r results.Run, fault faults.Fault) {
	t.Helper()
	rec := r.FailoverRecovery
	if rec == nil {
		t.Fatalf("%s: no failover_recovery; want one", label)
	}
	if rec.ClientsSwitchedS <= 0 {
		t.Errorf("%s: clients_switched_s = %v; want > 0", label, rec.ClientsSwitchedS)
	}
	if rec.FailedDecisions != r.Errors {
		t.Errorf("%s: failed_decisions = %d; want the run's errors, %d", label, rec.FailedDecisions, r.Errors)
	}
	if rec.FailedDecisions > 0 && (rec.RecoveryS < 0 || rec.FailingS < rec.RecoveryS || rec.FirstFailureS > rec.LastFailureS) {
		t.Errorf("%s: recovery %+v; want failures that ended in a success", label, *rec)
	}
	if r.Client == "go-redis" && rec.ScriptFallbacks == 0 {
		t.Errorf("%s: script_fallbacks_after = 0; want the new master's NOSCRIPT to show", label)
	}
	// Decisions succeeded after the clients switched (a failover that
	// outlasts the load on a loaded machine leaves none to see).
	switched := fault.At.Seconds() + rec.ClientsSwitchedS
	if switched > r.DurationS-1 {
		t.Fatalf("%s: the clients switched at %.2fs (fault: %s), too near the end of the load (%.2fs) to see decisions after", label, switched, r.Faults[0].Detail, r.DurationS)
	}
	if !slices.ContainsFunc(r.PerSecond, func(s results.Second) bool { return s.T-1 >= switched && s.Decisions > s.Errors }) {
		t.Errorf("%s: no whole second after %.2fs with a successful decision: %+v", label, switched, r.PerSecond)
	}
}

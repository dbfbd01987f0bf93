package rlbench_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/workload"
)

// splitBrainRun runs lua on clients against a private Sentinel set-up with
// one replica, with a split brain at 1s for 3s, and min-replicas-to-write
// minReplicas.
func splitBrainRun(t *testing.T, minReplicas int, clients ...string) (*results.Report, faults.Fault) {
	t.Helper()
	fault := faults.Fault{Kind: faults.SplitBrain, At: time.Second, Arg: 3 * time.Second}
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Strategies:  []string{"lua"},
		Clients:     clients,
		Limit:       1_000_000,
		Window:      120,
		Workload:    workload.Config{Workers: 8, Keys: 20, Duration: 6 * time.Second, Prefix: redistest.Prefix(t)},
		Targets:     []rlbench.TargetSpec{{ManagedSentinel: "1", RedisServer: os.Getenv(redistest.BinaryEnv)}},
		Faults:      []faults.Fault{fault},
		MinReplicas: minReplicas,
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run(split brain, min-replicas %d) error: %v", minReplicas, err)
	}
	if len(rep.Runs) != len(clients) {
		t.Fatalf("Run gave %d runs; want %d", len(rep.Runs), len(clients))
	}
	for _, r := range rep.Runs {
		if len(r.Faults) != 1 || r.Faults[0].Error != "" {
			t.Fatalf("%s/%s: faults %+v; want one split brain that succeeded", r.Strategy, r.Client, r.Faults)
		}
		b := r.SplitBrain
		if b == nil {
			t.Fatalf("%s/%s: no split_brain in the report", r.Strategy, r.Client)
		}
		// The set-up heals: the old master rejoined as a replica.
		if b.OldMaster == b.NewMaster || !(b.PromotedS > 0 && b.HealedS >= fault.Arg.Seconds() && b.RejoinedS >= b.HealedS) {
			t.Errorf("%s/%s: split brain %+v; want a new master, healed after %s, the old one rejoined after that", r.Strategy, r.Client, *b, fault.Arg)
		}
	}
	return rep, fault
}

// TestSplitBrain cuts the master of a private Sentinel set-up off from its
// sentinels and replica in the middle of a lua load, on each client in
// turn (the second cell cuts off the first cell's new master): both
// masters take increments, the increments the old master took are found
// lost on the new one, and the set-up heals.
func TestSplitBrain(t *testing.T) {
	t.Parallel()
	rep, _ := splitBrainRun(t, 0, "go-redis", "rueidis")
	for _, r := range rep.Runs {
		label := r.Strategy + "/" + r.Client
		b, l := r.SplitBrain, r.LostIncrements
		if b.OldIncrements == 0 || b.NewIncrements == 0 {
			t.Errorf("%s: split brain %+v; want increments taken by both masters", label, *b)
		}
		if l == nil || l.Error != "" || l.KeysCompared == 0 || l.Increments == 0 {
			t.Fatalf("%s: lost increments %+v; want some found, with no error", label, l)
		}
		// What the old master took after the cut is what the comparison
		// finds lost; the poll of the old master is 20 ms (or more, on a
		// loaded machine) coarse at the cut.
		if l.Increments < b.OldIncrements/2 || l.Increments > 2*b.OldIncrements+1000 {
			t.Errorf("%s: %d increments lost; want about the %d the old master took after the cut", label, l.Increments, b.OldIncrements)
		}
		if r.ErrorKinds["NOREPLICAS"] != 0 {
			t.Errorf("%s: %d NOREPLICAS errors without min-replicas-to-write; want 0", label, r.ErrorKinds["NOREPLICAS"])
		}
		var text strings.Builder
		if err := results.Text(&results.Report{Runs: []results.Run{r}})(&text); err != nil {
			t.Fatal(err)
		}
		if want := label + " split brain: "; !strings.Contains(text.String(), want) {
			t.Errorf("%s: text report lacks %q:\n%s", label, want, text.String())
		}
	}
}

// TestSplitBrainMinReplicas checks what --min-replicas buys in a split
// brain with one replica: the new master, with no replica of its own until
// the old one rejoins, refuses writes (NOREPLICAS), and the old master
// stops taking them within seconds of the cut, so the two never take
// increments at once.
func TestSplitBrainMinReplicas(t *testing.T) {
	t.Parallel()
	rep, _ := splitBrainRun(t, 1, "go-redis")
	r := rep.Runs[0]
	if r.ErrorKinds["NOREPLICAS"] == 0 {
		t.Errorf("error kinds %v; want NOREPLICAS from the masters without a replica", r.ErrorKinds)
	}
	if b := r.SplitBrain; b.BothMastersS != 0 {
		t.Errorf("split brain %+v; want the two masters never to take increments at once", *b)
	}
}

// TestMinReplicasBadInput checks that --min-replicas is refused, naming
// its field, where it cannot apply, before anything starts.
func TestMinReplicasBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cfg    rlbench.Config
		field  string
		substr string
	}{
		{"private server", rlbench.Config{MinReplicas: 1}, "MinReplicas", "--managed-sentinel"},
		{"more than the replicas", rlbench.Config{MinReplicas: 2, Targets: []rlbench.TargetSpec{{ManagedSentinel: "1"}}}, "MinReplicas", "R >= 2"},
		{"negative", rlbench.Config{MinReplicas: -1, Targets: []rlbench.TargetSpec{{ManagedSentinel: "1"}}}, "MinReplicas", ">= 0"},
		{"lag without min-replicas", rlbench.Config{MinReplicasMaxLag: 3, Targets: []rlbench.TargetSpec{{ManagedSentinel: "1"}}}, "MinReplicasMaxLag", "--min-replicas"},
		{"split brain on a private server", rlbench.Config{Faults: []faults.Fault{{Kind: faults.SplitBrain, At: time.Second, Arg: time.Second}}}, "Faults", "--managed-sentinel R, R >= 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.cfg.Workload = workload.Config{Workers: 1, Keys: 1, Duration: 5 * time.Second}
			_, err := rlbench.Run(context.Background(), tc.cfg, rlbench.Options{})
			uerr, ok := errors.AsType[*rlbench.UsageError](err)
			if !ok || uerr.Field != tc.field || !strings.Contains(err.Error(), tc.substr) {
				t.Errorf("Run(%s) = %v; want a usage error of %s containing %q", tc.name, err, tc.field, tc.substr)
			}
		})
	}
}

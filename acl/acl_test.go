package acl

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/strategies"
)

// TestStrategyCommandsMatchInfo keeps strategyCommands in step with the
// registry: every strategy has a list, every command in its Info.Commands
// is in the list, and every command of the list is named there (save
// those the strategy's Info leaves out, listed here).
func TestStrategyCommandsMatchInfo(t *testing.T) {
	t.Parallel()
	// Commands a script sends that its Info.Commands does not name.
	notInInfo := map[string][]string{"token-bucket": {"exists"}}
	known := map[string]bool{}
	for _, cmds := range strategyCommands {
		for _, c := range cmds {
			container, _, _ := strings.Cut(c, "|")
			known[strings.ToUpper(container)] = true
		}
	}
	word := regexp.MustCompile(`[A-Z][A-Z]+`)
	for _, info := range strategies.All() {
		if info.ACLCommands != nil {
			continue // it lists its own (TestSequenceCommands)
		}
		cmds, ok := strategyCommands[info.Name]
		if !ok {
			t.Errorf("strategyCommands[%q] missing: add the commands of %q", info.Name, info.Commands)
			continue
		}
		for _, w := range word.FindAllString(info.Commands, -1) {
			if known[w] && !slices.ContainsFunc(cmds, func(c string) bool { return strings.HasPrefix(strings.ToUpper(c), w) }) {
				t.Errorf("strategyCommands[%q] = %v; lacks %s, named in %q", info.Name, cmds, w, info.Commands)
			}
		}
		for _, c := range cmds {
			container, _, _ := strings.Cut(c, "|")
			if !strings.Contains(info.Commands, strings.ToUpper(container)) && !slices.Contains(notInInfo[info.Name], c) {
				t.Errorf("strategyCommands[%q] has %s, which %q does not name", info.Name, c, info.Commands)
			}
		}
	}
}

func TestEveryCommandHasAProbe(t *testing.T) {
	t.Parallel()
	n := Needs{Strategies: strategies.Names(), Faults: faults.Kinds, Cluster: true, Sentinel: true, DB: 1}
	cmds, err := Commands(n)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		if _, ok := probes[c.Name]; !ok && c.Name != "multi" && c.Name != "exec" {
			t.Errorf("probes[%q] missing: Permitted cannot check it", c.Name)
		}
		if c.Why == "" {
			t.Errorf("Commands(): %s has no Why", c.Name)
		}
	}
	// The published limiters are not registered in this test binary.
	for _, name := range slices.Sorted(maps.Keys(strategyCommands)) {
		for _, c := range strategyCommands[name] {
			if _, ok := probes[c]; !ok && c != "multi" && c != "exec" {
				t.Errorf("probes[%q] (strategy %s) missing: Permitted cannot check it", c, name)
			}
		}
	}
}

func TestCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		n    Needs
		want string
	}{
		{name: "one strategy", n: Needs{Strategies: []string{"lua"}},
			want: "evalsha eval incr expire ttl ping info config|get client|setname scan pttl unlink set get watch exec pexpire del multi command|info"},
		{name: "two strategies share commands", n: Needs{Strategies: []string{"multi-nx", "incr-expire"}},
			want: "multi incr expire exec ping info config|get client|setname scan pttl unlink set get watch pexpire del command|info"},
		{name: "faults, cluster, db", n: Needs{Strategies: []string{"naive"}, Faults: []string{faults.Stall, faults.KillClients, faults.Restart}, Cluster: true, DB: 2},
			want: "get set incr client|pause client|list client|kill cluster|slots cluster|shards select ping info config|get client|setname scan pttl unlink watch exec pexpire del multi command|info"},
		{name: "sentinel", n: Needs{Strategies: []string{"function"}, Faults: []string{faults.ScriptFlush}, Sentinel: true},
			want: "fcall function|list function|load function|delete incr ttl expire script|flush role ping info config|get client|setname scan pttl unlink set get watch exec pexpire del multi command|info"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmds, err := Commands(tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(Names(cmds), " "); got != tc.want {
				t.Errorf("Commands(%+v) = %s; want %s", tc.n, got, tc.want)
			}
		})
	}
	if _, err := Commands(Needs{}); !errors.Is(err, ErrNoStrategy) {
		t.Errorf("Commands(no strategy) = %v; want ErrNoStrategy", err)
	}
	if _, err := Commands(Needs{Strategies: []string{"nope"}}); !errors.Is(err, strategies.ErrUnknownStrategy) {
		t.Errorf("Commands(unknown strategy) = %v; want ErrUnknownStrategy", err)
	}
	if _, err := Commands(Needs{Strategies: []string{"lua"}, Faults: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "accepted: ") {
		t.Errorf("Commands(unknown fault) = %v; want an error listing the kinds", err)
	}
}

func TestSetUser(t *testing.T) {
	t.Parallel()
	cmds := []Command{{Name: "incr"}, {Name: "client|setname"}}
	tests := []struct {
		name, password, prefix, want string
	}{
		{name: "hashed password", password: "pw", prefix: "rl:",
			want: "ACL SETUSER bench reset on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~rl:* +incr +client|setname"},
		{name: "placeholder and escaped glob", prefix: "a*b?:",
			want: `ACL SETUSER bench reset on >PASSWORD ~a\*b\?:* +incr +client|setname`},
		{name: "quoted for redis-cli", prefix: "my app's \"x\"\t:",
			want: `ACL SETUSER bench reset on >PASSWORD "~my app's \"x\"\x09:*" +incr +client|setname`},
	}
	for _, tc := range tests {
		if got := SetUser("bench", tc.password, tc.prefix, cmds); got != tc.want {
			t.Errorf("SetUser(bench, %q, %q) = %s; want %s", tc.password, tc.prefix, got, tc.want)
		}
	}
}

func TestMissingErrorNamesCommands(t *testing.T) {
	t.Parallel()
	e := &MissingError{Commands: []string{"client|pause"}, Said: []string{"NOPERM ..."}, Denied: true}
	if got := e.Error(); !strings.Contains(got, "CLIENT PAUSE (NOPERM ...)") || !strings.Contains(got, "may not send") {
		t.Errorf("Error() = %q; want it to name CLIENT PAUSE and say the user may not send it", got)
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	got := Options([]string{"lua", "multi-nx", "naive", "multi-nx"})
	var names []string
	for _, o := range got {
		names = append(names, o.Name+" for "+o.Why)
	}
	if want := []string{"EXPIRE ... NX for strategy multi-nx", "SET ... EXAT for strategy naive"}; !slices.Equal(names, want) {
		t.Errorf("Options() = %q; want %q", names, want)
	}
}

// TestSequenceCommands checks that every command a --sequence may send has
// a probe, and that a strategy's ACLCommands (a model's, a sequence's) are
// in Commands' list.
func TestSequenceCommands(t *testing.T) {
	t.Parallel()
	for name := range strategies.SequenceCommands {
		if _, ok := probes[strings.ToLower(name)]; !ok {
			t.Errorf("probes[%q] missing: Permitted cannot check a sequence that sends it", strings.ToLower(name))
		}
	}
	const name = "acl-test-sequence"
	reg := strategies.NewRegistry()
	if err := reg.RegisterSequence(name + "=MULTI; HINCRBY {key} f 1; HEXPIRE {key} {window} NX FIELDS 1 f; EXEC; ZCARD {key}:z -- rlbench: atomic"); err != nil {
		t.Fatal(err)
	}
	cmds, err := Commands(Needs{Strategies: []string{name}, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	got := Names(cmds)
	for _, want := range []string{"multi", "hincrby", "hexpire", "exec", "zcard"} {
		if !slices.Contains(got, want) {
			t.Errorf("Commands(%s) = %v; want %s in it", name, got, want)
		}
	}
}

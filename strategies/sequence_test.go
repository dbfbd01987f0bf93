package strategies_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/workload"
)

// TestParseSequenceRefuses checks that a spec breaking a rule is refused
// with ErrBadSequence, naming the token.
func TestParseSequenceRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, spec, token string
	}{
		{"key not from {key}", "INCRBY other 1", `"other"`},
		{"key that only contains {key}", "INCR x{key}", `"x{key}"`},
		{"second key not from {key}", "INCR {key} | EXISTS {key} other", `"other"`},
		{"{key} as a value", "INCRBY {key} {key}", `"{key}"`},
		{"command a counter does not need", "INCR {key} | FLUSHALL", `"FLUSHALL"`},
		{"script", "EVAL x 1 {key}", `"EVAL"`},
		{"del", "INCR {key} | DEL {key}", `"DEL"`},
		{"unknown placeholder", "INCRBY {key} {foo}", "{foo}"},
		{"unclosed placeholder", "INCRBY {key} {n", `"{n"`},
		{"glob character", "INCR {key}:*", `"*"`},
		{"quote", "SET {key} 'x' | INCR {key}", `"'"`},
		{"no counter", "GET {key} | EXPIRE {key} {window}", "no counter command"},
		{"only TIME", "TIME", "no counter command"},
		{"empty", "  ", "no command"},
		{"MULTI with no EXEC", "MULTI; INCR {key}", "MULTI with no EXEC"},
		{"MULTI inside a pipeline", "INCR {key} | MULTI | EXPIRE {key} 1 | EXEC", "MULTI must open"},
		{"EXEC with no MULTI", "INCR {key} | EXEC", "EXEC with no MULTI"},
		{"EXEC then a pipe", "MULTI | INCR {key} | EXEC | TTL {key}", "follow it with ';'"},
		{"empty round trip", "INCR {key}; ; EXPIRE {key} 1", `";"`},
		{"leading pipe", "| INCR {key}", `"|"`},
		{"command without a key", "INCR", "INCR needs a key"},
		{"unknown claim", "INCR {key} -- rlbench: fast", `"fast"`},
		{"heals without fixed-window", "INCR {key} -- rlbench: heals", "claim fixed-window too"},
		{"stamped fixed window", "INCR {key}:{stamp} -- rlbench: fixed-window", "{stamp}"},
		{"sliding fixed window", "INCR {key} -- rlbench: sliding fixed-window", "contradict"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := strategies.ParseSequence(tc.spec)
			if !errors.Is(err, strategies.ErrBadSequence) || !strings.Contains(err.Error(), tc.token) {
				t.Errorf("ParseSequence(%q) error = %v; want ErrBadSequence naming %s", tc.spec, err, tc.token)
			}
		})
	}
	if err := strategies.NewRegistry().RegisterSequence("no-spec"); !errors.Is(err, strategies.ErrBadSequence) {
		t.Errorf("RegisterSequence(%q) error = %v; want ErrBadSequence", "no-spec", err)
	}
}

// TestSequenceCheckedAsFixedWindow checks which sequences are checked as
// fixed-window counters (Info.FixedWindow): one that claims it, and one
// that claims nothing of its window, whose key carries no stamp; not one
// that claims sliding, nor a stamped one.
func TestSequenceCheckedAsFixedWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec string
		want bool
	}{
		{"INCR {key} | EXPIRE {key} {window} -- rlbench: fixed-window", true},
		{"INCR {key} | EXPIRE {key} {window}", true},
		{"INCR {key} | EXPIRE {key} {window} -- rlbench: atomic", true},
		{"INCR {key} | EXPIRE {key} {window} -- rlbench: sliding", false},
		{"INCR {key}:{stamp} | EXPIRE {key}:{stamp} {window}", false},
	}
	for _, tc := range tests {
		seq, err := strategies.ParseSequence(tc.spec)
		if err != nil {
			t.Fatalf("ParseSequence(%q) error = %v", tc.spec, err)
		}
		if got := seq.Info("x").FixedWindow; got != tc.want {
			t.Errorf("ParseSequence(%q).Info().FixedWindow = %t; want %t", tc.spec, got, tc.want)
		}
	}
}

// TestSequenceRoundTrips runs specs on both clients: the round trips a
// strategies.Tap sees are the spec's, the keys are the placeholders'
// expansion, and the first counter reply decides.
func TestSequenceRoundTrips(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	const window = 60
	stamp := func() string { return fmt.Sprint(time.Now().Unix() / window * window) }
	tests := []struct {
		name, spec string
		trips      []string
		key        func(k string) string // the one key the spec writes
		stamped    string                // its Info.Stamp
	}{
		{"pipeline", "INCRBY {key} {n} | EXPIRE {key} {window}", []string{"INCRBY+EXPIRE"}, func(k string) string { return k }, ""},
		{"two round trips", "INCR {key}; EXPIRE {key} {window} NX", []string{"INCR", "EXPIRE NX"}, func(k string) string { return k }, ""},
		{"transaction", "MULTI; INCR {key}; EXPIRE {key} {window} NX; EXEC", []string{"MULTI+INCR+EXPIRE NX+EXEC"}, func(k string) string { return k }, ""},
		{"transaction then a read", "MULTI | INCR {key}:{stamp} | EXPIRE {key}:{stamp} {window} | EXEC; TTL {key}:{stamp}",
			[]string{"MULTI+INCR+EXPIRE+EXEC", "TTL"}, func(k string) string { return k + ":" + stamp() }, strategies.StampUnix},
		{"counter after a write", "SET {key}:w{index} 0 NX EX {window} | INCR {key}:w{index}",
			[]string{"SET NX EX+INCR"}, func(k string) string { return fmt.Sprintf("%s:w%d", k, time.Now().Unix()/window) }, strategies.StampIndex},
	}
	for _, tc := range tests {
		for _, cname := range clients.Names {
			t.Run(tc.name+"/"+cname, func(t *testing.T) {
				t.Parallel()
				seq, err := strategies.ParseSequence(tc.spec)
				if err != nil {
					t.Fatal(err)
				}
				if got := seq.Info("x").Stamp; got != tc.stamped {
					t.Errorf("Info.Stamp = %q; want %q", got, tc.stamped)
				}
				s, err := strategies.NewSequence("x", tc.spec, strategies.Config{Limit: 2, Window: window})
				if err != nil {
					t.Fatal(err)
				}
				c := connect(t, srv, cname, 4)
				prefix := redistest.Prefix(t)
				key := prefix + "{0}"
				var sent []string
				ctx := strategies.WithTap(context.Background(), &strategies.Tap{Sent: func(rt string) { sent = append(sent, rt) }})
				if left := window - time.Now().Unix()%window; left < 5 {
					time.Sleep(time.Duration(left+1) * time.Second) // the decisions share one window
				}
				for i := 1; i <= 3; i++ {
					sent = nil
					d, err := s.Decide(ctx, c, key)
					if err != nil {
						t.Fatalf("Decide #%d error: %v", i, err)
					}
					if !slices.Equal(sent, tc.trips) || d.Count != int64(i) || d.Allowed != (i <= 2) {
						t.Errorf("Decide #%d sent %q, = %+v; want %q, count %d, allowed %t", i, sent, d, tc.trips, i, i <= 2)
					}
				}
				if got, want := keysWith(t, rdb, prefix), []string{tc.key(key)}; !slices.Equal(got, want) {
					t.Errorf("keys = %q; want %q", got, want)
				}
			})
		}
	}
}

// keysWith lists the keys that start with prefix.
func keysWith(t *testing.T, rdb *redis.Client, prefix string) []string {
	t.Helper()
	return redistest.KeysUnder(t, rdb, prefix)
}

// TestSequenceCrash runs a leaky and a safe spec under --crash-rate on
// both clients and counts keys with no TTL with a plain client: INCR then
// EXPIRE in two round trips leaks, and one more request heals (EXPIRE NX);
// the same in one MULTI ... EXEC leaves none.
func TestSequenceCrash(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	for _, tc := range []struct {
		name, spec string
		leaks      bool
	}{
		{"leaky", "INCR {key}; EXPIRE {key} {window} NX -- rlbench: heals fixed-window", true},
		{"safe", "MULTI; INCR {key}; EXPIRE {key} {window} NX; EXEC -- rlbench: atomic heals fixed-window", false},
	} {
		for _, cname := range clients.Names {
			t.Run(tc.name+"/"+cname, func(t *testing.T) {
				t.Parallel()
				s, err := strategies.NewSequence(tc.name, tc.spec, strategies.Config{Limit: 1000000, Window: 60})
				if err != nil {
					t.Fatal(err)
				}
				c := connect(t, srv, cname, 4)
				prefix := redistest.Prefix(t)
				var rec results.Recorder
				// Many keys, so that most are requested once.
				cfg := workload.Config{Workers: 4, Keys: 100000, Duration: time.Second, Prefix: prefix, CrashRate: 0.2, Seed: 1}
				// The client hook cuts a decision between its round trips: the
				// transaction is one, which no crash cuts.
				if _, err := workload.Run(context.Background(), cfg, s, c, &rec, nil); err != nil {
					t.Fatalf("workload.Run error: %v", err)
				}
				run := results.NewRun(&rec, time.Second)
				immortal := noTTL(t, rdb, prefix)
				t.Logf("%s/%s: %d decisions, %d crashed, %d immortal", tc.name, cname, run.Decisions, run.ErrorKinds[results.KindCrashed], len(immortal))
				crashed := run.ErrorKinds[results.KindCrashed]
				if got := len(immortal) > 0; got != tc.leaks || tc.leaks && crashed == 0 {
					t.Fatalf("%d immortal keys, %d crashed decisions; want leaks %t", len(immortal), crashed, tc.leaks)
				}
				for _, k := range immortal {
					if _, err := s.Decide(context.Background(), c, k); err != nil {
						t.Fatal(err)
					}
				}
				if after := noTTL(t, rdb, prefix); len(after) != 0 {
					t.Errorf("after one more request each, %d keys have no TTL; want 0 (EXPIRE NX heals)", len(after))
				}
			})
		}
	}
}

// noTTL lists the keys under prefix with no TTL, by KEYS and PTTL.
func noTTL(t *testing.T, rdb *redis.Client, prefix string) []string {
	t.Helper()
	var out []string
	for _, k := range keysWith(t, rdb, prefix) {
		p, err := rdb.Do(context.Background(), "PTTL", k).Int64()
		if err != nil {
			t.Fatal(err)
		}
		if p == -1 {
			out = append(out, k)
		}
	}
	return out
}

// TestSequenceInfo checks what a spec's Info says of it, from its
// commands: the stamp its keys carry, the lowest Redis that runs it, and
// whether it changes a key of another type.
func TestSequenceInfo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec, stamp, minRedis string
		changesWrongType      bool
	}{
		{"INCR {key}; EXPIRE {key} {window}", "", "2.6.0", false},                // INCR fails alone
		{"INCR {key} | EXPIRE {key} {window}", "", "2.6.0", true},                // EXPIRE runs after it
		{"MULTI; INCR {key}; EXPIRE {key} {window} NX; EXEC", "", "7.0.0", true}, // MULTI does not roll back
		{"SET {key} 0 NX EX {window} | INCR {key}", "", "2.6.12", false},         // SET NX leaves it
		{"INCR {key}:{stamp_ms} | PEXPIRE {key}:{stamp_ms} {window_ms}", strategies.StampUnixMS, "2.6.0", true},
		{"HINCRBY {key} f {n} | HEXPIRE {key} {window} FIELDS 1 f", "", "7.4.0", false},
		{"INCR {key}:{index}; PSETEX {key}:{index} {window_ms} 1", strategies.StampIndex, "2.6.0", true},
	}
	for _, tc := range tests {
		seq, err := strategies.ParseSequence(tc.spec)
		if err != nil {
			t.Fatalf("ParseSequence(%q) error: %v", tc.spec, err)
		}
		info := seq.Info("x")
		if info.Stamp != tc.stamp || info.MinRedis != tc.minRedis || info.ChangesWrongType != tc.changesWrongType || info.Commands != tc.spec {
			t.Errorf("ParseSequence(%q).Info = Stamp %q, MinRedis %s, ChangesWrongType %t, Commands %q; want %q, %s, %t, the spec",
				tc.spec, info.Stamp, info.MinRedis, info.ChangesWrongType, info.Commands, tc.stamp, tc.minRedis, tc.changesWrongType)
		}
	}
}

// TestRegistryPerRun checks that a user strategy is registered into one
// Registry only: another one may register the same name from another
// source, the built-in strategies (the package's Lookup) never see it,
// and a built-in name cannot be taken.
func TestRegistryPerRun(t *testing.T) {
	t.Parallel()
	const name = "mine"
	specs := []string{"INCR {key} | EXPIRE {key} {window} NX", "INCRBY {key} 1 | EXPIRE {key} {window} NX"}
	regs := []*strategies.Registry{strategies.NewRegistry(), strategies.NewRegistry()}
	for i, r := range regs {
		if err := r.RegisterSequence(name + "=" + specs[i]); err != nil {
			t.Fatalf("registry %d: RegisterSequence(%q) = %v; want it registered (another registry's is not its)", i, specs[i], err)
		}
		if err := r.RegisterSequence(name + "=" + specs[i]); err != nil {
			t.Errorf("registry %d: RegisterSequence(%q) again = %v; want the same one allowed", i, specs[i], err)
		}
	}
	for i, r := range regs {
		if info, err := r.Lookup(name); err != nil || info.Commands != specs[i] {
			t.Errorf("registry %d: Lookup(%q) = %q, %v; want its own %q", i, name, info.Commands, err, specs[i])
		}
	}
	if err := regs[0].RegisterSequence(name + "=" + specs[1]); !errors.Is(err, strategies.ErrDuplicateStrategy) {
		t.Errorf("RegisterSequence(%q) over another spec = %v; want ErrDuplicateStrategy", specs[1], err)
	}
	if _, err := strategies.Lookup(name); !errors.Is(err, strategies.ErrUnknownStrategy) {
		t.Errorf("strategies.Lookup(%q) = %v; want ErrUnknownStrategy: a run's user strategy is not the process's", name, err)
	}
	if err := regs[0].RegisterSequence("lua=" + specs[0]); !errors.Is(err, strategies.ErrDuplicateStrategy) {
		t.Errorf("RegisterSequence(lua=...) = %v; want ErrDuplicateStrategy", err)
	}
	if all, err := regs[0].Select([]string{"all"}); err != nil || all[len(all)-1] != name || !slices.Equal(all[:len(all)-1], strategies.BuiltinNames()) {
		t.Errorf("Select(all) = %v, %v; want the built-in strategies, then %q", all, err, name)
	}
	if names := regs[0].Names(); !slices.Contains(names, name) || !slices.Contains(names, "lua") || slices.Contains(strategies.Names(), name) {
		t.Errorf("Names() = %v, strategies.Names() = %v; want the registry's with %q and lua, the built-ins' without", names, strategies.Names(), name)
	}
}

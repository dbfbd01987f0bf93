package workload

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := Config{Prefix: "p:"}.WithDefaults()
	tests := []struct {
		name string
		mod  func(*Config)
		want error
	}{
		{"defaults", func(*Config) {}, nil},
		{"no clients", func(c *Config) { c.Workers = 0 }, ErrInvalidWorkers},
		{"no keys", func(c *Config) { c.Keys = -1 }, ErrInvalidKeys},
		{"most keys", func(c *Config) { c.Keys = MaxKeys }, nil},
		{"too many keys", func(c *Config) { c.Keys = MaxKeys + 1 }, ErrTooManyKeys},
		{"unknown dist", func(c *Config) { c.KeyDist = "gauss" }, ErrInvalidKeyDist},
		{"no end", func(c *Config) { c.Duration, c.Requests = 0, 0 }, ErrNoEnd},
		{"negative requests", func(c *Config) { c.Requests = -1 }, ErrInvalidRequests},
		{"empty prefix", func(c *Config) { c.Prefix = "" }, ErrEmptyPrefix},
		{"crash rate over 1", func(c *Config) { c.CrashRate = 1.5 }, ErrInvalidCrash},
		{"negative pause", func(c *Config) { c.RacePause = -time.Second }, ErrInvalidPause},
		{"open loop", func(c *Config) { c.Rate = 2000 }, nil},
		{"negative rate", func(c *Config) { c.Rate = -1 }, ErrInvalidRate},
		{"NaN rate", func(c *Config) { c.Rate = math.NaN() }, ErrInvalidRate},
		{"infinite rate", func(c *Config) { c.Rate = math.Inf(1) }, ErrInvalidRate},
		{"vanishing rate", func(c *Config) { c.Rate = 1e-300 }, ErrInvalidRate}, // one request, then a wait of 10^300 s
		{"absurd rate", func(c *Config) { c.Rate = 1e12 }, ErrInvalidRate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			if err := c.Validate(); !errors.Is(err, tc.want) {
				t.Errorf("Validate(%+v) = %v; want %v", c, err, tc.want)
			}
		})
	}
}

func TestKeyNames(t *testing.T) {
	t.Parallel()
	got := KeyNames("rl:", 3)
	want := []string{"rl:{0}", "rl:{1}", "rl:{2}"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("KeyNames(\"rl:\", 3)[%d] = %q; want %q", i, got[i], want[i])
		}
	}
}

// TestKeyNamer checks that a worker's names are KeyName's, from the table
// and beyond it, and that a name built beyond the table is the worker's to
// keep: the next one does not overwrite it.
func TestKeyNamer(t *testing.T) {
	t.Parallel()
	n := NewKeyNamer("rl:", KeyNames("rl:", 10))
	first := n.Name(12345)
	for _, i := range []int{0, 9, 10, 12345, 99} {
		if got, want := n.Name(i), KeyName("rl:", i); got != want {
			t.Errorf("Name(%d) = %q; want %q", i, got, want)
		}
	}
	if first != "rl:{12345}" {
		t.Errorf("Name(12345), after further names = %q; want %q", first, "rl:{12345}")
	}
	if got := len(KeyTable("rl:", 10)); got != 10 {
		t.Errorf("len(KeyTable(10 keys)) = %d; want 10", got)
	}
	if got := len(KeyTable("rl:", MaxKeys)); got != KeyTableMax {
		t.Errorf("len(KeyTable(MaxKeys)) = %d; want KeyTableMax, %d", got, KeyTableMax)
	}
}

// BenchmarkKeyName measures a worker's key name: from the table, and built
// beyond it (one allocation of the name's length).
func BenchmarkKeyName(b *testing.B) {
	const prefix = "rlbench:20260101-000000-abcd:lua:go-redis:"
	for _, tc := range []struct {
		name string
		key  int
	}{{"table", 4242}, {"built", KeyTableMax + 4242}} {
		b.Run("key="+tc.name, func(b *testing.B) {
			n := NewKeyNamer(prefix, KeyTable(prefix, KeyTableMax))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				_ = n.Name(tc.key)
			}
		})
	}
}

// TestKeyDists checks the shape of each distribution over many draws.
func TestKeyDists(t *testing.T) {
	t.Parallel()
	const n, draws = 100, 100_000
	counts := func(dist string) []int {
		c := make([]int, n)
		pick := newPicker(dist, n, 1, 0)
		for range draws {
			c[pick()]++
		}
		return c
	}
	u := counts("uniform")
	for i, c := range u {
		if c < draws/n/2 || c > draws/n*2 {
			t.Errorf("uniform: key %d drawn %d times; want about %d", i, c, draws/n)
		}
	}
	h := counts("hot")
	if share := float64(h[0]) / draws; share < 0.48 || share > 0.53 {
		t.Errorf("hot: key 0 has %.3f of draws; want about 0.505", share)
	}
	z := counts("zipf")
	if z[0] <= z[1] || z[1] <= z[10] || z[10] <= z[90] {
		t.Errorf("zipf: draws of keys 0, 1, 10, 90 = %d, %d, %d, %d; want strictly falling", z[0], z[1], z[10], z[90])
	}
}

// TestRunRequestBudget checks that a request budget is spent exactly,
// across workers, against a real server.
func TestRunRequestBudget(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c, err := clients.New("go-redis", clients.Options{Addr: srv.Addr(), Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := strategies.New("incr-expire", strategies.Config{Limit: 1000, Window: 60})
	if err != nil {
		t.Fatal(err)
	}
	var rec results.Recorder
	cfg := Config{Workers: 8, Keys: 3, Requests: 777, Prefix: redistest.Prefix(t)}
	if _, err := Run(context.Background(), cfg, s, c, &rec, nil); err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if got := rec.Totals(); got.Decisions != 777 || got.Allowed != 777 {
		t.Errorf("Run with Requests 777: totals %+v; want 777 decisions, all allowed", got)
	}
	var sum int64
	rdb := redistest.Client(t, srv)
	for _, k := range KeyNames(cfg.Prefix, 3) {
		n, _ := rdb.Get(context.Background(), k).Int64()
		sum += n
	}
	if sum != 777 {
		t.Errorf("sum of counters = %d; want 777", sum)
	}
}

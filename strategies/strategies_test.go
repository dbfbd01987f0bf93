package strategies_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/strategies"
)

// TestFixedWindow checks, for every strategy on every client, the three
// behaviours every fixed-window counter must show against a real server:
// the first request creates the counter with the window's TTL, requests up
// to the limit are allowed and those past it rejected, and after the window
// the counter starts again.
func TestFixedWindow(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	const limit, window = 3, 1
	for _, info := range strategies.All() {
		for _, cname := range clients.Names {
			t.Run(info.Name+"/"+cname, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				s, err := strategies.New(info.Name, strategies.Config{Limit: limit, Window: window})
				if err != nil {
					t.Fatalf("New(%q) error: %v", info.Name, err)
				}
				c, err := clients.New(cname, clients.Options{Addr: srv.Addr(), Workers: 1})
				if err != nil {
					t.Fatalf("clients.New(%q) error: %v", cname, err)
				}
				defer c.Close()
				key := redistest.Prefix(t) + "k"

				// First request: allowed, counter at 1, TTL = window.
				d, err := s.Decide(ctx, c, key)
				if err != nil || !d.Allowed {
					t.Fatalf("first Decide = %+v, %v; want allowed", d, err)
				}
				if n, _ := rdb.Get(ctx, key).Int64(); n != 1 {
					t.Errorf("counter after first request = %d; want 1", n)
				}
				if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > window*time.Second {
					t.Errorf("PTTL after first request = %v; want in (0, %ds]", ttl, window)
				}

				// Requests 2..limit allowed, then rejected.
				for i := 2; i <= limit+2; i++ {
					d, err := s.Decide(ctx, c, key)
					if err != nil {
						t.Fatalf("Decide #%d error: %v", i, err)
					}
					if want := i <= limit; d.Allowed != want {
						t.Errorf("Decide #%d allowed = %t; want %t (count %d)", i, d.Allowed, want, d.Count)
					}
				}
				if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 {
					t.Errorf("PTTL after %d requests = %v; want > 0", limit+2, ttl)
				}

				// After the window: a new counter, allowed, with a fresh TTL.
				waitGone(t, rdb, key)
				d, err = s.Decide(ctx, c, key)
				if err != nil || !d.Allowed {
					t.Fatalf("Decide after expiry = %+v, %v; want allowed", d, err)
				}
				if n, _ := rdb.Get(ctx, key).Int64(); n != 1 {
					t.Errorf("counter in new window = %d; want 1", n)
				}
				if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > window*time.Second {
					t.Errorf("PTTL in new window = %v; want in (0, %ds]", ttl, window)
				}
			})
		}
	}
}

// waitGone polls until key no longer exists, for at most 3 seconds.
func waitGone(t *testing.T, rdb *redis.Client, key string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for rdb.Exists(context.Background(), key).Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("key %q still exists after 3s; want it expired", key)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		strategy string
		cfg      strategies.Config
		want     error
	}{
		{"unknown name", "nope", strategies.Config{}, strategies.ErrUnknownStrategy},
		{"negative limit", "lua", strategies.Config{Limit: -1}, strategies.ErrInvalidLimit},
		{"negative window", "lua", strategies.Config{Window: -5}, strategies.ErrInvalidWindow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := strategies.New(tc.strategy, tc.cfg)
			if !errors.Is(err, tc.want) {
				t.Errorf("New(%q, %+v) error = %v; want %v", tc.strategy, tc.cfg, err, tc.want)
			}
		})
	}
	_, err := strategies.New("nope", strategies.Config{})
	if !strings.Contains(err.Error(), "multi-nx") {
		t.Errorf("New(\"nope\") error = %q; want it to list the accepted names", err)
	}
}

func TestScriptSHA1(t *testing.T) {
	t.Parallel()
	// SHA-1 of "return 1", as SCRIPT LOAD reports it.
	const want = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
	if got := strategies.NewScript("return 1").SHA1; got != want {
		t.Errorf("NewScript(\"return 1\").SHA1 = %s; want %s", got, want)
	}
}

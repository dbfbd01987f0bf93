package clients_test

import (
	"context"
	"slices"
	"testing"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/strategies"
)

// TestTapSeesTheSameRoundTrips checks the client-level hook that
// --crash-rate and the observed command lists rely on: for every built-in
// strategy of rlbench's own that runs on Redis 7.0, three decisions on a
// fresh key show the same round trips, by name and in order, to a
// strategies.Tap on every client as on go-redis, so that a worker can die
// at the same gaps whatever the client.
func TestTapSeesTheSameRoundTrips(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, info := range strategies.All() {
		if info.Module != "" || info.Source != "" || info.Layout == strategies.LayoutHashField {
			continue // go-redis only; user strategies; Redis 7.4
		}
		t.Run(info.Name, func(t *testing.T) {
			t.Parallel()
			var want []string
			for _, name := range clients.Names {
				c, err := clients.New(name, clients.Options{Addr: srv.Addr()})
				if err != nil {
					t.Fatalf("New(%q) error: %v", name, err)
				}
				defer c.Close()
				s, err := strategies.New(info.Name, strategies.Config{Limit: 2, Window: 60})
				if err != nil {
					t.Fatal(err)
				}
				if p, ok := s.(strategies.Preparer); ok {
					if err := p.Prepare(context.Background(), c); err != nil {
						t.Fatalf("%s: Prepare: %v", name, err)
					}
				}
				// One decision untapped first, so that every client finds
				// the scripts loaded (EVALSHA, no EVAL fallback).
				if _, err := s.Decide(context.Background(), c, redistest.Prefix(t)+name+":{warm}"); err != nil {
					t.Fatalf("%s: Decide: %v", name, err)
				}
				var sent []string
				ctx := strategies.WithTap(context.Background(), &strategies.Tap{Sent: func(rt string) { sent = append(sent, rt) }})
				key := redistest.Prefix(t) + name + ":{k}"
				for range 3 {
					if _, err := s.Decide(ctx, c, key); err != nil {
						t.Fatalf("%s: Decide: %v", name, err)
					}
				}
				if len(sent) == 0 {
					t.Errorf("%s: the Tap saw no round trip", name)
				}
				if want == nil {
					want = sent
				} else if !slices.Equal(sent, want) {
					t.Errorf("%s: the Tap saw %q; want %q, as on %s", name, sent, want, clients.Names[0])
				}
			}
		})
	}
}

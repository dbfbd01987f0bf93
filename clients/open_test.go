package clients_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
)

// connectedClients is the server's connected_clients (INFO clients).
func connectedClients(t *testing.T, admin *redis.Client) int {
	t.Helper()
	info, err := admin.Info(t.Context(), "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("INFO clients has no connected_clients: %q", info)
	return 0
}

// TestOpen checks that Open connects before the load: go-redis one
// connection per worker, in its pool for the workers to take (the server
// sees them all, and the pool holds them idle); rueidis its shared
// connections. Against a server that is gone, Open fails.
func TestOpen(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := redistest.Client(t, srv)
	const workers = 300
	for _, name := range clients.Names {
		before := connectedClients(t, admin)
		c, err := clients.New(name, clients.Options{Addr: srv.Addr(), Workers: workers})
		if err != nil {
			t.Fatalf("New(%q) error: %v", name, err)
		}
		if err := c.Open(t.Context()); err != nil {
			t.Fatalf("%s: Open() error: %v", name, err)
		}
		opened := connectedClients(t, admin) - before
		switch name {
		case "go-redis":
			stats := c.GoRedis().PoolStats()
			if opened != workers || stats.TotalConns != workers || stats.IdleConns != workers {
				t.Errorf("go-redis: after Open the server sees %d new connections, the pool %d (%d idle); want %d of each", opened, stats.TotalConns, stats.IdleConns, workers)
			}
		default:
			if opened < 1 || opened > 4 {
				t.Errorf("%s: after Open the server sees %d new connections; want 1 to 4 (shared, pipelined)", name, opened)
			}
		}
		c.Close()
	}

	gone := redistest.Start(t)
	addr := gone.Addr()
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := clients.New("go-redis", clients.Options{Addr: addr, Workers: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Open(t.Context()); err == nil || !strings.Contains(err.Error(), "10 failed") {
		t.Errorf("go-redis: Open() against a stopped server = %v; want 10 of 10 failed", err)
	}
}

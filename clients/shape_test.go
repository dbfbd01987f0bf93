package clients_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/internal/redistest"
)

// supporting is the clients that reach topo (clients.Topologies).
func supporting(topo string) []string {
	var out []string
	for _, name := range clients.Names {
		if slices.Contains(clients.Topologies[name], topo) {
			out = append(out, name)
		}
	}
	return out
}

// TestUnsupportedTopology checks that redigo, which has no cluster or
// Sentinel support of its own, refuses both before it dials, naming
// itself and what it supports, and that the others accept them.
func TestUnsupportedTopology(t *testing.T) {
	t.Parallel()
	for _, o := range []clients.Options{
		{Cluster: []string{"127.0.0.1:1"}},
		{Sentinel: connection.Sentinel{Master: "m", Addrs: []string{"127.0.0.1:1"}}},
	} {
		err := clients.CheckOptions("redigo", o)
		if !errors.Is(err, clients.ErrTopology) || !strings.Contains(err.Error(), "redigo supports: single server") {
			t.Errorf("CheckOptions(redigo, %s) = %v; want ErrTopology naming redigo and single server", clients.TopologyOf(o), err)
		}
		if _, err := clients.New("redigo", o); !errors.Is(err, clients.ErrTopology) {
			t.Errorf("New(redigo, %s) error = %v; want ErrTopology", clients.TopologyOf(o), err)
		}
		for _, name := range []string{"go-redis", "rueidis", "valkey-go"} {
			if err := clients.CheckOptions(name, o); err != nil {
				t.Errorf("CheckOptions(%s, %s) = %v; want nil", name, clients.TopologyOf(o), err)
			}
		}
	}
}

// TestCheckOptions checks the options a client refuses without a server:
// a connection count it cannot open, retries on redigo, and rueidis' and
// valkey-go's one timeout.
func TestCheckOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		client string
		o      clients.Options
		want   error
	}{
		{"go-redis", clients.Options{Connections: -1}, clients.ErrConnections},
		{"redigo", clients.Options{Connections: -1}, clients.ErrConnections},
		{"rueidis", clients.Options{Connections: 3}, clients.ErrConnections},
		{"valkey-go", clients.Options{Connections: 512}, clients.ErrConnections},
		{"valkey-go", clients.Options{Connections: 256}, nil},
		{"redigo", clients.Options{Connections: 3}, nil},
		{"go-redis", clients.Options{Connections: 7}, nil},
		{"redigo", clients.Options{Retries: 1}, clients.ErrNoRetries},
		{"valkey-go", clients.Options{ReadTimeout: 1, WriteTimeout: 2}, clients.ErrRueidisTimeouts},
		{"redigo", clients.Options{ReadTimeout: 1, WriteTimeout: 2}, nil},
	}
	for _, tc := range tests {
		err := clients.CheckOptions(tc.client, tc.o)
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("CheckOptions(%s, %+v) = %v; want %v", tc.client, tc.o, err, tc.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), tc.client+": ") {
			t.Errorf("CheckOptions(%s) error %q does not name the client", tc.client, err)
		}
	}
}

// TestConnections checks the connection shape, Options.Connections, on
// each client against a real server: a pooled client (go-redis, redigo)
// with more workers than connections opens exactly that many, a
// pipelining one (rueidis, valkey-go: each keyed command on a pipe picked
// at random, so 400 INCRs reach all 8 with near certainty) exactly its
// 8, and Options says so.
func TestConnections(t *testing.T) {
	t.Parallel()
	const conns, workers = 8, 300
	for _, name := range clients.Names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			admin := redistest.Client(t, srv)
			before := connectedClients(t, admin)
			c, err := clients.New(name, clients.Options{Addr: srv.Addr(), Workers: workers, Connections: conns})
			if err != nil {
				t.Fatalf("New(%q) error: %v", name, err)
			}
			defer c.Close()
			if err := c.Open(t.Context(), workers); err != nil {
				t.Fatalf("Open() error: %v", err)
			}
			prefix := redistest.Prefix(t)
			for i := range 400 {
				if _, err := c.Incr(t.Context(), fmt.Sprintf("%s%d", prefix, i)); err != nil {
					t.Fatalf("INCR: %v", err)
				}
			}
			if opened := connectedClients(t, admin) - before; opened != conns {
				t.Errorf("the server sees %d new connections; want %d", opened, conns)
			}
			want := fmt.Sprintf("pool_size=%d ", conns)
			if name == "rueidis" || name == "valkey-go" {
				want = fmt.Sprintf("pipeline_multiplex=3 (%d conns)", conns)
			}
			if !strings.Contains(c.Options(), want) {
				t.Errorf("Options() = %q; want it to contain %q", c.Options(), want)
			}
		})
	}
}

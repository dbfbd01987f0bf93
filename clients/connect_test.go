package clients_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redisserver"
)

// TestSentinel runs INCRs through a managed Sentinel set-up on both
// clients, fails the master over, and checks that both reach the new
// master.
func TestSentinel(t *testing.T) {
	t.Parallel()
	s, err := redisserver.StartSentinel(t.Context(), redisserver.SentinelOptions{Replicas: 1, Binary: os.Getenv(redistest.BinaryEnv)})
	if err != nil {
		t.Fatalf("StartSentinel() error: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	target := connection.Sentinel{Master: s.MasterName(), Addrs: s.SentinelAddrs()}
	prefix := redistest.Prefix(t)
	conns := map[string]clients.Conn{}
	for _, name := range supporting(clients.TopologySentinel) {
		c, err := clients.New(name, clients.Options{Sentinel: target, Workers: 2, Addr: "127.0.0.1:1"})
		if err != nil {
			t.Fatalf("New(%q, sentinel %s) error: %v", name, target, err)
		}
		t.Cleanup(func() { c.Close() })
		conns[name] = c
		for i := range 3 {
			n, err := c.Incr(t.Context(), prefix+name)
			if err != nil || n != int64(i+1) {
				t.Fatalf("%s: INCR #%d through sentinel = %d, %v; want %d", name, i+1, n, err, i+1)
			}
		}
	}
	what, err := s.Failover(t.Context())
	if err != nil {
		t.Fatalf("Failover() error: %v", err)
	}
	t.Logf("Failover() = %s", what)
	master, err := s.MasterAddr(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	direct := redis.NewClient(&redis.Options{Addr: master, DisableIdentity: true})
	defer direct.Close()
	for name, c := range conns {
		// The first commands after the switch may fail: no client retries.
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		var lastErr error
		for ctx.Err() == nil {
			if _, lastErr = c.Incr(ctx, prefix+name+":after"); lastErr == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
		if lastErr != nil {
			t.Errorf("%s: INCR after the failover = %v; want success within 15s", name, lastErr)
			continue
		}
		if n, err := direct.Get(t.Context(), prefix+name+":after").Int64(); err != nil || n < 1 {
			t.Errorf("%s: GET on the new master %s = %d, %v; want the INCR there", name, master, n, err)
		}
	}
}

// TestUserAndTLS connects both clients as an ACL user over mutual TLS.
func TestUserAndTLS(t *testing.T) {
	t.Parallel()
	srv, err := redisserver.Start(t.Context(), redisserver.Options{
		Binary: os.Getenv(redistest.BinaryEnv),
		TLS:    &redisserver.TLSOptions{ClientCerts: true},
	})
	if errors.Is(err, redisserver.ErrNoTLS) {
		t.Skipf("%s is built without TLS: %v", redistest.BinaryEnv, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	files, _ := srv.TLS()
	settings := connection.Settings{Username: "alice", Password: "pw",
		TLS: &connection.TLSFiles{CACert: files.CACert, Cert: files.ClientCert, Key: files.ClientKey}}
	cfg, err := settings.TLS.Config()
	if err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), TLSConfig: cfg.Clone(), DisableIdentity: true})
	defer admin.Close()
	prefix := redistest.Prefix(t)
	if err := admin.Do(t.Context(), "acl", "setuser", "alice", "on", ">pw", "~"+prefix+"*", "+incr").Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range clients.Names {
		c, err := clients.New(name, clients.Options{Addr: srv.Addr(), Username: settings.Username, Password: settings.Password, TLS: cfg.Clone()})
		if err != nil {
			t.Fatalf("New(%q) error: %v", name, err)
		}
		n, err := c.Incr(t.Context(), prefix+name)
		if err != nil || n != 1 {
			t.Errorf("%s: INCR as alice over TLS = %d, %v; want 1", name, n, err)
		}
		if _, err := c.Incr(t.Context(), "outside-the-prefix"); err == nil {
			t.Errorf("%s: INCR outside alice's keys = nil error; want NOPERM", name)
		}
		c.Close()
	}
}

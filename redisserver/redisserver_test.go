package redisserver

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlbench/rlbench/internal/porttest"
	"github.com/rlbench/rlbench/internal/proctest"
	"github.com/rlbench/rlbench/serverinfo"
)

// startServer starts a server for t with the binary named by
// RLBENCH_REDIS_SERVER (default: redis-server on PATH) and closes it at the
// end of the test. It cannot use internal/redistest, which imports this package.
func startServer(t *testing.T, args ...string) *Server {
	t.Helper()
	srv, err := Start(t.Context(), Options{Binary: os.Getenv("RLBENCH_REDIS_SERVER"), Args: args})
	if err != nil {
		t.Fatalf("Start() error: %v (run scripts/test.sh or apt-get install redis-server)", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close() = %v; want nil", err)
		}
	})
	return srv
}

// client returns a go-redis client to addr, closed at the end of the test.
func client(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestStartAddrInfoClose(t *testing.T) {
	t.Parallel()
	srv, err := Start(t.Context(), Options{Binary: os.Getenv("RLBENCH_REDIS_SERVER")})
	if err != nil {
		t.Fatalf("Start() error: %v", err)
	}
	dir := srv.dir
	host, _, err := net.SplitHostPort(srv.Addr())
	if err != nil || host != "127.0.0.1" {
		t.Errorf("Addr() = %q; want 127.0.0.1:PORT", srv.Addr())
	}
	info := srv.Info()
	if info.Name != "redis" && info.Name != "valkey" {
		t.Errorf("Info().Name = %q; want redis or valkey", info.Name)
	}
	if !serverinfo.VersionAtLeast(info.Version, "2.0.0") || !serverinfo.VersionAtLeast(info.RedisVersion, "2.0.0") {
		t.Errorf("Info() = %+v; want versions >= 2.0.0", info)
	}
	if info.Name == "redis" && info.Version != info.RedisVersion {
		t.Errorf("Info() = %+v; want Version == RedisVersion for redis", info)
	}

	rdb := client(t, srv.Addr())
	ctx := t.Context()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET k: %v", err)
	}
	if got, err := rdb.Get(ctx, "k").Result(); got != "v" || err != nil {
		t.Errorf("GET k = (%q, %v); want (v, nil)", got, err)
	}
	if got, err := rdb.ConfigGet(ctx, "save").Result(); err != nil || got["save"] != "" {
		t.Errorf("CONFIG GET save = (%v, %v); want empty save (no persistence)", got, err)
	}

	if err := srv.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close() = %v; want nil", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Close, stat %s: %v; want not exist", dir, err)
	}
	if _, err := net.DialTimeout("tcp", srv.Addr(), time.Second); err == nil {
		t.Errorf("after Close, dial %s succeeded; want refused", srv.Addr())
	}
	if err := srv.Restart(ctx); err == nil {
		t.Errorf("Restart() after Close = nil; want error")
	}
}

func TestRestart(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := t.Context()
	addr := srv.Addr()
	before := client(t, addr)
	if err := before.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET k: %v", err)
	}
	pidBefore := serverPID(t, before)

	if err := srv.Restart(ctx); err != nil {
		t.Fatalf("Restart() = %v; want nil", err)
	}
	if srv.Addr() != addr {
		t.Errorf("Addr() after Restart = %q; want %q", srv.Addr(), addr)
	}
	after := client(t, addr)
	if err := after.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	if pid := serverPID(t, after); pid == pidBefore {
		t.Errorf("process_id after Restart = %s; want a new process (was %s)", pid, pidBefore)
	}
	if got, err := after.Get(ctx, "k").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET k after Restart = (%q, %v); want redis.Nil (data lost)", got, err)
	}
}

// serverPID returns the process_id the server reports in INFO server.
func serverPID(t *testing.T, rdb *redis.Client) string {
	t.Helper()
	return strconv.Itoa(proctest.ServerPID(t, rdb))
}

func TestStartPassesArgs(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--maxclients", "123")
	got, err := client(t, srv.Addr()).ConfigGet(t.Context(), "maxclients").Result()
	if err != nil || got["maxclients"] != "123" {
		t.Errorf("CONFIG GET maxclients = (%v, %v); want 123", got, err)
	}
}

func TestStartRequirepass(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--requirepass", "s3cret")
	if _, err := Probe(t.Context(), srv.Addr(), "s3cret", 0); err != nil {
		t.Errorf("Probe(%s, password) = %v; want nil", srv.Addr(), err)
	}
}

func TestStartNotFound(t *testing.T) {
	t.Parallel()
	missing := t.TempDir() + "/no-such-redis-server"
	srv, err := Start(t.Context(), Options{Binary: missing})
	if err == nil {
		srv.Close()
		t.Fatalf("Start(Binary: %q) = nil error; want ErrNotFound", missing)
	}
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("Start(Binary: %q) = %v; want errors.Is ErrNotFound", missing, err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, missing) || !strings.Contains(msg, "name an executable redis-server") || strings.Contains(msg, "apt-get") {
		t.Errorf("Start(Binary: %q) error = %q; want one line naming the binary, asking for an executable one, not suggesting apt-get (which would not put one there)", missing, msg)
	}
}

// TestStartNotOnPath cannot run in parallel: it empties PATH.
func TestStartNotOnPath(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	srv, err := Start(t.Context(), Options{})
	if err == nil {
		srv.Close()
		t.Fatalf("Start() with empty PATH = nil error; want ErrNotFound")
	}
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("Start() with empty PATH = %v; want errors.Is ErrNotFound", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "--redis-server") || !strings.Contains(msg, "--addr") {
		t.Errorf("Start() error = %q; want one line suggesting --redis-server and --addr", msg)
	}
}

func TestStartEarlyExitShowsLog(t *testing.T) {
	t.Parallel()
	srv, err := Start(t.Context(), Options{Binary: os.Getenv("RLBENCH_REDIS_SERVER"), Args: []string{"--no-such-directive", "yes"}})
	if err == nil {
		srv.Close()
		t.Fatalf("Start(bad directive) = nil error; want error")
	}
	if !strings.Contains(err.Error(), "no-such-directive") {
		t.Errorf("Start(bad directive) error = %q; want the server's complaint quoted", err)
	}
}

func TestStartNeverAnswers(t *testing.T) {
	t.Parallel()
	// A program that accepts any arguments and never serves: Start must give
	// up at ctx's deadline, say so, and not leave the program running.
	fake := filepath.Join(t.TempDir(), "silent-server")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	srv, err := Start(ctx, Options{Binary: fake})
	if err == nil {
		srv.Close()
		t.Fatalf("Start(%s) = nil error; want error", fake)
	}
	if !strings.Contains(err.Error(), "did not answer PING") {
		t.Errorf("Start(%s) error = %q; want it to say the server did not answer PING", fake, err)
	}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("Start(%s) took %v; want it to stop at ctx's deadline (300ms) plus SIGTERM", fake, elapsed)
	}
}

func TestStartPortTaken(t *testing.T) {
	t.Parallel()
	// Hold a port with another server, then launch on it: launch must notice
	// that the answer comes from another process and report errPortTaken.
	other := startServer(t)
	_, port, _ := net.SplitHostPort(other.Addr())
	srv, err := Start(t.Context(), Options{Binary: os.Getenv("RLBENCH_REDIS_SERVER")})
	if err != nil {
		t.Fatalf("Start() error: %v", err)
	}
	defer srv.Close()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.proc.stop()
	srv.proc = nil
	srv.addr = other.Addr()
	srv.port, err = strconv.Atoi(port)
	if err != nil {
		t.Fatalf("port of %s: %v", other.Addr(), err)
	}
	proc, _, err := srv.launch(t.Context())
	if err == nil {
		proc.stop()
		t.Fatalf("launch on taken port %s = nil error; want errPortTaken", other.Addr())
	}
	if !errors.Is(err, errPortTaken) {
		t.Errorf("launch on taken port %s = %v; want errPortTaken", other.Addr(), err)
	}
}

func TestProbe(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := t.Context()
	got, err := Probe(ctx, srv.Addr(), "", 0)
	if err != nil {
		t.Fatalf("Probe(%s) error: %v", srv.Addr(), err)
	}
	if got != srv.Info() {
		t.Errorf("Probe(%s) = %+v; want %+v", srv.Addr(), got, srv.Info())
	}
	if _, err := Probe(ctx, srv.Addr(), "", 1); err != nil {
		t.Errorf("Probe(%s, db 1) = %v; want nil", srv.Addr(), err)
	}

	if err := client(t, srv.Addr()).ConfigSet(ctx, "requirepass", "s3cret").Err(); err != nil {
		t.Fatalf("CONFIG SET requirepass: %v", err)
	}
	if _, err := Probe(ctx, srv.Addr(), "wrong", 0); err == nil || !strings.Contains(err.Error(), srv.Addr()) {
		t.Errorf("Probe(%s, wrong password) = %v; want an error naming the address", srv.Addr(), err)
	}
	if _, err := Probe(ctx, srv.Addr(), "s3cret", 0); err != nil {
		t.Errorf("Probe(%s, right password) = %v; want nil", srv.Addr(), err)
	}
}

func TestProbeClosedPort(t *testing.T) {
	t.Parallel()
	addr := porttest.Refused(t)
	_, err := Probe(t.Context(), addr, "", 0)
	if err == nil {
		t.Fatalf("Probe(%s) = nil error; want connection refused", addr)
	}
	if want := "connect to " + addr + ": "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Probe(%s) error = %q; want prefix %q", addr, err, want)
	}
}

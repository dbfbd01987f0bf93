package main

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/redisserver"
)

// startTLS starts a private TLS server for t, with a user "checker"
// (password "pw") who may do anything; it skips t when the binary has no
// TLS.
func startTLS(t *testing.T, mutual bool) (*redisserver.Server, redisserver.TLSFiles) {
	t.Helper()
	srv, err := redisserver.Start(t.Context(), redisserver.Options{Binary: os.Getenv("RLBENCH_REDIS_SERVER"), TLS: &redisserver.TLSOptions{ClientCerts: mutual}})
	if errors.Is(err, redisserver.ErrNoTLS) {
		t.Skipf("RLBENCH_REDIS_SERVER is built without TLS: %v", err)
	}
	if err != nil {
		t.Fatalf("start TLS server: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	files, _ := srv.TLS()
	cfg, err := files.ClientConfig(mutual)
	if err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), TLSConfig: cfg, DisableIdentity: true})
	t.Cleanup(func() { admin.Close() })
	if err := admin.Do(t.Context(), "ACL", "SETUSER", "checker", "on", ">pw", "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	return srv, files
}

// TestVerifyOverTLSAsAUser runs `rlbench verify` against a mutual-TLS
// server, logged in as an ACL user through a rediss:// URL: the observer
// and both clients connect with the same settings.
func TestVerifyOverTLSAsAUser(t *testing.T) {
	t.Parallel()
	srv, files := startTLS(t, true)
	code, stdout, stderr := verifyCLI(t, "--url", "rediss://checker:pw@"+srv.Addr(), "--cacert", files.CACert, "--cert", files.ClientCert, "--key", files.ClientKey,
		"--strategy", "lua", "--client", "go-redis,rueidis")
	if code != exitOK {
		t.Fatalf("verify over TLS = %d; want %d\nstdout:\n%s\nstderr:\n%s", code, exitOK, stdout, stderr)
	}
	for _, want := range []string{"lua", "go-redis", "rueidis", srv.Addr()} {
		if !strings.Contains(stdout, want) {
			t.Errorf("verify over TLS: stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout+stderr, ":pw@") {
		t.Errorf("verify printed the password:\n%s%s", stdout, stderr)
	}
}

// TestVerifyConnectionBadInput: what stops a connection at the door is
// exit 2, named by its flag, before any check runs.
func TestVerifyConnectionBadInput(t *testing.T) {
	t.Parallel()
	srv, files := startTLS(t, false)
	otherCA, err := redisserver.WriteTLSFiles(t.TempDir(), redisserver.TLSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"wrong CA", []string{"--addr", srv.Addr(), "--tls", "--cacert", otherCA.CACert, "--user", "checker", "--password", "pw"}, []string{"--cacert", "unknown authority"}},
		{"plain client, TLS server", []string{"--addr", srv.Addr()}, []string{"TLS"}},
		{"wrong password in the URL", []string{"--url", "rediss://checker:nope@" + srv.Addr(), "--cacert", files.CACert}, []string{"--url", "WRONGPASS"}},
		{"unreachable URL", []string{"--url", "redis://" + closedAddr(t)}, []string{"--url", "cannot connect"}},
		{"TLS without a server", []string{"--tls", "--cacert", files.CACert}, []string{"--tls", "existing server"}},
		{"two URLs", []string{"--url", "redis://" + srv.Addr(), "--url", "redis://" + srv.Addr()}, []string{"--url", "one server"}},
		{"URL and addr", []string{"--url", "redis://" + srv.Addr(), "--addr", srv.Addr()}, []string{"--url and --addr"}},
		{"sentinel", []string{"--sentinel", "m@" + srv.Addr()}, []string{"--sentinel"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := verifyCLI(t, tc.args...)
			if code != exitUsage {
				t.Fatalf("verify %q = %d; want %d\nstdout:\n%s\nstderr:\n%s", tc.args, code, exitUsage, stdout, stderr)
			}
			for _, want := range tc.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("verify %q: stderr = %q; want it to contain %q", tc.args, stderr, want)
				}
			}
			if strings.Contains(stderr, "nope") {
				t.Errorf("verify %q: stderr = %q; want no password in it", tc.args, stderr)
			}
		})
	}
}

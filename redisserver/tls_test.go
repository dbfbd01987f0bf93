package redisserver

import (
	"crypto/tls"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlbench/rlbench/serverinfo"
)

// startTLS starts a TLS server with o for t, or skips t when the binary is
// built without TLS (the ../shared/redis builds are).
func startTLS(t *testing.T, o TLSOptions) *Server {
	t.Helper()
	srv, err := Start(t.Context(), Options{Binary: os.Getenv("RLBENCH_REDIS_SERVER"), TLS: &o})
	if errors.Is(err, ErrNoTLS) {
		t.Skipf("the redis-server in RLBENCH_REDIS_SERVER is built without TLS: %v", err)
	}
	if err != nil {
		t.Fatalf("Start(TLS %+v) error: %v", o, err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// tlsClient returns a go-redis client to srv with cfg, closed at the end of t.
func tlsClient(t *testing.T, srv *Server, cfg *tls.Config) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), TLSConfig: cfg, DisableIdentity: true, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestStartTLS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		opts     TLSOptions
		withCert bool // the client presents the client certificate
		wantErr  string
	}{
		// One-way TLS: the client verifies the server with the CA.
		{name: "one-way", opts: TLSOptions{}},
		// Mutual TLS with the client certificate.
		{name: "mutual", opts: TLSOptions{ClientCerts: true}, withCert: true},
		// Mutual TLS without one: the server refuses.
		{name: "mutual without a client certificate", opts: TLSOptions{ClientCerts: true}, wantErr: "certificate required"},
		// An expired server certificate: the client refuses.
		{name: "expired", opts: TLSOptions{NotAfter: time.Now().Add(-time.Hour)}, wantErr: "expired"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startTLS(t, tc.opts)
			files, ok := srv.TLS()
			if !ok {
				t.Fatalf("TLS() = _, false; want the files")
			}
			cfg, err := files.ClientConfig(tc.withCert)
			if err != nil {
				t.Fatal(err)
			}
			err = tlsClient(t, srv, cfg).Ping(t.Context()).Err()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("PING over TLS = %v; want PONG", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("PING over TLS = %v; want an error containing %q", err, tc.wantErr)
			}
			// The plain port is off: a plain client gets no PONG.
			if err := client(t, srv.Addr()).Ping(t.Context()).Err(); err == nil {
				t.Errorf("plain PING to the TLS port = PONG; want an error")
			}
		})
	}
}

func TestStartTLSRestart(t *testing.T) {
	t.Parallel()
	srv := startTLS(t, TLSOptions{})
	if err := srv.Restart(t.Context()); err != nil {
		t.Fatalf("Restart() = %v; want nil", err)
	}
	files, _ := srv.TLS()
	cfg, err := files.ClientConfig(false)
	if err != nil {
		t.Fatal(err)
	}
	if err := tlsClient(t, srv, cfg).Ping(t.Context()).Err(); err != nil {
		t.Fatalf("PING after Restart = %v; want PONG", err)
	}
}

func TestPlainServerHasNoTLS(t *testing.T) {
	t.Parallel()
	if _, ok := startServer(t).TLS(); ok {
		t.Errorf("TLS() of a plain server = _, true; want false")
	}
}

func TestReadInfoOverTLS(t *testing.T) {
	t.Parallel()
	srv := startTLS(t, TLSOptions{})
	files, _ := srv.TLS()
	cfg, err := files.ClientConfig(false)
	if err != nil {
		t.Fatal(err)
	}
	info, err := serverinfo.Read(t.Context(), tlsClient(t, srv, cfg))
	if err != nil || info != srv.Info() {
		t.Errorf("serverinfo.Read() = %+v, %v; want %+v", info, err, srv.Info())
	}
}

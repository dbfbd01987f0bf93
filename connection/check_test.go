package connection_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/internal/porttest"
	"github.com/rlbench/rlbench/redisserver"
)

// start starts a private server for t with args and tlsOpts (nil: plain),
// skipping t when TLS is asked of a binary built without it.
func start(t testing.TB, tlsOpts *redisserver.TLSOptions, args ...string) *redisserver.Server {
	t.Helper()
	srv, err := redisserver.Start(t.Context(), redisserver.Options{Binary: os.Getenv("RLBENCH_REDIS_SERVER"), Args: args, TLS: tlsOpts})
	if errors.Is(err, redisserver.ErrNoTLS) {
		t.Skipf("RLBENCH_REDIS_SERVER is built without TLS: %v", err)
	}
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// tlsFiles returns srv's CA, and its client certificate when withCert.
func tlsFiles(t *testing.T, srv *redisserver.Server, withCert bool) *connection.TLSFiles {
	t.Helper()
	f, ok := srv.TLS()
	if !ok {
		t.Fatalf("%s runs no TLS", srv.Addr())
	}
	files := &connection.TLSFiles{CACert: f.CACert}
	if withCert {
		files.Cert, files.Key = f.ClientCert, f.ClientKey
	}
	return files
}

func TestCheck(t *testing.T) {
	t.Parallel()
	plain := start(t, nil, "--requirepass", "rightpass")
	if err := redis.NewClient(&redis.Options{Addr: plain.Addr(), Password: "rightpass", DisableIdentity: true}).
		Do(t.Context(), "acl", "setuser", "alice", "on", ">alicepass", "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	if err := redis.NewClient(&redis.Options{Addr: plain.Addr(), Password: "rightpass", DisableIdentity: true}).
		Do(t.Context(), "acl", "setuser", "bob", "on", ">bobpass", "~*", "+@all", "-select").Err(); err != nil {
		t.Fatal(err)
	}
	oneWay := start(t, &redisserver.TLSOptions{})
	mutual := start(t, &redisserver.TLSOptions{ClientCerts: true})
	expired := start(t, &redisserver.TLSOptions{NotAfter: time.Now().Add(-time.Hour)})
	otherCA, err := redisserver.WriteTLSFiles(t.TempDir(), redisserver.TLSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := porttest.Refused(t)
	rediss := func(addr string, files *connection.TLSFiles) connection.Settings {
		ep, err := connection.ParseURL("rediss://"+addr, connection.Settings{TLS: files})
		if err != nil {
			t.Fatal(err)
		}
		return ep.Settings
	}

	tests := []struct {
		name     string
		addr     string
		settings connection.Settings
		wantKind error  // nil: connection.Check succeeds
		wantFlag string // the flag the error names
		// wantSaid is part of what the server said; "a|b" accepts either.
		wantSaid string
		// wantHint is part of the error's hint; "" checks none.
		wantHint string
	}{
		{name: "plain", addr: plain.Addr(), settings: connection.Settings{Password: "rightpass"}},
		{name: "acl user", addr: plain.Addr(), settings: connection.Settings{Username: "alice", Password: "alicepass"}},
		{name: "one-way tls", addr: oneWay.Addr(), settings: connection.Settings{TLS: tlsFiles(t, oneWay, false)}},
		{name: "mutual tls", addr: mutual.Addr(), settings: connection.Settings{TLS: tlsFiles(t, mutual, true)}},
		{name: "rediss url", addr: oneWay.Addr(), settings: rediss(oneWay.Addr(), tlsFiles(t, oneWay, false))},
		{name: "insecure skips an expired certificate", addr: expired.Addr(), settings: connection.Settings{TLS: &connection.TLSFiles{Insecure: true}}},

		{name: "wrong password", addr: plain.Addr(), settings: connection.Settings{Password: "wrong"},
			wantKind: connection.ErrAuth, wantFlag: "--user/--password", wantSaid: "WRONGPASS"},
		{name: "wrong user", addr: plain.Addr(), settings: connection.Settings{Username: "mallory", Password: "alicepass"},
			wantKind: connection.ErrAuth, wantFlag: "--user/--password", wantSaid: "WRONGPASS"},
		{name: "no password", addr: plain.Addr(), settings: connection.Settings{},
			wantKind: connection.ErrNoAuth, wantFlag: "--password", wantSaid: "NOAUTH"},
		{name: "bad db", addr: plain.Addr(), settings: connection.Settings{Password: "rightpass", DB: 99},
			wantKind: connection.ErrDB, wantFlag: "--db", wantSaid: "out of range"},
		{name: "db the user may not select", addr: plain.Addr(), settings: connection.Settings{Username: "bob", Password: "bobpass", DB: 3},
			wantKind: connection.ErrDB, wantFlag: "--db", wantSaid: "NOPERM", wantHint: "rlbench acl --db 3"},
		{name: "tls client, plain server", addr: plain.Addr(), settings: connection.Settings{TLS: &connection.TLSFiles{Insecure: true}},
			wantKind: connection.ErrNotTLS, wantFlag: "--tls", wantSaid: "it "},
		{name: "rediss url, plain server", addr: plain.Addr(), settings: rediss(plain.Addr(), &connection.TLSFiles{Insecure: true}),
			wantKind: connection.ErrNotTLS, wantFlag: "--url", wantSaid: "it "},
		{name: "plain client, tls server", addr: oneWay.Addr(), settings: connection.Settings{},
			wantKind: connection.ErrTLSRequired, wantFlag: "--tls", wantSaid: "closed the connection"},
		{name: "wrong ca", addr: oneWay.Addr(), settings: connection.Settings{TLS: &connection.TLSFiles{CACert: otherCA.CACert}},
			wantKind: connection.ErrUnknownAuthority, wantFlag: "--cacert", wantSaid: "unknown authority"},
		{name: "expired certificate", addr: expired.Addr(), settings: connection.Settings{TLS: tlsFiles(t, expired, false)},
			wantKind: connection.ErrCertExpired, wantFlag: "--insecure", wantSaid: "expired"},
		{name: "wrong sni", addr: oneWay.Addr(), settings: connection.Settings{TLS: &connection.TLSFiles{CACert: tlsFiles(t, oneWay, false).CACert, SNI: "redis.example"}},
			wantKind: connection.ErrCertName, wantFlag: "--sni", wantSaid: "redis.example"},
		// In TLS 1.3 the server refuses a client certificate after the
		// client has finished its handshake; the server's alert is lost
		// when its reset or close reaches the client first (about one run in
		// five).
		{name: "mutual tls without a client certificate", addr: mutual.Addr(), settings: connection.Settings{TLS: tlsFiles(t, mutual, false)},
			wantKind: connection.ErrClientCert, wantFlag: "--cert/--key", wantSaid: "certificate required|connection reset by peer|EOF"},
		{name: "client certificate from another ca", addr: mutual.Addr(),
			settings: connection.Settings{TLS: &connection.TLSFiles{CACert: tlsFiles(t, mutual, false).CACert, Cert: otherCA.ClientCert, Key: otherCA.ClientKey}},
			wantKind: connection.ErrClientCert, wantFlag: "--cert/--key", wantSaid: "tls:|connection reset by peer|EOF"},
		{name: "nothing listening", addr: closedAddr, settings: connection.Settings{},
			wantKind: connection.ErrUnreachable, wantFlag: "--addr", wantSaid: "refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := connection.Check(t.Context(), tc.addr, tc.settings)
			if tc.wantKind == nil {
				if err != nil {
					t.Fatalf("connection.Check(%s, %v) = %v; want nil", tc.addr, tc.settings, err)
				}
				return
			}
			t.Logf("connection.Check() = %v", err)
			var ce *connection.CheckError
			if !errors.Is(err, tc.wantKind) || !errors.As(err, &ce) {
				t.Fatalf("connection.Check(%s, %v) = %v; want a *connection.CheckError of kind %q", tc.addr, tc.settings, err, tc.wantKind)
			}
			said := slices.ContainsFunc(strings.Split(tc.wantSaid, "|"), func(w string) bool { return strings.Contains(ce.Said, w) })
			if ce.Flag != tc.wantFlag || !strings.HasPrefix(err.Error(), tc.wantFlag+": ") || !said {
				t.Errorf("connection.Check(%s, %v) = %q; want flag %q first and %q in what the server said", tc.addr, tc.settings, err, tc.wantFlag, tc.wantSaid)
			}
			if !strings.Contains(ce.Hint, tc.wantHint) {
				t.Errorf("connection.Check(%s, %v) hint = %q; want %q in it", tc.addr, tc.settings, ce.Hint, tc.wantHint)
			}
			for _, pw := range []string{"rightpass", "alicepass", "wrong"} {
				if strings.Contains(err.Error(), pw) {
					t.Errorf("connection.Check() error %q shows the password %q", err, pw)
				}
			}
		})
	}
}

// TestClientsOverTLS connects both clients with the options connection.Settings
// builds, over mutual TLS, from a rediss:// URL.
func TestClientsOverTLS(t *testing.T) {
	t.Parallel()
	srv := start(t, &redisserver.TLSOptions{ClientCerts: true}, "--requirepass", "pw")
	ep, err := connection.ParseURL("rediss://:pw@"+srv.Addr()+"/1", connection.Settings{TLS: tlsFiles(t, srv, true)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	gro, err := ep.Settings.GoRedis(ep.Addr)
	if err != nil {
		t.Fatal(err)
	}
	gro.DisableIdentity = true
	rdb := redis.NewClient(gro)
	defer rdb.Close()
	if err := rdb.Incr(ctx, "k").Err(); err != nil {
		t.Errorf("go-redis INCR over %s = %v; want nil", ep, err)
	}
	ro, err := ep.Settings.Rueidis([]string{ep.Addr})
	if err != nil {
		t.Fatal(err)
	}
	ro.ForceSingleClient, ro.DisableCache = true, true
	rc, err := rueidis.NewClient(ro)
	if err != nil {
		t.Fatalf("rueidis over %s: %v", ep, err)
	}
	defer rc.Close()
	n, err := rc.Do(ctx, rc.B().Incr().Key("k").Build()).AsInt64()
	if err != nil || n != 2 {
		t.Errorf("rueidis INCR over %s = %d, %v; want 2 (db 1, after go-redis's)", ep, n, err)
	}
}

func TestMasterAddr(t *testing.T) {
	t.Parallel()
	s, err := redisserver.StartSentinel(t.Context(), redisserver.SentinelOptions{Binary: os.Getenv("RLBENCH_REDIS_SERVER")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	target := connection.Sentinel{Master: s.MasterName(), Addrs: s.SentinelAddrs()}
	got, err := connection.MasterAddr(t.Context(), target, connection.Settings{})
	if want := s.Nodes()[0].Addr(); err != nil || got != want {
		t.Errorf("connection.MasterAddr(%s) = %q, %v; want %q", target, got, err, want)
	}
	if err := connection.Check(t.Context(), got, connection.Settings{}); err != nil {
		t.Errorf("connection.Check(master) = %v; want nil", err)
	}
	target.Master = "nosuchmaster"
	if _, err := connection.MasterAddr(t.Context(), target, connection.Settings{}); !errors.Is(err, connection.ErrUnknownMaster) || !strings.HasPrefix(err.Error(), "--sentinel ") {
		t.Errorf("connection.MasterAddr(unknown master) = %v; want connection.ErrUnknownMaster naming --sentinel", err)
	}
}

func TestCheckUnreachableURLNamesURL(t *testing.T) {
	t.Parallel()
	addr := porttest.Refused(t)
	ep, err := connection.ParseURL("redis://"+addr, connection.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if err := connection.Check(t.Context(), ep.Addr, ep.Settings); !errors.Is(err, connection.ErrUnreachable) || !strings.HasPrefix(err.Error(), "--url: ") {
		t.Errorf("connection.Check(%s) = %v; want connection.ErrUnreachable naming --url", ep, err)
	}
}

package connection

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const secret = "s3cr=t:p@ss"

func TestParseURL(t *testing.T) {
	t.Parallel()
	base := Settings{Username: "flaguser", Password: "flagpass", DB: 3, TLS: &TLSFiles{CACert: "ca.pem"}}
	tests := []struct {
		name string
		raw  string
		base Settings
		want Endpoint
	}{
		// Host and port only: the flags' settings stay.
		{name: "plain", raw: "redis://127.0.0.1:6380", base: Settings{Password: "p"},
			want: Endpoint{Addr: "127.0.0.1:6380", Settings: Settings{Password: "p"}}},
		// No port means 6379.
		{name: "default port", raw: "redis://db.local",
			want: Endpoint{Addr: "db.local:6379"}},
		// A label, a user, a password with escapes and a db: all replace the flags'.
		{name: "label user password db", raw: "staging=redis://alice:s3cr%3Dt%3Ap%40ss@10.0.0.1:6379/2", base: base,
			want: Endpoint{Label: "staging", Addr: "10.0.0.1:6379", Settings: Settings{Username: "alice", Password: secret, DB: 2, TLS: base.TLS, urlAuth: true, urlDB: true}}},
		// user@ is a user without a password.
		{name: "user only", raw: "redis://bob@h:1",
			want: Endpoint{Addr: "h:1", Settings: Settings{Username: "bob", urlAuth: true}}},
		// :password@ is the default user.
		{name: "password only", raw: "redis://:pw@h:1",
			want: Endpoint{Addr: "h:1", Settings: Settings{Password: "pw", urlAuth: true}}},
		// rediss:// turns TLS on and keeps the flags' TLS files.
		{name: "rediss keeps tls files", raw: "rediss://h:6390", base: Settings{TLS: &TLSFiles{CACert: "ca.pem", SNI: "x"}},
			want: Endpoint{Addr: "h:6390", Settings: Settings{TLS: &TLSFiles{CACert: "ca.pem", SNI: "x"}, urlTLS: true}}},
		// rediss:// without --tls flags: TLS with the defaults.
		{name: "rediss", raw: "rediss://h:6390",
			want: Endpoint{Addr: "h:6390", Settings: Settings{TLS: &TLSFiles{}, urlTLS: true}}},
		// IPv6 in brackets.
		{name: "ipv6", raw: "redis://[::1]:7000/0",
			want: Endpoint{Addr: "[::1]:7000", Settings: Settings{urlDB: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseURL(tc.raw, tc.base)
			if err != nil {
				t.Fatalf("ParseURL(%q) error: %v", tc.raw, err)
			}
			if got.Label != tc.want.Label || got.Addr != tc.want.Addr || !sameSettings(got.Settings, tc.want.Settings) {
				t.Errorf("ParseURL(%q) = %#v; want %#v", tc.raw, got, tc.want)
			}
		})
	}
}

// sameSettings compares every field, the password and the TLS files' values included.
func sameSettings(a, b Settings) bool {
	if (a.TLS == nil) != (b.TLS == nil) || (a.TLS != nil && *a.TLS != *b.TLS) {
		return false
	}
	if !a.fromURL {
		return false // ParseURL marks every endpoint's settings as a URL's
	}
	a.TLS, b.TLS, a.fromURL = nil, nil, false
	return a == b
}

func TestParseURLErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw, want string
	}{
		{name: "scheme", raw: "http://u:" + secret + "@h:1", want: `scheme "http"`},
		{name: "no scheme", raw: "h:6379", want: "scheme"},
		{name: "bad port", raw: "redis://u:" + secret + "@h:99999", want: "port"},
		{name: "bad db", raw: "redis://h:1/x", want: `db "x"`},
		{name: "query", raw: "redis://h:1?db=2", want: "no query"},
		{name: "no host", raw: "redis://:1", want: "no host"},
		{name: "empty label", raw: "=redis://h:1", want: "empty label"},
		{name: "unparsable", raw: "redis://u:" + secret + "@h:1:2:3", want: "brackets"},
		// Passwords that were not percent-encoded: url.Parse's own reason
		// would quote a piece of them.
		{name: "slash in password", raw: "rediss://weird:top/s3cret@127.0.0.1:1", want: "percent-encoded"},
		{name: "percent in password", raw: "rediss://weird:pa%ss3cr@127.0.0.1:1", want: "percent-encoded"},
		{name: "@, : and / in password", raw: "rediss://weird:p@ss:w/rd%X@127.0.0.1:1", want: "percent-encoded"},
		// Digits before the '/': url.Parse takes them for the port and the
		// rest of the password for the path (the db).
		{name: "digits and / in password", raw: "redis://admin:2024/s3cret!@h:6379", want: "percent-encoded"},
		{name: "mistyped scheme, no host", raw: "redis:/u:" + secret + "@h:1", want: "xxxxx@h:1"},
		{name: "mistyped scheme, opaque", raw: "rediss:u:" + secret + "@h:1", want: "xxxxx@h:1"},
		{name: "no scheme", raw: "redis//u:" + secret + "@h:1", want: "xxxxx@h:1"},
		// Other clients' forms: a password in the query.
		{name: "password in the query", raw: "redis://h:1/0?password=s3cret", want: "h:1/0?xxxxx"},
		{name: "unix socket", raw: "unix:///tmp/x.sock?password=s3cret", want: `scheme "unix"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseURL(tc.raw, Settings{})
			if !errors.Is(err, ErrURL) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "--url ") {
				t.Fatalf("ParseURL(%q) = %v; want ErrURL starting with --url, containing %q", tc.raw, err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cr") || strings.Contains(err.Error(), "p@ss") {
				t.Errorf("ParseURL(%q) error %q shows the password", tc.raw, err)
			}
		})
	}
}

func TestNoPasswordInStrings(t *testing.T) {
	t.Parallel()
	ep, err := ParseURL("prod=rediss://alice:"+strings.ReplaceAll(secret, "@", "%40")+"@h:6390/1", Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ep.String(), "prod=rediss://alice:xxxxx@h:6390/1"; got != want {
		t.Errorf("Endpoint.String() = %q; want %q", got, want)
	}
	if got, want := ep.Settings.String(), "user=alice password=set db=1 tls=on"; got != want {
		t.Errorf("Settings.String() = %q; want %q", got, want)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, v := range []any{ep, ep.Settings, &ep.Settings} {
			if s := fmt.Sprintf(verb, v); strings.Contains(s, "s3cr") {
				t.Errorf("Sprintf(%q, %T) = %q; shows the password", verb, v, s)
			}
		}
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"redis://u:pw@h:1/2", "redis://u:xxxxx@h:1/2"},
		{"redis://:pw@h:1", "redis://:xxxxx@h:1"},
		{"redis://u@h:1", "redis://u@h:1"},
		{"redis://h:1/a@b", "redis://h:xxxxx@b"}, // no such Redis URL: masked rather than shown
		{"rediss://weird:top/secret@h:1", "rediss://weird:xxxxx@h:1"},
		{"rediss://weird:p@ss:w/rd%X@h:1", "rediss://weird:xxxxx@h:1"},
		{"redis://u:p@w@h:1", "redis://u:xxxxx@h:1"},
		{"not a url", "not a url"},
	}
	for _, tc := range tests {
		if got := RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseSentinel(t *testing.T) {
	t.Parallel()
	label, s, err := ParseSentinel("eu=mymaster@10.0.0.1:26379,10.0.0.2:26379")
	if err != nil || label != "eu" || s.Master != "mymaster" || strings.Join(s.Addrs, ",") != "10.0.0.1:26379,10.0.0.2:26379" {
		t.Errorf("ParseSentinel() = %q, %+v, %v; want eu, mymaster, two addresses", label, s, err)
	}
	if got, want := s.String(), "mymaster@10.0.0.1:26379,10.0.0.2:26379"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	for _, bad := range []string{"mymaster", "@h:1", "m@", "m@h", "m@h:0", "=m@h:1", "m@h:1,"} {
		if _, _, err := ParseSentinel(bad); !errors.Is(err, ErrSentinel) || !strings.HasPrefix(err.Error(), "--sentinel") {
			t.Errorf("ParseSentinel(%q) = %v; want ErrSentinel naming --sentinel", bad, err)
		}
	}
}

// TestParseSentinelHidesCredentials checks that a --sentinel with a
// password where the master's name goes (two '@') is refused without
// echoing it.
func TestParseSentinelHidesCredentials(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"mymaster@weird:top/" + secret + "@127.0.0.1:26379", "u:s3cret@127.0.0.1:26379", "redis://u:s3cret@127.0.0.1:26379", "=u:s3cret@127.0.0.1:26379", "u:s3cret@"} {
		_, _, err := ParseSentinel(spec)
		if !errors.Is(err, ErrSentinel) || strings.Contains(err.Error(), "s3cr") || strings.Contains(err.Error(), "top/") {
			t.Errorf("ParseSentinel(%q) = %v; want ErrSentinel, not echoing the password", spec, err)
		}
	}
}

func TestTLSConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files TLSFiles
		want  string
	}{
		{name: "missing ca", files: TLSFiles{CACert: "/nonexistent/ca.pem"}, want: "--cacert"},
		{name: "not pem", files: TLSFiles{CACert: "connection_test.go"}, want: "--cacert connection_test.go: no PEM"},
		{name: "cert without key", files: TLSFiles{Cert: "c.pem"}, want: "--cert needs --key"},
		{name: "key without cert", files: TLSFiles{Key: "k.pem"}, want: "--key needs --cert"},
		{name: "unreadable pair", files: TLSFiles{Cert: "/nonexistent/c", Key: "/nonexistent/k"}, want: "--cert /nonexistent/c, --key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := tc.files.Config(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Config() = %v; want an error containing %q", err, tc.want)
			}
		})
	}
	var none *TLSFiles
	if cfg, err := none.Config(); cfg != nil || err != nil {
		t.Errorf("(*TLSFiles)(nil).Config() = %v, %v; want nil, nil", cfg, err)
	}
	cfg, err := (&TLSFiles{Insecure: true, SNI: "redis.local"}).Config()
	if err != nil || !cfg.InsecureSkipVerify || cfg.ServerName != "redis.local" {
		t.Errorf("Config(insecure, sni) = %+v, %v; want InsecureSkipVerify and ServerName redis.local", cfg, err)
	}
}

// TestMaskCredentials checks that no part of a password survives.
func TestMaskCredentials(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"redis://user:secret@host:6379/0", "redis://xxxxx@host:6379/0"},
		{"rediss://:p/w=x@host:6379", "rediss://xxxxx@host:6379"},
		{"prod=user:s3cr=t@host:1", "xxxxx@host:1"},
		{"host:6379", "host:6379"},
	}
	for _, tc := range tests {
		if got := MaskCredentials(tc.in); got != tc.want {
			t.Errorf("MaskCredentials(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

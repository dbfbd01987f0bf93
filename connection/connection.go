// Package connection holds how rlbench reaches a Redis server: the ACL user
// and password, the database, TLS (CA, mutual-TLS certificate, SNI,
// verification) and Sentinel, read from flags or from a
// redis://[user[:password]@]host:port[/db] URL (rediss:// for TLS).
//
// Settings turns into the options of each client (go-redis Options,
// ClusterOptions, FailoverOptions, UniversalOptions; rueidis ClientOption,
// Sentinel included), and Check classifies, before any load, what stops a
// connection at the door: TLS on one side only, a wrong CA, an expired
// certificate, a wrong user or password. No String method or error of this
// package prints a password.
package connection

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// DefaultPort is the port a URL without one means.
const DefaultPort = 6379

// ErrURL is returned, wrapped, by ParseURL for a URL it cannot take. Its
// message gives the accepted form.
var ErrURL = errors.New("want [LABEL=]redis://[user[:password]@]host[:port][/db] or rediss://... for TLS")

// Settings is how to log in to a server and what to connect with. The zero
// value connects over plain TCP as the default user with no password, to
// database 0.
type Settings struct {
	// Username is the ACL user (--user); "" means the default user.
	Username string
	// Password authenticates Username (--password, or REDISCLI_AUTH); ""
	// sends no AUTH.
	Password string
	// DB is the database SELECTed on connect (--db); a cluster has only 0.
	DB int
	// TLS, when not nil, makes every connection use TLS (--tls, or a
	// rediss:// URL) with these files and choices.
	TLS *TLSFiles

	// Whether a URL named the server, and which fields it set, so that
	// errors name --url rather than a flag.
	fromURL, urlAuth, urlDB, urlTLS bool
}

// TLSFiles are the TLS choices of the redis-cli flags of the same names.
// The zero value verifies the server against the system's CAs and presents
// no client certificate.
type TLSFiles struct {
	// CACert is a PEM file of the CAs that may sign the server's certificate
	// (--cacert); "" means the system's CAs.
	CACert string
	// Cert and Key are a PEM client certificate and its key, for mutual TLS
	// (--cert, --key); both or neither.
	Cert, Key string
	// Insecure skips the verification of the server's certificate
	// (--insecure), as redis-cli does.
	Insecure bool
	// SNI is the server name sent in the handshake and verified in the
	// certificate (--sni); "" means the host of each address.
	SNI string
}

// Endpoint is one server named by a URL.
type Endpoint struct {
	// Label is the LABEL= before the URL, or "" when there is none.
	Label string
	// Addr is host:port.
	Addr string
	// Settings are the flags' settings with what the URL says put over them.
	Settings Settings
}

// ParseURL reads [LABEL=]redis://[user[:password]@]host[:port][/db] (or
// rediss:// for TLS) as --url takes it. base holds the settings of the
// other flags; the URL's user, password and db replace base's, and
// rediss:// turns TLS on (keeping base's TLS files) where redis:// leaves
// base.TLS as the flags set it. "user@" is a user whose password is
// base's (--password or $REDISCLI_AUTH, as redis-cli takes it);
// ":password@" is the default user. Percent-escapes are decoded. Errors
// wrap ErrURL and quote the URL with its password replaced by "xxxxx".
func ParseURL(raw string, base Settings) (Endpoint, error) {
	label, rest := "", raw
	if eq, scheme := strings.IndexByte(raw, '='), strings.Index(raw, "://"); eq >= 0 && (scheme < 0 || eq < scheme) {
		label, rest = raw[:eq], raw[eq+1:]
		if label == "" {
			return Endpoint{}, urlError(raw, "empty label before '='")
		}
	}
	// A '/', '?' or '#' before the last '@' is a password that was not
	// percent-encoded: url.Parse would end the host there and take the
	// rest of the password for the path (and quote it in the db's error).
	if userinfo, ok := userinfoOf(rest); ok && strings.ContainsAny(userinfo, "/?#") {
		return Endpoint{}, urlError(raw, notEncoded)
	}
	u, err := url.Parse(rest)
	if err != nil {
		if _, ok := userinfoOf(rest); ok {
			// url.Parse's reason quotes the part it could not read, which
			// may be a piece of the password ("invalid port \":top\"").
			return Endpoint{}, urlError(raw, notEncoded)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error quotes the whole URL
		}
		return Endpoint{}, urlError(raw, err.Error())
	}
	ep := Endpoint{Label: label, Settings: base}
	ep.Settings.fromURL = true
	switch u.Scheme {
	case "redis":
	case "rediss":
		tlsFiles := TLSFiles{}
		if base.TLS != nil {
			tlsFiles = *base.TLS
		}
		ep.Settings.TLS, ep.Settings.urlTLS = &tlsFiles, true
	default:
		return Endpoint{}, urlError(raw, fmt.Sprintf("scheme %q", u.Scheme))
	}
	if u.Opaque != "" || u.RawQuery != "" || u.Fragment != "" {
		return Endpoint{}, urlError(raw, "no query, fragment or opaque part is accepted")
	}
	if u.User != nil {
		ep.Settings.Username = u.User.Username()
		if password, ok := u.User.Password(); ok {
			// "user@host" keeps base's password ($REDISCLI_AUTH), as redis-cli does.
			ep.Settings.Password = password
		}
		ep.Settings.urlAuth = true
	}
	if ep.Addr, err = urlAddr(u); err != nil {
		return Endpoint{}, urlError(raw, err.Error())
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 {
			return Endpoint{}, urlError(raw, fmt.Sprintf("db %q is not a number >= 0", db))
		}
		ep.Settings.DB, ep.Settings.urlDB = n, true
	}
	return ep, nil
}

// urlAddr returns the URL's host:port, with DefaultPort when it has none.
func urlAddr(u *url.URL) (string, error) {
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return "", errors.New("no host")
	}
	if strings.Contains(host, ":") && !strings.HasPrefix(u.Host, "[") {
		return "", fmt.Errorf("host %q: put an IPv6 address in brackets", u.Host)
	}
	if port == "" {
		port = strconv.Itoa(DefaultPort)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q is not 1 to 65535", port)
	}
	return net.JoinHostPort(host, port), nil
}

// notEncoded is why a URL with a user or password ParseURL cannot read
// is refused: its own reasons would quote a piece of the password.
const notEncoded = "does not parse as a URL: a '/', '?', '#', '@', ':' or '%' in the user or password must be percent-encoded (%2F, %3F, %23, %40, %3A, %25)"

// urlError says why raw is not a URL ParseURL takes, without its password:
// RedactURL's, or, for text with an '@' but no "://" (a mistyped
// scheme), nothing before the last '@'; and nothing after a '?' or '#'.
func urlError(raw, why string) error {
	shown := RedactURL(raw)
	if at := strings.LastIndexByte(raw, '@'); at >= 0 && !strings.Contains(raw[:at], "://") {
		shown = MaskCredentials(raw)
	}
	// Other clients take a password in the query (?password=...), which
	// ParseURL refuses: it is not shown either.
	if q := strings.IndexAny(shown, "?#"); q >= 0 {
		shown = shown[:q+1] + "xxxxx"
	}
	return fmt.Errorf("--url %s: %s: %w", shown, why, ErrURL)
}

// MaskCredentials replaces what comes before the last '@' of s, after a
// URL's "scheme://" if any, with "xxxxx": "redis://u:secret@host:6379"
// becomes "redis://xxxxx@host:6379", "u:secret@host:6379"
// "xxxxx@host:6379". For text that may hold credentials and is no URL
// ParseURL takes (a --addr with a password, a mistyped scheme).
func MaskCredentials(s string) string {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return s
	}
	start := 0
	if i := strings.Index(s[:at], "://"); i >= 0 {
		start = i + len("://")
	}
	return s[:start] + "xxxxx" + s[at:]
}

// RedactURL returns raw with the password of its userinfo, if any,
// replaced by "xxxxx", as url.URL.Redacted does; it also works on text
// that does not parse as a URL. The userinfo runs to the last '@': a
// password with a '/' or an '@' that was not percent-encoded is masked
// whole (a Redis URL's path is a db number, which has no '@').
func RedactURL(raw string) string {
	scheme := strings.Index(raw, "://")
	if scheme < 0 {
		return raw
	}
	rest := raw[scheme+3:]
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return raw
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		return raw
	}
	return raw[:scheme+3] + user + ":xxxxx" + rest[at:]
}

// userinfoOf returns what lies between the "://" of raw, a URL, and its
// last '@', and whether there is such a part.
func userinfoOf(raw string) (string, bool) {
	_, rest, ok := strings.Cut(raw, "://")
	at := strings.LastIndexByte(rest, '@')
	if !ok || at < 0 {
		return "", false
	}
	return rest[:at], true
}

// String returns the endpoint as a URL with the password replaced by
// "xxxxx", after "LABEL=" when it has a label.
func (e Endpoint) String() string {
	u := url.URL{Scheme: "redis", Host: e.Addr}
	if e.Settings.TLS != nil {
		u.Scheme = "rediss"
	}
	switch {
	case e.Settings.Password != "":
		u.User = url.UserPassword(e.Settings.Username, "xxxxx")
	case e.Settings.Username != "":
		u.User = url.User(e.Settings.Username)
	}
	if e.Settings.DB != 0 {
		u.Path = "/" + strconv.Itoa(e.Settings.DB)
	}
	s := u.String()
	if e.Label != "" {
		s = e.Label + "=" + s
	}
	return s
}

// String describes the settings without the password, e.g. `user=alice
// password=set db=2 tls=on cacert=ca.crt cert=client.crt sni=redis.local`.
func (s Settings) String() string {
	var parts []string
	if s.Username != "" {
		parts = append(parts, "user="+s.Username)
	}
	if s.Password != "" {
		parts = append(parts, "password=set")
	}
	if s.DB != 0 {
		parts = append(parts, "db="+strconv.Itoa(s.DB))
	}
	if s.TLS == nil {
		return strings.Join(append(parts, "tls=off"), " ")
	}
	parts = append(parts, "tls=on")
	for _, f := range []struct{ name, value string }{
		{"cacert", s.TLS.CACert}, {"cert", s.TLS.Cert}, {"key", s.TLS.Key}, {"sni", s.TLS.SNI},
	} {
		if f.value != "" {
			parts = append(parts, f.name+"="+f.value)
		}
	}
	if s.TLS.Insecure {
		parts = append(parts, "insecure")
	}
	return strings.Join(parts, " ")
}

// FromURL reports whether a URL (ParseURL) named the server these
// settings log in to, so that errors about it name --url.
func (s Settings) FromURL() bool { return s.fromURL }

// GoString is String, so that %#v does not print the password either.
func (s Settings) GoString() string { return "connection.Settings{" + s.String() + "}" }

// flag returns the name of the flag that set a field: "--url" when the URL
// did, else byFlag.
func flag(fromURL bool, byFlag string) string {
	if fromURL {
		return "--url"
	}
	return byFlag
}

package connection

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/excerpt"
)

// ErrSentinel is returned, wrapped, by ParseSentinel for a target it cannot
// take. Its message gives the accepted form.
var ErrSentinel = errors.New("want [LABEL=]MASTER@host:port[,host:port...]: the master's name as the sentinels know it, then one or more sentinels")

// Sentinel names a master that Sentinel manages and the sentinels to ask
// for it.
type Sentinel struct {
	// Master is the master's name as the sentinels know it (sentinel
	// monitor NAME ...).
	Master string
	// Addrs are host:port of one or more sentinels.
	Addrs []string
	// Username and Password log in to the sentinels, which have users of
	// their own (--sentinel-user, --sentinel-password; the command line
	// defaults them to the default user and the master's password); ""
	// sends no AUTH. The master itself
	// takes Settings'. Neither String nor GoString prints them.
	Username, Password string
	// Direct maps a data node's address as the sentinels name it to the
	// address to dial for it instead: a private set-up whose sentinels and
	// replicas reach each node through a fault proxy (the split-brain
	// fault) gives each node's own address, so that the clients and
	// rlbench's own connections reach it directly. Nil dials what the
	// sentinels name.
	Direct map[string]string
}

// Dial dials addr, or the address Direct gives for it, with d and, when
// cfg is not nil, TLS: the dialer of every connection to a data node of
// the set-up (the clients', go-redis' Dialer and rueidis' DialFn).
func (s Sentinel) Dial(ctx context.Context, d *net.Dialer, addr string, cfg *tls.Config) (net.Conn, error) {
	if to, ok := s.Direct[addr]; ok {
		addr = to
	}
	if cfg != nil {
		td := tls.Dialer{NetDialer: d, Config: cfg}
		return td.DialContext(ctx, "tcp", addr)
	}
	return d.DialContext(ctx, "tcp", addr)
}

// GoRedisDialer is Dial as go-redis' Dialer option, with go-redis' default
// dial timeout and keep-alive; nil without Direct, for go-redis' own.
func (s Sentinel) GoRedisDialer(timeout time.Duration, cfg *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if len(s.Direct) == 0 {
		return nil
	}
	d := &net.Dialer{Timeout: cmp.Or(timeout, 5*time.Second), KeepAlive: 5 * time.Minute}
	return func(ctx context.Context, _, addr string) (net.Conn, error) { return s.Dial(ctx, d, addr, cfg) }
}

// direct is the address Direct gives for addr, or addr.
func (s Sentinel) direct(addr string) string {
	if to, ok := s.Direct[addr]; ok {
		return to
	}
	return addr
}

// ParseSentinel reads [LABEL=]MASTER@host:port[,host:port...] as
// --sentinel takes it, and returns the label ("" when there is none).
func ParseSentinel(s string) (label string, target Sentinel, err error) {
	rest := s
	if eq := strings.IndexByte(s, '='); eq >= 0 && eq < strings.IndexByte(s, '@') {
		label, rest = s[:eq], s[eq+1:]
	}
	master, addrs, ok := strings.Cut(rest, "@")
	if strings.Contains(addrs, "@") || strings.ContainsAny(master, ":/") {
		// Credentials or a URL where the name goes ("user:password@host",
		// or a second '@'): not echoed, nor checked further.
		return "", Sentinel{}, fmt.Errorf("--sentinel: a ':' or '/' in the master's name, or a second '@': it takes no credentials or URL (--user, --password or $REDISCLI_AUTH log in to the master, --sentinel-user and --sentinel-password to the sentinels): %w", ErrSentinel)
	}
	switch {
	case label == "" && rest != s:
		return "", Sentinel{}, fmt.Errorf("--sentinel %q: empty label: %w", s, ErrSentinel)
	case !ok || master == "" || addrs == "":
		return "", Sentinel{}, fmt.Errorf("--sentinel %q: %w", s, ErrSentinel)
	}
	for _, addr := range strings.Split(addrs, ",") {
		host, port, err := net.SplitHostPort(addr)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return "", Sentinel{}, fmt.Errorf("--sentinel %q: bad sentinel address %q: %w", s, addr, ErrSentinel)
		}
		target.Addrs = append(target.Addrs, addr)
	}
	target.Master = master
	return label, target, nil
}

// String returns the target in ParseSentinel's form, without the label
// and without credentials.
func (s Sentinel) String() string { return s.Master + "@" + strings.Join(s.Addrs, ",") }

// GoString is String, so that %#v does not print the password either.
func (s Sentinel) GoString() string { return "connection.Sentinel{" + s.String() + "}" }

// ErrUnknownMaster is wrapped by MasterAddr when no sentinel knows the
// master's name.
var ErrUnknownMaster = errors.New("no sentinel knows this master name")

// MasterAddr asks the sentinels of t, in order, for the address of the
// master (SENTINEL GET-MASTER-ADDR-BY-NAME), logging in with t's
// credentials over s's TLS, and returns the first answer (or the address
// t.Direct gives for it): the address a
// pre-flight Check then takes with s. Errors name --sentinel and say what
// each sentinel said.
func MasterAddr(ctx context.Context, t Sentinel, s Settings) (string, error) {
	cfg, err := s.TLS.Config()
	if err != nil {
		return "", err
	}
	var said []string
	unknown := 0
	for _, addr := range t.Addrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr, Username: t.Username, Password: t.Password,
			TLSConfig: cloneTLS(cfg), MaxRetries: -1, DialerRetries: 1, DisableIdentity: true})
		hp, err := sc.GetMasterAddrByName(ctx, t.Master).Result()
		sc.Close()
		switch {
		case err == nil && len(hp) == 2:
			return t.direct(net.JoinHostPort(hp[0], hp[1])), nil
		case errors.Is(err, redis.Nil):
			unknown++
			said = append(said, addr+": no such master")
		case err != nil:
			said = append(said, addr+": "+err.Error())
		default:
			said = append(said, addr+": reply "+excerpt.Text(fmt.Sprintf("%q", hp)))
		}
	}
	if unknown > 0 && unknown == len(t.Addrs) {
		return "", fmt.Errorf("--sentinel %s: %w %q (%s)", t, ErrUnknownMaster, t.Master, strings.Join(said, "; "))
	}
	hint := ""
	if all := strings.Join(said, "; "); strings.Contains(all, "NOAUTH") || strings.Contains(all, "WRONGPASS") {
		hint = "; the sentinels log in with --sentinel-user and --sentinel-password (default: the default user, with the master's --password)"
	}
	return "", fmt.Errorf("--sentinel %s: no sentinel named the master: %s%s", t, strings.Join(said, "; "), hint)
}

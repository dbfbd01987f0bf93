package connection

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Kinds of failure Check tells apart. A *CheckError wraps exactly one.
var (
	// ErrUnreachable: nothing accepts a connection at the address.
	ErrUnreachable = errors.New("cannot connect")
	// ErrNotTLS: TLS was asked for, and the server speaks plain RESP.
	ErrNotTLS = errors.New("the server does not speak TLS")
	// ErrTLSRequired: TLS was not asked for, and the server speaks only TLS.
	ErrTLSRequired = errors.New("the server speaks only TLS")
	// ErrUnknownAuthority: the server's certificate is not signed by a CA
	// the client trusts.
	ErrUnknownAuthority = errors.New("the server's certificate is signed by an unknown authority")
	// ErrCertExpired: the server's certificate has expired (or is not valid yet).
	ErrCertExpired = errors.New("the server's certificate has expired or is not yet valid")
	// ErrCertName: the server's certificate is not valid for the name the
	// client asked for.
	ErrCertName = errors.New("the server's certificate is not valid for this name")
	// ErrClientCert: the server wants a client certificate, or refused the
	// one it got (mutual TLS).
	ErrClientCert = errors.New("the server refused the client certificate, or wants one")
	// ErrTLSHandshake: another TLS failure.
	ErrTLSHandshake = errors.New("the TLS handshake failed")
	// ErrAuth: the server refused the user and password.
	ErrAuth = errors.New("the server refused the login")
	// ErrNoAuth: the server wants a password and none was given.
	ErrNoAuth = errors.New("the server requires a password")
	// ErrDB: the server refused to SELECT the database.
	ErrDB = errors.New("the server refused the database")
	// ErrProtocol: the server did not answer as a Redis server does.
	ErrProtocol = errors.New("the server did not answer PING as Redis does")
	// ErrNoAnswer: the server accepted the connection, then answered
	// nothing before the check's timeout.
	ErrNoAnswer = errors.New("the server accepted the connection but did not answer")
)

// ErrCheckInterrupted is returned, wrapped with the context's error, when
// the context of Check was cancelled (an interrupt) before the server
// answered: it is not the server's fault, and it is no *CheckError.
var ErrCheckInterrupted = errors.New("login check interrupted")

// CheckTimeout bounds Check when its context has no deadline.
const CheckTimeout = 10 * time.Second

// handshakeTimeout bounds the TLS handshake: a plain server that reads a
// ClientHello as the start of an inline command may never answer it.
const handshakeTimeout = 3 * time.Second

// CheckError says why Check could not log in, which flag to look at, and
// what the server said. Its message never holds a password.
type CheckError struct {
	// Addr is the server's host:port.
	Addr string
	// Flag is the flag (or flags) whose value is at fault, e.g. "--cacert",
	// "--user/--password", or "--url" when the URL set it.
	Flag string
	// Kind is one of the Err... values of this package.
	Kind error
	// Said is what the server said or did, e.g. "WRONGPASS invalid
	// username-password pair or user is disabled." or "closed the
	// connection".
	Said string
	// Hint says what to do instead.
	Hint string
}

// Error returns "FLAG: ADDR: KIND: the server said ...; HINT".
func (e *CheckError) Error() string {
	msg := fmt.Sprintf("%s: %s: %v: %s", e.Flag, e.Addr, e.Kind, e.Said)
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// Unwrap returns Kind, so that errors.Is(err, ErrAuth) works.
func (e *CheckError) Unwrap() error { return e.Kind }

// Check connects to addr with s as the clients would (TLS handshake, AUTH,
// SELECT, PING) on one connection it then closes, and returns nil when the
// server answers PONG. Otherwise it returns a *CheckError that wraps one
// of the Err... kinds, names the flag at fault and quotes the server. It
// writes nothing. When it cannot tell a plain server from a TLS one by the
// first reply, it opens a second connection to ask the other way. It waits
// until ctx's deadline, or CheckTimeout when ctx has none, for a server
// that accepts the connection and answers nothing (ErrNoAnswer); when ctx
// is cancelled it returns at once, with an error that wraps
// ErrCheckInterrupted and ctx's error.
func Check(ctx context.Context, addr string, s Settings) error {
	cfg, err := s.TLS.Config()
	if err != nil {
		return err
	}
	timeout := CheckTimeout
	if deadline, ok := ctx.Deadline(); ok {
		timeout = time.Until(deadline)
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, CheckTimeout)
		defer cancel()
	}
	conn, err := dial(ctx, addr)
	if err != nil {
		if ierr := interrupted(ctx, addr); ierr != nil {
			return ierr
		}
		return &CheckError{Addr: addr, Flag: flag(s.fromURL, "--addr"), Kind: ErrUnreachable,
			Said: err.Error(), Hint: "is a Redis server listening there? (leave out --addr to let rlbench start a private redis-server)"}
	}
	defer conn.Close()
	// A read blocked on a server that never answers ends when ctx does,
	// not only at the deadline.
	defer context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })()
	if cfg != nil {
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(conn, cfg)
		hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			if ierr := interrupted(ctx, addr); ierr != nil {
				return ierr
			}
			return s.handshakeError(ctx, addr, err)
		}
		conn = tc
	}
	return s.login(ctx, addr, conn, cfg != nil, timeout)
}

// interrupted is the error of a check whose ctx was cancelled, or nil
// while ctx is not (a deadline is the server's silence, not an interrupt).
func interrupted(ctx context.Context, addr string) error {
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w: %w", addr, ErrCheckInterrupted, err)
	}
	return nil
}

// login sends AUTH, SELECT and PING on conn and classifies the replies;
// timeout is how long the check waits for them in all, for its errors.
func (s Settings) login(ctx context.Context, addr string, conn net.Conn, overTLS bool, timeout time.Duration) error {
	r := bufio.NewReader(conn)
	if s.Username != "" || s.Password != "" {
		args := []string{"AUTH", s.Password}
		if s.Username != "" {
			args = []string{"AUTH", s.Username, s.Password}
		}
		reply, err := roundTrip(conn, r, args...)
		if err != nil {
			return s.readError(ctx, addr, "AUTH", err, overTLS, timeout)
		}
		if strings.HasPrefix(reply, "-") {
			return &CheckError{Addr: addr, Flag: flag(s.urlAuth, "--user/--password"), Kind: ErrAuth, Said: said(reply),
				Hint: "check the user and password (REDISCLI_AUTH, or user:password@ in a URL)"}
		}
	}
	if s.DB != 0 {
		reply, err := roundTrip(conn, r, "SELECT", strconv.Itoa(s.DB))
		if err != nil {
			return s.readError(ctx, addr, "SELECT", err, overTLS, timeout)
		}
		if strings.HasPrefix(reply, "-") {
			ce := &CheckError{Addr: addr, Flag: flag(s.urlDB, "--db"), Kind: ErrDB, Said: said(reply)}
			if strings.HasPrefix(reply, "-NOPERM") {
				ce.Hint = fmt.Sprintf("the user may not SELECT: rlbench acl --db %d prints an ACL SETUSER line that grants it", s.DB)
			}
			return s.replyError(addr, reply, ce)
		}
	}
	reply, err := roundTrip(conn, r, "PING")
	if err != nil {
		return s.readError(ctx, addr, "PING", err, overTLS, timeout)
	}
	if reply != "+PONG" {
		return s.replyError(addr, reply, &CheckError{Addr: addr, Flag: flag(s.fromURL, "--addr"), Kind: ErrProtocol, Said: said(reply)})
	}
	return nil
}

// replyError turns a NOAUTH reply into ErrNoAuth, and any other into def.
func (s Settings) replyError(addr, reply string, def *CheckError) error {
	if strings.HasPrefix(reply, "-NOAUTH") {
		return &CheckError{Addr: addr, Flag: flag(s.urlAuth, "--password"), Kind: ErrNoAuth, Said: said(reply),
			Hint: "give it with REDISCLI_AUTH, --password, or user:password@ in a URL"}
	}
	return def
}

// handshakeError classifies a failed TLS handshake.
func (s Settings) handshakeError(ctx context.Context, addr string, err error) error {
	e := &CheckError{Addr: addr, Flag: "--cacert", Said: "the TLS handshake ended with: " + err.Error()}
	var (
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
		header    tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &unknownCA):
		e.Kind, e.Hint = ErrUnknownAuthority, "pass the CA that signed it with --cacert (or skip verification with --insecure)"
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		e.Flag, e.Kind, e.Hint = "--insecure", ErrCertExpired, "renew the server's certificate (or skip verification with --insecure)"
	case errors.As(err, &hostname):
		e.Flag, e.Kind, e.Hint = "--sni", ErrCertName, "pass the name the certificate holds with --sni"
	case errors.As(err, &header):
		e.Flag, e.Kind = flag(s.urlTLS, "--tls"), ErrNotTLS
		e.Said, e.Hint = fmt.Sprintf("it answered the TLS handshake with %q", header.RecordHeader[:]), plainHint(s)
	case strings.Contains(err.Error(), "remote error: tls:"):
		e.Flag, e.Kind, e.Hint = "--cert/--key", ErrClientCert, "pass a client certificate signed by a CA the server trusts"
	case isTimeout(err) && answersPlain(ctx, addr):
		e.Flag, e.Kind = flag(s.urlTLS, "--tls"), ErrNotTLS
		e.Said, e.Hint = "it did not answer the TLS handshake, and answers a plain PING", plainHint(s)
	case isTimeout(err):
		// Silent to TLS and to a plain PING alike: not a TLS mismatch.
		e.Flag, e.Kind = flag(s.fromURL, "--addr"), ErrNoAnswer
		e.Said = fmt.Sprintf("no answer to the TLS handshake within %s, nor to a plain PING", handshakeTimeout)
		e.Hint = "is it a Redis server, and is it not paused, blocked or overloaded?"
	default:
		e.Flag, e.Kind = flag(s.urlTLS, "--tls"), ErrTLSHandshake
	}
	return e
}

func plainHint(s Settings) string {
	if s.urlTLS {
		return "use redis:// rather than rediss://"
	}
	return "leave out --tls"
}

// readError classifies an error that ended command cmd after the
// handshake; timeout is the check's, for a server that never answered.
func (s Settings) readError(ctx context.Context, addr, cmd string, err error, overTLS bool, timeout time.Duration) error {
	if ierr := interrupted(ctx, addr); ierr != nil {
		return ierr
	}
	e := &CheckError{Addr: addr, Flag: flag(s.urlTLS, "--tls"), Kind: ErrProtocol, Said: "the connection ended with: " + err.Error()}
	switch {
	case isTimeout(err):
		// Not a TLS mismatch: a TLS server closes on a plain command (below).
		e.Flag, e.Kind = flag(s.fromURL, "--addr"), ErrNoAnswer
		e.Said = fmt.Sprintf("no reply to %s within %s", cmd, timeout.Round(100*time.Millisecond))
		e.Hint = "is it a Redis server, and is it not paused, blocked or overloaded?"
	case overTLS && (strings.Contains(err.Error(), "remote error: tls:") || closedByPeer(err)):
		// With TLS 1.3 the server checks the client's certificate after the
		// client's side of the handshake is done: its refusal arrives as an
		// alert, or, when it closes first, as a reset on the first command.
		e.Flag, e.Kind, e.Hint = "--cert/--key", ErrClientCert, "pass a client certificate signed by a CA the server trusts"
	case !overTLS && closedByPeer(err) && speaksTLS(ctx, addr):
		e.Kind, e.Said = ErrTLSRequired, "it closed the connection on a plain command, and completes a TLS handshake"
		e.Hint = "add --tls (with --cacert), or use rediss://"
	}
	return e
}

// said quotes a RESP reply without its type byte.
func said(reply string) string {
	return "the server said " + strconv.Quote(strings.TrimPrefix(reply, "-"))
}

func dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetDeadline(deadline)
	}
	return conn, nil
}

// roundTrip sends one command as a RESP array and reads its reply's first
// line ("+PONG", "-ERR ...", ":1"), reading past a bulk string's body.
func roundTrip(w io.Writer, r *bufio.Reader, args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if n, err := strconv.Atoi(strings.TrimPrefix(line, "$")); strings.HasPrefix(line, "$") && err == nil && n >= 0 {
		if _, err := r.Discard(n + 2); err != nil {
			return "", err
		}
	}
	return line, nil
}

// answersPlain reports whether addr answers a plain PING as Redis does
// (PONG, or an error such as NOAUTH).
func answersPlain(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := dial(ctx, addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	reply, err := roundTrip(conn, bufio.NewReader(conn), "PING")
	return err == nil && (reply == "+PONG" || strings.HasPrefix(reply, "-"))
}

// speaksTLS reports whether addr completes a TLS handshake, without
// verifying its certificate.
func speaksTLS(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := dial(ctx, addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	// Only the handshake is done, to learn whether the server speaks TLS.
	tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec
	return tc.HandshakeContext(ctx) == nil
}

func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

package redisserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/rlbench/rlbench/serverinfo"
)

// ErrNoTLS is returned, wrapped, by Start with Options.TLS when the binary
// is built without TLS support.
var ErrNoTLS = errors.New("this redis-server is built without TLS (build it with BUILD_TLS=yes, or use a packaged redis-server such as Debian's)")

// DefaultCertLifetime is how long the certificates WriteTLSFiles makes stay
// valid when TLSOptions.NotAfter is zero.
const DefaultCertLifetime = 24 * time.Hour

// TLSOptions makes Start run the server with TLS only: --port 0 and
// --tls-port on the free port, with a certificate from a throwaway CA that
// Start generates (crypto/x509) into the server's temporary directory. The
// server needs a redis-server built with TLS (Debian's is; a plain
// `make` build is not, and Start then fails with the server's own
// message).
type TLSOptions struct {
	// ClientCerts makes the server require a client certificate signed by
	// the CA (mutual TLS, --tls-auth-clients yes). Default: no client
	// certificate asked for (--tls-auth-clients no).
	ClientCerts bool
	// NotAfter is when the server's certificate expires. Default (zero):
	// DefaultCertLifetime from now. A time in the past makes an expired
	// certificate, which a verifying client refuses: for tests of that error.
	NotAfter time.Time
}

// TLSFiles names the PEM files WriteTLSFiles writes: a throwaway CA, a
// server certificate for 127.0.0.1 and localhost, and a client certificate
// for mutual TLS, each signed by the CA.
type TLSFiles struct {
	// CACert is the CA's certificate: what a client passes as --cacert.
	CACert string
	// ServerCert and ServerKey are the server's certificate and key
	// (--tls-cert-file, --tls-key-file).
	ServerCert, ServerKey string
	// ClientCert and ClientKey are a client certificate and its key, for
	// mutual TLS (--cert, --key).
	ClientCert, ClientKey string
}

// WriteTLSFiles generates a CA, a server certificate valid for 127.0.0.1,
// ::1 and localhost (until o.NotAfter), and a client certificate, with
// ECDSA P-256 keys, and writes them as PEM files into dir.
func WriteTLSFiles(dir string, o TLSOptions) (TLSFiles, error) {
	now := time.Now()
	notAfter := o.NotAfter
	if notAfter.IsZero() {
		notAfter = now.Add(DefaultCertLifetime)
	}
	f := TLSFiles{
		CACert:     filepath.Join(dir, "ca.crt"),
		ServerCert: filepath.Join(dir, "server.crt"),
		ServerKey:  filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"),
		ClientKey:  filepath.Join(dir, "client.key"),
	}
	ca := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "rlbench throwaway CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(DefaultCertLifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caKey, err := writeCert(f.CACert, "", ca, nil, nil)
	if err != nil {
		return TLSFiles{}, err
	}
	server := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:   now.Add(-48 * time.Hour),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		// The server's certificate also serves its outgoing connections
		// (replication), hence client auth too.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if _, err := writeCert(f.ServerCert, f.ServerKey, server, ca, caKey); err != nil {
		return TLSFiles{}, err
	}
	client := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "rlbench client"},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(DefaultCertLifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if _, err := writeCert(f.ClientCert, f.ClientKey, client, ca, caKey); err != nil {
		return TLSFiles{}, err
	}
	return f, nil
}

// writeCert makes a key for tmpl, signs tmpl with parent and parentKey
// (itself when parent is nil), and writes the certificate to certPath and,
// when keyPath is set, the key to keyPath.
func writeCert(certPath, keyPath string, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("redisserver: tls: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("redisserver: tls: serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, fmt.Errorf("redisserver: tls: create %s: %w", filepath.Base(certPath), err)
	}
	if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	if keyPath != "" {
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, fmt.Errorf("redisserver: tls: marshal key: %w", err)
		}
		if err := writePEM(keyPath, "PRIVATE KEY", keyDER); err != nil {
			return nil, err
		}
	}
	return key, nil
}

func writePEM(path, kind string, der []byte) error {
	data := pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("redisserver: tls: %w", err)
	}
	return nil
}

// ClientConfig returns a *tls.Config that trusts only f's CA and, when
// withCert is true, presents f's client certificate (mutual TLS).
func (f TLSFiles) ClientConfig(withCert bool) (*tls.Config, error) {
	pemData, err := os.ReadFile(f.CACert)
	if err != nil {
		return nil, fmt.Errorf("redisserver: tls: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		return nil, fmt.Errorf("redisserver: tls: no certificate in %s", f.CACert)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if withCert {
		cert, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("redisserver: tls: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// TLS returns the files of a server started with Options.TLS, and false
// for a plain server.
func (s *Server) TLS() (TLSFiles, bool) {
	if s.tls == nil {
		return TLSFiles{}, false
	}
	return s.tls.files, true
}

// serverTLS is the TLS set-up of a private server.
type serverTLS struct {
	opts   TLSOptions
	files  TLSFiles
	client *tls.Config // for the readiness check: the client certificate, no verification
}

// setupTLS writes the certificates into s.dir; a no-op for a plain server.
func (s *Server) setupTLS(o *TLSOptions) error {
	if o == nil {
		return nil
	}
	files, err := WriteTLSFiles(s.dir, *o)
	if err != nil {
		return err
	}
	cfg, err := files.ClientConfig(true)
	if err != nil {
		return err
	}
	// The readiness check makes sure it reaches its own process (INFO
	// process_id), and must work with the expired certificate of a test.
	cfg.InsecureSkipVerify = true
	s.tls = &serverTLS{opts: *o, files: files, client: cfg}
	return nil
}

// launchArgs adds what the server's mode needs to the command line args
// that launch built: for TLS, the port moves to --tls-port.
func (s *Server) launchArgs(args []string) []string {
	if s.sentinel {
		args = append([]string{filepath.Join(s.dir, sentinelConfFile)}, args...)
		args = append(args, "--sentinel")
	}
	if s.tls == nil {
		return args
	}
	authClients := "no"
	if s.tls.opts.ClientCerts {
		authClients = "yes"
	}
	return append(args,
		"--port", "0",
		"--tls-port", strconv.Itoa(s.port),
		"--tls-cert-file", s.tls.files.ServerCert,
		"--tls-key-file", s.tls.files.ServerKey,
		"--tls-ca-cert-file", s.tls.files.CACert,
		"--tls-auth-clients", authClients,
	)
}

// readyInfo is infoServer for s, over TLS when s runs TLS.
func (s *Server) readyInfo(ctx context.Context) (map[string]string, error) {
	if s.tls == nil {
		return infoServer(ctx, s.addr, s.password, 0)
	}
	rdb := redis.NewClient(&redis.Options{
		Addr:                     s.addr,
		Password:                 s.password,
		Protocol:                 2,
		TLSConfig:                s.tls.client,
		DialTimeout:              dialTimeout,
		DialerRetries:            1,
		ReadTimeout:              dialTimeout,
		WriteTimeout:             dialTimeout,
		MaxRetries:               -1,
		PoolSize:                 1,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	defer rdb.Close()
	// A plain TCP dial first, as infoServer does, so that a server not yet
	// listening costs no go-redis dial and its log line.
	dialer := net.Dialer{Timeout: dialTimeout}
	conn, err := dialer.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", s.addr, err)
	}
	conn.Close()
	text, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return nil, fmt.Errorf("info server on %s over tls: %w", s.addr, err)
	}
	return serverinfo.Parse(text), nil
}

// explainTLS wraps ErrNoTLS into err when a TLS server failed to start
// because its binary has no TLS support (the server says "Failed finding
// TLS support", or before Redis 7.2 "Bad directive" on tls-port).
func (s *Server) explainTLS(err error) error {
	if s.tls == nil {
		return err
	}
	msg := err.Error()
	if strings.Contains(msg, "TLS support") || (strings.Contains(msg, "Bad directive") && strings.Contains(msg, "tls")) {
		return fmt.Errorf("%w: %w", ErrNoTLS, err)
	}
	return err
}

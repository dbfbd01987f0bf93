package connection

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Config builds the *tls.Config that t describes: the CAs of CACert (or
// the system's), the client certificate of Cert and Key, no verification
// when Insecure, and SNI as the server name. It returns nil, nil for a nil
// t (plain TCP). ServerName stays empty without SNI: both clients then
// take it from each address they dial, which a cluster's nodes need.
// Errors name the flag: --cacert, --cert or --key.
func (t *TLSFiles) Config() (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: t.Insecure,
		ServerName:         t.SNI,
	}
	if t.CACert != "" {
		pemData, err := os.ReadFile(t.CACert)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemData) {
			return nil, fmt.Errorf("--cacert %s: no PEM certificate in the file", t.CACert)
		}
		cfg.RootCAs = pool
	}
	switch {
	case t.Cert == "" && t.Key == "":
	case t.Cert == "":
		return nil, errors.New("--key needs --cert: a client certificate and its key go together")
	case t.Key == "":
		return nil, errors.New("--cert needs --key: a client certificate and its key go together")
	default:
		cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("--cert %s, --key %s: %w", t.Cert, t.Key, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

package main

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/connection"
)

// connectionFlags are the redis-cli connection flags (and --url, and
// --sentinel), shared by every command that reaches an existing server.
type connectionFlags struct {
	user, password string
	db             int
	tls            bool
	files          connection.TLSFiles
	// urls and sentinels are the values of --url and --sentinel, read once
	// every flag is known: a URL's settings go over the flags'.
	urls, sentinels []string
	// sentinelUser and sentinelPassword are --sentinel-user and
	// --sentinel-password as given; sentinelLogin is how the --sentinel
	// targets log in to their sentinels: those flags, or when they are not
	// given the sentinels' default user with the master's password, which
	// a sentinel without a password takes too (settings resolves it). The
	// master's --user is no default: a sentinel rarely has that user.
	sentinelUser, sentinelPassword string
	sentinelLogin                  [2]string
}

// add defines the flags on fs.
func (f *connectionFlags) add(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&f.urls, "url", "u", nil, "[LABEL=]redis://[user[:password]@]host:port[/db] of an existing server, or rediss://... for TLS, repeatable; its user, password and db go over the flags' (keep it in an environment variable: ps shows arguments)")
	fs.StringArrayVar(&f.sentinels, "sentinel", nil, "[LABEL=]MASTER@host:port[,host:port...]: a master that Sentinel manages, reached through these sentinels and followed across failovers, repeatable")
	fs.StringVar(&f.user, "user", "", "ACL username (with --password or $REDISCLI_AUTH)")
	fs.StringVar(&f.password, "password", "", "password (default: $REDISCLI_AUTH, which ps does not show)")
	fs.StringVar(&f.sentinelUser, "sentinel-user", "", "with --sentinel: ACL username on the sentinels (default: their default user)")
	fs.StringVar(&f.sentinelPassword, "sentinel-password", "", "with --sentinel: password of the sentinels, \"\" for none (default: the master's, --password or $REDISCLI_AUTH)")
	fs.IntVar(&f.db, "db", 0, "database number on every server")
	fs.BoolVar(&f.tls, "tls", false, "connect with TLS")
	fs.StringVar(&f.files.CACert, "cacert", "", "with --tls: PEM file of the CAs that sign the server's certificate (default: the system's)")
	fs.StringVar(&f.files.Cert, "cert", "", "with --tls: PEM client certificate, for mutual TLS (with --key)")
	fs.StringVar(&f.files.Key, "key", "", "with --tls: PEM private key of --cert")
	fs.BoolVar(&f.files.Insecure, "insecure", false, "with --tls: do not verify the server's certificate, as redis-cli --insecure")
	fs.StringVar(&f.files.SNI, "sni", "", "with --tls: server name for SNI and the certificate check (default: the host of each address)")
}

// settings are the flags' login settings, with $REDISCLI_AUTH when
// --password is not given. TLS files without --tls are bad input, unless a
// rediss:// URL uses them.
func (f *connectionFlags) settings(fs *pflag.FlagSet) (connection.Settings, error) {
	s := connection.Settings{Username: f.user, Password: f.password, DB: f.db}
	if !fs.Changed("password") {
		s.Password = os.Getenv("REDISCLI_AUTH")
	}
	if f.tls {
		s.TLS = &f.files
	}
	for _, u := range f.urls { // a URL that does not parse says so first
		if _, err := connection.ParseURL(u, connection.Settings{}); err != nil {
			return s, err
		}
	}
	if f.files != (connection.TLSFiles{}) && !f.tls && !f.anyTLSURL() {
		return s, errors.New("--cacert, --cert, --key, --insecure and --sni need --tls (or a rediss:// URL)")
	}
	if (f.files.Cert == "") != (f.files.Key == "") {
		return s, errors.New("--cert and --key: give both, for mutual TLS, or neither")
	}
	f.sentinelLogin = [2]string{"", s.Password} // the master's password, by default
	for i, name := range []string{"sentinel-user", "sentinel-password"} {
		if !fs.Changed(name) {
			continue
		}
		if len(f.sentinels) == 0 {
			return s, fmt.Errorf("--%s: it logs in to the sentinels of a --sentinel target; give --sentinel, or leave it out", name)
		}
		f.sentinelLogin[i] = []string{f.sentinelUser, f.sentinelPassword}[i]
	}
	return s, nil
}

// anyTLSURL reports whether a --url is a rediss:// one.
func (f *connectionFlags) anyTLSURL() bool {
	return slices.ContainsFunc(f.urls, isTLSURL)
}

// targets are the --url and --sentinel targets, in that order; each URL
// logs in with its own settings, put over base (the flags'), and the TLS
// files of the flags for a rediss:// one; each Sentinel master with base.
func (f *connectionFlags) targets(base connection.Settings) ([]rlbench.TargetSpec, error) {
	var out []rlbench.TargetSpec
	for _, u := range f.urls {
		urlBase := base // TLS only with --tls
		if urlBase.TLS == nil && isTLSURL(u) {
			files := f.files // a rediss:// URL takes the flags' files
			urlBase.TLS = &files
		}
		ep, err := connection.ParseURL(u, urlBase)
		if err != nil {
			return nil, err
		}
		out = append(out, rlbench.TargetSpec{Label: ep.Label, Addr: ep.Addr, Login: ep.Settings})
	}
	for _, s := range f.sentinels {
		label, target, err := connection.ParseSentinel(s)
		if err != nil {
			return nil, err // it names --sentinel
		}
		target.Username, target.Password = f.sentinelLogin[0], f.sentinelLogin[1]
		out = append(out, rlbench.TargetSpec{Label: label, Sentinel: &target, Login: base})
	}
	return out, nil
}

// isTLSURL reports whether u (with or without a label) is a rediss:// URL.
func isTLSURL(u string) bool {
	ep, err := connection.ParseURL(u, connection.Settings{})
	return err == nil && ep.Settings.TLS != nil
}

// apply puts the flags' settings and targets into cfg: the flags' login
// (--user, --password or $REDISCLI_AUTH, --db, --tls and its files) into
// each of cfg's targets, which the other target flags made, and the URL
// and Sentinel targets after them, each with its login (targets).
func (f *connectionFlags) apply(fs *pflag.FlagSet, cfg *rlbench.Config) error {
	s, err := f.settings(fs)
	if err != nil {
		return badInput(err)
	}
	for i := range cfg.Targets {
		cfg.Targets[i].Login = s
	}
	targets, err := f.targets(s)
	if err != nil {
		return badInput(err)
	}
	cfg.Targets = append(cfg.Targets, targets...)
	return nil
}

// checkDB refuses a --db below 0 that went into none of cfg's targets
// (every one a URL with a db of its own), as the check of a target's
// login words it: the load run refuses any --db below 0, whatever its
// targets (audit and cleanup, which read the URL's db, do not).
func (f *connectionFlags) checkDB(cfg rlbench.Config) error {
	if f.db < 0 && !slices.ContainsFunc(cfg.Targets, func(t rlbench.TargetSpec) bool { return t.Login.DB == f.db }) {
		return badInput(fmt.Errorf("--db: db must be >= 0, got %d", f.db))
	}
	return nil
}

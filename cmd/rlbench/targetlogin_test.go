package main

import (
	"io"
	"testing"
)

// TestLoginFlagsGoIntoEveryTarget checks that the command line turns the
// login flags into the Login of every target it makes (the private server
// of a run with no target flag too), and that a --url keeps its URL's.
func TestLoginFlagsGoIntoEveryTarget(t *testing.T) {
	t.Parallel()
	flags := []string{"--user", "u", "--password", "pw", "--db", "2", "--tls", "--cacert", "/ca.pem"}
	tests := []struct {
		name  string
		args  []string
		wants int // targets with the flags' login, then the URL's
		url   bool
	}{
		{"no target flag: the private server", nil, 1, false},
		{"every kind", []string{"--addr", "h:1", "--redis-server", "/bin/redis-server", "--cluster", "h:2", "--managed-cluster", "3", "--managed-sentinel", "1", "--sentinel", "m@h:3"}, 6, false},
		{"a url beside an addr", []string{"--addr", "h:1", "--url", "redis://v:upw@h:4/3"}, 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var o loadOptions
			fs := cli{}.newLoadFlagSet(&o, io.Discard)
			if err := fs.Parse(append(tc.args, flags...)); err != nil {
				t.Fatal(err)
			}
			if err := o.complete(fs); err != nil {
				t.Fatalf("complete(%q) = %v", tc.args, err)
			}
			specs := o.cfg.Targets
			if n := tc.wants + map[bool]int{true: 1}[tc.url]; len(specs) != n {
				t.Fatalf("complete(%q): %d targets; want %d", tc.args, len(specs), n)
			}
			for _, s := range specs[:tc.wants] {
				if l := s.Login; l.Username != "u" || l.Password != "pw" || l.DB != 2 || l.TLS == nil || l.TLS.CACert != "/ca.pem" || l.FromURL() {
					t.Errorf("complete(%q): target %+v logs in as %v; want the flags' login", tc.args, s, l)
				}
			}
			if tc.url {
				if l := specs[tc.wants].Login; l.Username != "v" || l.Password != "upw" || l.DB != 3 || !l.FromURL() {
					t.Errorf("complete(%q): the URL's target logs in as %v; want the URL's user, password and db", tc.args, l)
				}
			}
		})
	}
}

// TestSentinelLoginIsItsOwn checks that a --sentinel target logs in to its
// sentinels with --sentinel-user and --sentinel-password and to the master
// with --user and --password.
func TestSentinelLoginIsItsOwn(t *testing.T) {
	t.Parallel()
	var o loadOptions
	fs := cli{}.newLoadFlagSet(&o, io.Discard)
	args := []string{"--sentinel", "m@h:3", "--user", "u", "--password", "pw", "--sentinel-user", "su", "--sentinel-password", "spw"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := o.complete(fs); err != nil {
		t.Fatalf("complete(%q) = %v", args, err)
	}
	if n := len(o.cfg.Targets); n != 1 || o.cfg.Targets[0].Sentinel == nil {
		t.Fatalf("complete(%q): targets %+v; want one Sentinel target", args, o.cfg.Targets)
	}
	spec := o.cfg.Targets[0]
	if s := spec.Sentinel; s.Username != "su" || s.Password != "spw" {
		t.Errorf("complete(%q): sentinels' login %q, %q; want su, spw", args, s.Username, s.Password)
	}
	if l := spec.Login; l.Username != "u" || l.Password != "pw" {
		t.Errorf("complete(%q): master's login %q, %q; want u, pw", args, l.Username, l.Password)
	}
}

// TestNegativeDBBesideURLs checks that --db below 0 is refused, naming
// --db, also when every target is a URL with a db of its own, which the
// flag goes into none of.
func TestNegativeDBBesideURLs(t *testing.T) {
	t.Parallel()
	var o loadOptions
	fs := cli{}.newLoadFlagSet(&o, io.Discard)
	if err := fs.Parse([]string{"--url", "redis://h:1/2", "--db", "-1"}); err != nil {
		t.Fatal(err)
	}
	if err := o.complete(fs); err == nil || err.Error() != "--db: db must be >= 0, got -1" {
		t.Errorf("complete(--url redis://h:1/2 --db -1) = %v; want --db: db must be >= 0, got -1", err)
	}
}

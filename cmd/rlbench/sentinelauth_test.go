package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redisserver"
)

// TestSentinelPassword runs on a master whose sentinels have a password of
// their own: --sentinel-password logs in to them (the clients, the admin
// connection and the master's address look-up), the master's password
// alone is refused by them with a hint naming the flags, and neither
// password is printed or written.
func TestSentinelPassword(t *testing.T) {
	t.Parallel()
	const masterSecret, sentinelSecret = "master-secret-k1", "sentinel-secret-k2"
	s, err := redisserver.StartSentinel(t.Context(), redisserver.SentinelOptions{
		Binary: os.Getenv(redistest.BinaryEnv),
		Args:   []string{"--requirepass", masterSecret}, SentinelPassword: sentinelSecret,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	target := s.MasterName() + "@" + strings.Join(s.SentinelAddrs(), ",")
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	load := []string{"--sentinel", target, "--password", masterSecret, "--strategy", "lua", "--client", "go-redis,rueidis",
		"--clients", "2", "--keys", "5", "--duration", "300ms", "--prefix", redistest.Prefix(t)}
	res := mustRun(t, exitOK, append(load, "--sentinel-password", sentinelSecret, "--json", jsonPath)...)
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{masterSecret, sentinelSecret} {
		if strings.Contains(res.stdout+res.stderr+string(data), secret) {
			t.Errorf("the run printed or wrote a password (%s)", secret)
		}
	}
	refused := runCLI(t, t.Context(), load...)
	if refused.code != exitUsage || !strings.Contains(refused.stderr, "WRONGPASS") || !strings.Contains(refused.stderr, "--sentinel-password") {
		t.Errorf("run with the master's password for the sentinels = %d, stderr %q; want %d, WRONGPASS and a hint naming --sentinel-password", refused.code, refused.stderr, exitUsage)
	}
	if strings.Contains(refused.stdout+refused.stderr, masterSecret) {
		t.Errorf("the refused run printed the master's password:\n%s", refused.stderr)
	}
}

// TestSentinelLoginDefaults checks that the sentinels' login defaults to
// their default user with the master's password (not the master's --user,
// which a sentinel rarely has), that --sentinel-user and
// --sentinel-password (even "") replace it, and that either without
// --sentinel is bad input.
func TestSentinelLoginDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		args           []string
		user, password string
		wantErr        string
	}{
		{"the master's password", []string{"--sentinel", "m@h:1", "--user", "u", "--password", "pw"}, "", "pw", ""},
		{"own", []string{"--sentinel", "m@h:1", "--user", "u", "--password", "pw", "--sentinel-user", "su", "--sentinel-password", "spw"}, "su", "spw", ""},
		{"none", []string{"--sentinel", "m@h:1", "--password", "pw", "--sentinel-password", ""}, "", "", ""},
		{"without --sentinel", []string{"--addr", "h:1", "--sentinel-password", "spw"}, "", "", "--sentinel-password"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var f connectionFlags
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			fs.String("addr", "", "")
			f.add(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			base, err := f.settings(fs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("settings(%q) error = %v; want one naming %s", tc.args, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("settings(%q) error = %v", tc.args, err)
			}
			specs, err := f.targets(base)
			if err != nil || len(specs) != 1 || specs[0].Sentinel == nil {
				t.Fatalf("targets(%q) = %+v, %v; want one sentinel target", tc.args, specs, err)
			}
			got := specs[0].Sentinel
			if got.Username != tc.user || got.Password != tc.password {
				t.Errorf("targets(%q): sentinel login = %q, %q; want %q, %q", tc.args, got.Username, got.Password, tc.user, tc.password)
			}
			if shown := fmt.Sprintf("%v %+v %#v %s", *got, *got, *got, got); tc.password != "" && strings.Contains(shown, tc.password) {
				t.Errorf("the sentinel target printed shows its password: %s", shown)
			}
		})
	}
}

// TestSentinelWithoutPassword checks that the default, the master's
// password sent to the sentinels too, works with sentinels that have no
// password (their default user takes any).
func TestSentinelWithoutPassword(t *testing.T) {
	t.Parallel()
	s, err := redisserver.StartSentinel(t.Context(), redisserver.SentinelOptions{
		Binary: os.Getenv(redistest.BinaryEnv), Args: []string{"--requirepass", "master-only-k3"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	mustRun(t, exitOK, "--sentinel", s.MasterName()+"@"+strings.Join(s.SentinelAddrs(), ","), "--password", "master-only-k3",
		"--strategy", "lua", "--client", "go-redis,rueidis", "--clients", "2", "--keys", "5", "--duration", "300ms", "--prefix", redistest.Prefix(t))
}

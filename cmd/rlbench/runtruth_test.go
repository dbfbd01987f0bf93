package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redisserver"
)

// TestVerifyRefusesAReplica checks that `rlbench verify` on a read-only
// replica stops at the pre-flight with exit 2 and an --addr error naming
// the server, before any check: not a matrix of FAIL cells.
func TestVerifyRefusesAReplica(t *testing.T) {
	t.Parallel()
	primary := redistest.Start(t)
	replica := redistest.Start(t)
	host, port, _ := strings.Cut(primary.Addr(), ":")
	if err := redistest.Client(t, replica).ReplicaOf(t.Context(), host, port).Err(); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := verifyCLI(t, "--addr", replica.Addr(), "--strategy", "lua", "--client", "go-redis")
	if code != exitUsage || !strings.Contains(stderr, "--addr: "+replica.Addr()) || !strings.Contains(stderr, "replica of "+primary.Addr()) {
		t.Errorf("verify --addr REPLICA = %d, stderr %q; want %d and an --addr error naming the replica and its master", code, stderr, exitUsage)
	}
	if strings.Contains(stdout, "FAIL") {
		t.Errorf("verify --addr REPLICA printed a matrix:\n%s", stdout)
	}
}

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
	load := []string{"--sentinel", target, "--password", masterSecret, "--strategy", "lua", "--client", "all",
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
		"--strategy", "lua", "--client", "all", "--clients", "2", "--keys", "5", "--duration", "300ms", "--prefix", redistest.Prefix(t))
}

// TestLoadStoppedByAFailure checks the command line of a run whose first
// cell's audit fails (the user loses SCAN during its load): exit 1, an
// error that says the later cells did not run and gives the clean-up
// command, and a JSON file that says failed and stopped_by, not
// interrupted.
func TestLoadStoppedByAFailure(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	revoked := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if keys, err := rdb.Keys(context.Background(), rlbench.CellPrefix(prefix, "lua", "go-redis")+"*").Result(); err == nil && len(keys) > 0 {
				revoked <- rdb.Do(context.Background(), "ACL", "SETUSER", "default", "-scan").Err()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		revoked <- errors.New("no key of the first cell within 30s")
	}()
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	res := runCLI(t, t.Context(), "--addr", srv.Addr(), "--strategy", "lua,incr-expire", "--clients", "2", "--keys", "5",
		"--duration", "3s", "--prefix", prefix, "--json", jsonPath)
	if err := <-revoked; err != nil {
		t.Fatalf("revoking SCAN: %v", err)
	}
	if res.code != exitFailure || !strings.Contains(res.stderr, "the cells after it did not run") || !strings.Contains(res.stderr, "rlbench cleanup --prefix '"+prefix+"'") {
		t.Errorf("run = %d, stderr %q; want %d, the later cells named as not run, and the clean-up command", res.code, res.stderr, exitFailure)
	}
	rep := readReport(t, jsonPath)
	if rep.Interrupted || !rep.Failed || rep.StoppedBy == "" || len(rep.Runs) != 1 {
		t.Errorf("JSON: interrupted %t, failed %t, stopped_by %q, %d runs; want failed, stopped_by and one run, not interrupted", rep.Interrupted, rep.Failed, rep.StoppedBy, len(rep.Runs))
	}
}

// TestLoadWithNoDecision checks that a run too short for a single decision
// exits 1, saying so, rather than 0 with a verdict.
func TestLoadWithNoDecision(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	res := runCLI(t, t.Context(), "--addr", srv.Addr(), "--duration", "1ns", "--clients", "2", "--keys", "5", "--prefix", redistest.Prefix(t), "--json", jsonPath)
	rep := readReport(t, jsonPath)
	if len(rep.Runs) != 1 || rep.Runs[0].Decisions != 0 {
		t.Skipf("the cell made decisions in 1ns (%+v); nothing to check", rep.Runs)
	}
	if res.code != exitFailure || !strings.Contains(res.stderr, "no decision was made") || !rep.Failed {
		t.Errorf("run --duration 1ns = %d, stderr %q, failed %t; want %d, \"no decision was made\" and failed", res.code, res.stderr, rep.Failed, exitFailure)
	}
	if strings.Contains(res.stdout, "-bound") {
		t.Errorf("run --duration 1ns drew a saturation verdict:\n%s", res.stdout)
	}
}

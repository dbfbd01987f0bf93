package rlbench

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/strategies"
)

// TestValidateChangesNothing checks that validation is a check (issue 25):
// it neither expands the lists of c nor registers c's user strategies in
// the process's registry, which nothing writes at run time: the plan's
// registry holds them (issue 36), and a second plan may register them
// again.
func TestValidateChangesNothing(t *testing.T) {
	t.Parallel()
	const name = "validate-changes-nothing"
	c := Config{Strategies: []string{"all"}, Clients: []string{"all"}, Scripts: []string{name + "=examples/fixed_window.lua"}}.withDefaults()
	before := c
	before.Strategies, before.Clients = []string{"all"}, []string{"all"}
	_ = c.validate()
	if !reflect.DeepEqual(c, before) {
		t.Errorf("validate() changed the config: %+v; want %+v", c, before)
	}
	for pass := range 2 {
		p, err := c.Plan()
		if err != nil {
			t.Fatalf("pass %d: Plan() = %v", pass, err)
		}
		if !slices.Contains(p.Strategies, name) {
			t.Errorf("pass %d: Plan().Strategies = %v; want %q among them (all brings in the run's own)", pass, p.Strategies, name)
		}
		if _, err := p.Registry.Lookup(name); err != nil {
			t.Errorf("pass %d: the plan's Registry.Lookup(%q) = %v; want it registered there", pass, name, err)
		}
		if _, err := strategies.Lookup(name); err == nil {
			t.Errorf("pass %d: after Plan(), strategies.Lookup(%q) found it; want the process's registry unchanged", pass, name)
		}
	}
}

// TestMinReplicasManagedSentinelOnly checks that --min-replicas is each
// --managed-sentinel set-up's: beside another target it is accepted (that
// target gets none), and without any managed Sentinel it is refused.
func TestMinReplicasManagedSentinelOnly(t *testing.T) {
	t.Parallel()
	sentinel, server := TargetSpec{ManagedSentinel: "1"}, TargetSpec{RedisServer: "redis-server"}
	c := Config{Targets: []TargetSpec{sentinel, server}, MinReplicas: 1}.withDefaults()
	if _, err := c.Plan(); err != nil {
		t.Errorf("--managed-sentinel 1 --min-replicas 1 beside a private server: %v; want it accepted", err)
	}
	if got := c.privateSpec(server); got.MinReplicas != 0 {
		t.Errorf("privateSpec(private server).MinReplicas = %d; want 0 (not a Sentinel set-up)", got.MinReplicas)
	}
	if got := c.privateSpec(sentinel); got.MinReplicas != 1 {
		t.Errorf("privateSpec(managed Sentinel).MinReplicas = %d; want 1", got.MinReplicas)
	}
	c.Targets = []TargetSpec{server}
	if _, err := c.Plan(); err == nil {
		t.Errorf("--min-replicas 1 with no --managed-sentinel: accepted; want refused")
	}
}

// TestConfigJSONKeepsTheLogin checks the report's view of a Config: the
// login of its first target as "user" and "db", where the single-server
// fields wrote them, and never the password or the TLS files.
func TestConfigJSONKeepsTheLogin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want []string // keys it must have
		user string
		db   float64
	}{
		{"no target", Config{}, []string{"workload", "db", "audit_every_ns"}, "", 0},
		{"the first target's login", Config{
			Targets: []TargetSpec{
				{Addr: "h:1", Login: connection.Settings{Username: "u<&>", Password: "secret-pw", DB: 2, TLS: &connection.TLSFiles{CACert: "/secret/ca.pem"}}},
				{Addr: "h:2", Login: connection.Settings{Username: "other", DB: 5}},
			},
			PrivateTLS: true,
		}, []string{"targets", "user", "db", "private_tls", "audit_every_ns"}, "u<&>", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tc.cfg)
			if err != nil {
				t.Fatalf("json.Marshal(Config) error: %v", err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("json.Unmarshal(%s) error: %v", b, err)
			}
			if user, _ := got["user"].(string); user != tc.user || got["db"] != tc.db {
				t.Errorf("config JSON user, db = %v, %v; want %q, %v", got["user"], got["db"], tc.user, tc.db)
			}
			if _, ok := got["user"]; tc.user == "" && ok {
				t.Errorf("config JSON has a user for the default one: %s", b)
			}
			for _, secret := range []string{"secret", "password"} {
				if strings.Contains(string(b), secret) {
					t.Errorf("config JSON holds %q: %s", secret, b)
				}
			}
			for _, gone := range []string{"addr", "redis_server"} {
				if _, ok := got[gone]; ok {
					t.Errorf("config JSON has %q, a field of the targets now: %s", gone, b)
				}
			}
			for _, key := range tc.want {
				if _, ok := got[key]; !ok {
					t.Errorf("config JSON has no %q: %s", key, b)
				}
			}
		})
	}
}

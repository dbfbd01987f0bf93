package rlbench

import (
	"reflect"
	"testing"

	"github.com/rlbench/rlbench/strategies"
)

// TestValidateChangesNothing checks that validation is a check (issue 25):
// it neither expands the lists of c nor registers c's user strategies in
// the process's registry, which only RegisterUserStrategies writes.
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
	if _, err := strategies.Lookup(name); err == nil {
		t.Errorf("after validate(), Lookup(%q) found it; want it unregistered (validation has no side effect)", name)
	}
	if err := RegisterUserStrategies(c); err != nil {
		t.Fatalf("RegisterUserStrategies() = %v", err)
	}
	if _, err := strategies.Lookup(name); err != nil {
		t.Errorf("after RegisterUserStrategies(), Lookup(%q) = %v; want it registered", name, err)
	}
}

// TestMinReplicasManagedSentinelOnly checks that --min-replicas is each
// --managed-sentinel set-up's: beside another target it is accepted (that
// target gets none), and without any managed Sentinel it is refused.
func TestMinReplicasManagedSentinelOnly(t *testing.T) {
	t.Parallel()
	sentinel, server := TargetSpec{ManagedSentinel: "1"}, TargetSpec{RedisServer: "redis-server"}
	c := Config{Targets: []TargetSpec{sentinel, server}, MinReplicas: 1}.withDefaults()
	if _, _, err := c.Cells(); err != nil {
		t.Errorf("--managed-sentinel 1 --min-replicas 1 beside a private server: %v; want it accepted", err)
	}
	if got := c.privateSpec(server); got.MinReplicas != 0 {
		t.Errorf("privateSpec(private server).MinReplicas = %d; want 0 (not a Sentinel set-up)", got.MinReplicas)
	}
	if got := c.privateSpec(sentinel); got.MinReplicas != 1 {
		t.Errorf("privateSpec(managed Sentinel).MinReplicas = %d; want 1", got.MinReplicas)
	}
	c.Targets = []TargetSpec{server}
	if _, _, err := c.Cells(); err == nil {
		t.Errorf("--min-replicas 1 with no --managed-sentinel: accepted; want refused")
	}
}

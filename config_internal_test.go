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

package topology_test

import (
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/topology"
)

// TestCleanupKeepsUserWithSelector records, under a prefix, ACL users
// named as a run's whose plain key pattern lies under the prefix, and
// runs Cleanup: the one with only that is deleted; one with a selector
// (Redis 7: "(~* +@all)", which ACL LIST prints after the root rules)
// reaches every key, is never one a run makes, and is kept.
func TestCleanupKeepsUserWithSelector(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	if err := rdb.Do(ctx, "ACL", "SETUSER", "probe", "(~x)").Err(); err != nil {
		t.Skipf("no ACL selectors on this server: %v", err)
	}
	users := []struct {
		name  string
		rules []string
		kept  bool
	}{
		// As a run makes it: its keys only.
		{topology.ACLUserPrefix + "00000000000000aa", []string{"on", ">pw", "~" + prefix + "*", "+get"}, false},
		// Its keys, and every key through a selector: a tenant's.
		{topology.ACLUserPrefix + "00000000000000bb", []string{"on", ">pw", "~" + prefix + "*", "+get", "(~* +@all)"}, true},
	}
	for _, u := range users {
		args := []any{"ACL", "SETUSER", u.name}
		for _, r := range u.rules {
			args = append(args, r)
		}
		if err := rdb.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, keyspace.ObjectKey(prefix, keyspace.ObjectACLUser, u.name), "", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	spec := topology.Label([]topology.Spec{{Addr: srv.Addr()}})[0]
	rep, err := topology.Cleanup(ctx, []topology.Spec{spec}, prefix, topology.CleanupOptions{Yes: true})
	if err != nil {
		t.Fatalf("Cleanup(%q) = %v", prefix, err)
	}
	for _, u := range users {
		_, err := rdb.Do(ctx, "ACL", "GETUSER", u.name).Result()
		if there := err == nil; there != u.kept {
			t.Errorf("after Cleanup (objects %v): user %s there = %t; want %t", rep.Objects, u.name, there, u.kept)
		}
	}
	for _, o := range rep.Objects {
		if strings.HasSuffix(o.Name, "bb") && !strings.Contains(o.Kept, "selector") {
			t.Errorf("Cleanup: %s; want it kept for its selector", o)
		}
	}
}

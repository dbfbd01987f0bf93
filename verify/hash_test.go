package verify_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/topology"
	"github.com/rlbench/rlbench/verify"
)

// TestRunHashFields runs every check on the hash-field strategies, on a
// Redis 7.4 server: each cell must be what the strategy documents,
// measured on the field, and the telling cells are pinned.
func TestRunHashFields(t *testing.T) {
	t.Parallel()
	hash := []string{"hash-incr-expire", "hash-multi-nx", "hash-lua"}
	m, err := verify.Run(t.Context(), verify.Config{Target: topology.Spec{RedisServer: redistest.Binary74(t)}, Prefix: redistest.Prefix(t), Strategies: hash})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	var text bytes.Buffer
	if err := verify.Text(m)(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
	if len(m.Rows) != len(hash)*len(clients.Names) {
		t.Fatalf("rows = %d; want %d", len(m.Rows), len(hash)*len(clients.Names))
	}
	pinned := map[string]verify.Outcome{
		"hash-incr-expire/" + verify.CheckCrash:   verify.Leaks, // the gap between HINCRBY and HEXPIRE
		"hash-incr-expire/" + verify.CheckHealing: verify.Leaks,
		"hash-multi-nx/" + verify.CheckHealing:    verify.Pass, // HEXPIRE NX gives a lost TTL back
		"hash-multi-nx/" + verify.CheckWrongType:  verify.Pass, // HEXPIRE fails on a string too
		"hash-lua/" + verify.CheckHealing:         verify.Leaks,
		"hash-lua/" + verify.CheckFirst:           verify.Pass,
	}
	for _, r := range m.Rows {
		for _, c := range r.Cells {
			if exp := r.Expected(c.Check, m.Server); !slices.Contains(exp, c.Outcome) {
				t.Errorf("%s %s = %s (%s); want %v", r.Label(), c.Check, c.Outcome, c.Note, exp)
			}
			if want, ok := pinned[r.Strategy+"/"+c.Check]; ok && c.Outcome != want {
				t.Errorf("%s %s = %s (%s); want %s", r.Label(), c.Check, c.Outcome, c.Note, want)
			}
		}
	}
}

package verify_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/topology"
	"github.com/rlbench/rlbench/verify"
)

// TestRetryCheck: the reply of a key's second decision's write lost after
// the server ran it, with the client's retries on. go-redis sends the
// EVALSHA or the INCR again: the request counts twice (leaks), naive's
// INCR after its GET included; not a MULTI/EXEC transaction (multi-nx:
// pass). rueidis and valkey-go do not, and redigo has no retries: the
// decision fails, the request counts once (pass). A strategy without a
// fixed-window counter is not applicable. Every cell is as documented for
// its client.
func TestRetryCheck(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	m, err := verify.Run(t.Context(), verify.Config{
		Target: topology.Spec{Addr: srv.Addr()}, Prefix: redistest.Prefix(t), Strategies: []string{"lua", "incr-expire", "naive", "multi-nx", "gcra"},
	})
	if err != nil {
		t.Fatal(err)
	}
	const twice, once = "the server counted the request 2 times", "the server counted the request once"
	want := map[string]struct {
		outcome verify.Outcome
		note    string
	}{
		"lua/go-redis":          {verify.Leaks, "EVALSHA reply lost, the client's retry succeeded: " + twice},
		"incr-expire/go-redis":  {verify.Leaks, "INCR reply lost, the client's retry succeeded: " + twice},
		"naive/go-redis":        {verify.Leaks, "INCR reply lost, the client's retry succeeded: " + twice},
		"multi-nx/go-redis":     {verify.Pass, "MULTI+INCR+EXPIRE NX+EXEC reply lost, the decision failed"},
		"lua/rueidis":           {verify.Pass, once},
		"incr-expire/rueidis":   {verify.Pass, once},
		"naive/rueidis":         {verify.Pass, "INCR reply lost, the decision failed"},
		"multi-nx/rueidis":      {verify.Pass, once},
		"lua/valkey-go":         {verify.Pass, once},
		"incr-expire/valkey-go": {verify.Pass, once},
		"naive/valkey-go":       {verify.Pass, "INCR reply lost, the decision failed"},
		"multi-nx/valkey-go":    {verify.Pass, once},
		// redigo has no retries: the decision fails, the request counts once.
		"lua/redigo":         {verify.Pass, once},
		"incr-expire/redigo": {verify.Pass, once},
		"naive/redigo":       {verify.Pass, "INCR reply lost, the decision failed"},
		"multi-nx/redigo":    {verify.Pass, once},
		"gcra/go-redis":      {verify.NotApplicable, "needs a fixed-window counter"},
		"gcra/rueidis":       {verify.NotApplicable, "needs a fixed-window counter"},
		"gcra/valkey-go":     {verify.NotApplicable, "needs a fixed-window counter"},
		"gcra/redigo":        {verify.NotApplicable, "needs a fixed-window counter"},
	}
	seen := 0
	for _, r := range m.Rows {
		for _, c := range r.Cells {
			if c.Check != verify.CheckRetry {
				continue
			}
			seen++
			w, ok := want[r.Label()]
			if !ok || c.Outcome != w.outcome || !strings.Contains(c.Note, w.note) {
				t.Errorf("%s retry = %s (%s); want %s, a note containing %q", r.Label(), c.Outcome, c.Note, w.outcome, w.note)
			}
			if exp := r.Expected(c.Check, m.Server); !slices.Equal(exp, []verify.Outcome{w.outcome}) {
				t.Errorf("%s.Expected(retry) = %v; want [%s]", r.Label(), exp, w.outcome)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("%d retry cells; want %d", seen, len(want))
	}
}

package verify_test

import (
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/verify"
)

// TestRetryCheck: a decision's reply lost after the server ran it, with
// the client's retries on. go-redis sends the EVALSHA and the INCR again:
// the request counts twice (FAIL). rueidis and valkey-go do not, and
// redigo has no retries: the decision fails, the request counts once
// (PASS). A strategy without a fixed-window
// counter is not applicable.
func TestRetryCheck(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	m, err := verify.Run(t.Context(), verify.Config{
		Server: srv, Prefix: redistest.Prefix(t), Strategies: []string{"lua", "incr-expire", "gcra"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		outcome verify.Outcome
		note    string
	}{
		"lua/go-redis":          {verify.Fail, "the server counted the request 2 times"},
		"incr-expire/go-redis":  {verify.Fail, "the server counted the request 2 times"},
		"lua/rueidis":           {verify.Pass, "the server counted the request once"},
		"incr-expire/rueidis":   {verify.Pass, "the server counted the request once"},
		"lua/valkey-go":         {verify.Pass, "the server counted the request once"},
		"incr-expire/valkey-go": {verify.Pass, "the server counted the request once"},
		// redigo has no retries: the decision fails, the request counts once.
		"lua/redigo":         {verify.Pass, "the server counted the request once"},
		"incr-expire/redigo": {verify.Pass, "the server counted the request once"},
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
		}
	}
	if seen != len(want) {
		t.Errorf("%d retry cells; want %d", seen, len(want))
	}
}

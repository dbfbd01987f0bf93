package verify

import (
	"context"
	"fmt"

	"github.com/rlbench/rlbench/strategies"
)

// CheckNoscript: strategies that send EVALSHA, on a private server: after
// SCRIPT FLUSH decisions stay correct and the client counts its fallbacks
// to EVAL.
const CheckNoscript = "noscript"

func init() {
	register(checkDef{
		Check:         Check{Name: CheckNoscript, Doc: "after SCRIPT FLUSH, decisions stay correct, and the EVAL fallbacks are counted (private server only)", ServerWide: true},
		window:        longWindow,
		notApplicable: noscriptNotApplicable,
		run:           checkNoscript,
		expected: func(p strategies.Info, s Server) []Outcome {
			if !p.EVALSHA || !s.Managed {
				return []Outcome{NotApplicable}
			}
			return []Outcome{Pass}
		},
	})
}

// noscriptNotApplicable: a strategy that neither documents nor was seen
// (by the per-key checks) sending EVALSHA has no script to lose, and SCRIPT
// FLUSH needs the private server.
func noscriptNotApplicable(r *row) string {
	switch {
	case !r.info.EVALSHA && r.scripts == 0:
		return "sends no EVALSHA: no script to lose"
	case r.privateServer() == nil:
		return "needs the private server: SCRIPT FLUSH empties the whole server's script cache"
	}
	return ""
}

func checkNoscript(ctx context.Context, t *trial) Cell {
	undocumented := ""
	if !t.info.EVALSHA {
		undocumented = "sends EVALSHA though its commands do not say so; "
	}
	if _, err := t.decide(ctx, t.key("warm")); err != nil {
		return failf("before SCRIPT FLUSH: %v", err)
	}
	before := t.client.Fallbacks()
	if err := t.observer.ScriptFlush(ctx).Err(); err != nil {
		return failf("script flush: %v", err)
	}
	if cell, ok := t.sequence(ctx, t.key("k"), 1, "after SCRIPT FLUSH: "); !ok {
		cell.Note = undocumented + cell.Note
		return cell
	}
	fallbacks := t.client.Fallbacks() - before
	if fallbacks == 0 {
		return failf("%sdecisions after SCRIPT FLUSH are correct, but the client counted no fallback to EVAL", undocumented)
	}
	if cell := t.ttlsSet(ctx); cell.Outcome != Pass {
		return cell
	}
	return Cell{Outcome: Pass, Note: fmt.Sprintf("%s%d %s to EVAL after SCRIPT FLUSH; decisions correct (%d allowed, then rejected)",
		undocumented, fallbacks, plural(int(fallbacks), "fallback", "fallbacks"), t.cfg.Limit)}
}

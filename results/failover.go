package results

import (
	"fmt"
	"strings"
	"time"
)

// Failover is what a Sentinel failover (the sentinel-failover fault) did
// to a run: how long its decisions failed, and the increments the promoted
// replica never saw; and, for every run of an increment-first counter
// strategy, how the server's counters compare at the end of the load with
// the increments the clients were told of.
type Failover struct {
	// FailoverRecovery is how the run's decisions failed and recovered;
	// nil, and absent from the JSON, for a run without that fault.
	FailoverRecovery *FailoverRecovery `json:"failover_recovery,omitempty"`
	// LostIncrements compares the counts the clients were told with the
	// counters on the server (the new master, after a failover); nil for a
	// strategy that keeps no increment-first counter, in a run without
	// that fault.
	LostIncrements *LostIncrements `json:"lost_increments,omitempty"`
	// SplitBrain is what the split-brain fault did; nil, and absent from
	// the JSON, for a run without it.
	SplitBrain *SplitBrain `json:"split_brain,omitempty"`
}

// FailoverRecovery is when a run's decisions failed around a failover and
// when they succeeded again, on the clock of the load (seconds from its
// start). The fields other than FailedDecisions and ScriptFallbacks are 0
// when no decision failed.
type FailoverRecovery struct {
	// FailedDecisions is the number of decisions that failed during the
	// load, simulated crashes left out.
	FailedDecisions int64 `json:"failed_decisions"`
	// FirstFailureS and LastFailureS are when the first and the last
	// failed decision ended, in seconds from the start of the load.
	FirstFailureS float64 `json:"first_failure_s"`
	LastFailureS  float64 `json:"last_failure_s"`
	// RecoveryS is the time from the first failed decision to the first
	// success after it, in seconds; -1 when no decision succeeded after it.
	RecoveryS float64 `json:"recovery_s"`
	// FailingS is the time from the first failed decision to the first
	// success after the last one, in seconds: how long failures went on;
	// -1 when no decision succeeded after the last failure.
	FailingS float64 `json:"failing_s"`
	// ClientsSwitchedS is the time from the start of the first failover
	// (SENTINEL FAILOVER) until the cell's client had a connection open on
	// the new master, in seconds; -1 when none was seen. Until then its
	// requests went to the old master, and the increments they made are
	// lost (LostIncrements).
	ClientsSwitchedS float64 `json:"clients_switched_s"`
	// ScriptFallbacks counts the scripts sent again after NOSCRIPT from
	// the first failover on: the new master's empty script cache.
	ScriptFallbacks int64 `json:"script_fallbacks_after"`
}

// LostIncrements is what a run lost, or counted more than once, of a
// counter strategy's counts. At the end of the load, and right after each
// failover (writes paused on the masters, CLIENT PAUSE WRITE, and the
// replies in flight delivered), each followed key's counter on the server
// is compared with the increments the clients were told of in the key's
// current window (each successful decision of an increment-first counter
// is one, its count is its rank): a counter below is increments lost, one
// above phantom increments. The windows that ended before a comparison are
// not compared. Where a key has both, they offset each other: the counts
// are lower bounds.
type LostIncrements struct {
	// Master is the server whose counters were read last, host:port: the
	// new master after a failover.
	Master string `json:"master"`
	// ReadAtS is when the counters were read, in seconds from the start of
	// the load.
	ReadAtS float64 `json:"read_at_s"`
	// KeysCompared is the number of keys compared: those the admission
	// figures follow that had a counter on the new master.
	KeysCompared int64 `json:"keys_compared"`
	// Keys is the number of keys that lost increments.
	Keys int64 `json:"keys"`
	// Increments is the number of increments lost, over every key.
	Increments int64 `json:"increments"`
	// MaxPerKey is the most increments one key lost.
	MaxPerKey int64 `json:"max_per_key"`
	// Unacknowledged is the number of increments the server holds that no
	// client was told of: decisions that failed after their increment ran,
	// and increments a client retried after the server had run them. Each
	// may hide a lost one.
	Unacknowledged int64 `json:"unacknowledged"`
	// Phantom is Unacknowledged under the name issue 24 gives it: the
	// increments on the server above those the clients were told of (a
	// retried or unacknowledged increment), each a request counted that no
	// user was told was admitted or rejected.
	Phantom int64 `json:"phantom_increments"`
	// OverAdmitted is the number of requests admitted beyond the limit, in
	// total, in the windows that lost increments: the new master counted
	// from the lower value, so a key that reached its limit there let that
	// many more through. It is counted when each window ends, or at the end
	// of the load for a window still open; 0 where no key reached its limit.
	OverAdmitted int64 `json:"over_admitted"`
	// OverAdmittedKeys is the number of keys whose window admitted more
	// than the limit.
	OverAdmittedKeys int64 `json:"over_admitted_keys"`
	// KeysCutShort and KeysTurned are the keys left out of the comparison
	// at the end of the load: those with a decision cut short (by
	// --crash-rate or the end of the load: its increment may or may not
	// have run), and those whose first window ended before the counters
	// were read.
	KeysCutShort int64 `json:"keys_cut_short,omitempty"`
	KeysTurned   int64 `json:"keys_window_ended,omitempty"`
	// Error says why the counters could not be compared; "" when they were.
	Error string `json:"error,omitempty"`
}

// Add combines the failover figures of runs that several load generators
// made at the same time (package merge): failed decisions, fallbacks and
// lost increments add up (each generator's keys are its own); the first
// failure is the earliest, the last failure, RecoveryS, FailingS,
// ClientsSwitchedS and MaxPerKey the largest, each on its own generator's clock; -1 (no
// success after the failures) wins over any time.
func (f *Failover) Add(o Failover) {
	f.FailoverRecovery = f.FailoverRecovery.add(o.FailoverRecovery)
	f.LostIncrements = f.LostIncrements.add(o.LostIncrements)
	// One set-up's split brain, seen by each generator: the first's.
	f.SplitBrain = cloneOr(f.SplitBrain, o.SplitBrain)
}

func (r *FailoverRecovery) add(o *FailoverRecovery) *FailoverRecovery {
	if r == nil || o == nil {
		return cloneOr(r, o)
	}
	out := *r
	out.ScriptFallbacks += o.ScriptFallbacks
	out.FailedDecisions += o.FailedDecisions
	switch {
	case o.FailedDecisions == 0:
	case r.FailedDecisions == 0:
		out.FirstFailureS, out.LastFailureS, out.RecoveryS, out.FailingS = o.FirstFailureS, o.LastFailureS, o.RecoveryS, o.FailingS
	default:
		out.FirstFailureS = min(r.FirstFailureS, o.FirstFailureS)
		out.LastFailureS = max(r.LastFailureS, o.LastFailureS)
		out.RecoveryS, out.FailingS = worstSpan(r.RecoveryS, o.RecoveryS), worstSpan(r.FailingS, o.FailingS)
	}
	out.ClientsSwitchedS = worstSpan(r.ClientsSwitchedS, o.ClientsSwitchedS)
	return &out
}

// worstSpan is the longer of two spans, -1 (never ended) the longest.
func worstSpan(a, b float64) float64 {
	if a < 0 || b < 0 {
		return -1
	}
	return max(a, b)
}

func (l *LostIncrements) add(o *LostIncrements) *LostIncrements {
	if l == nil || o == nil {
		return cloneOr(l, o)
	}
	out := *l
	out.Master = joinDistinct(l.Master, o.Master, " | ")
	out.ReadAtS = max(l.ReadAtS, o.ReadAtS)
	out.KeysCompared += o.KeysCompared
	out.KeysCutShort += o.KeysCutShort
	out.KeysTurned += o.KeysTurned
	out.Keys += o.Keys
	out.Increments += o.Increments
	out.MaxPerKey = max(l.MaxPerKey, o.MaxPerKey)
	out.Unacknowledged += o.Unacknowledged
	out.Phantom += o.Phantom
	out.OverAdmitted += o.OverAdmitted
	out.OverAdmittedKeys += o.OverAdmittedKeys
	out.Error = joinDistinct(l.Error, o.Error, "; ")
	if l.Error == "" || o.Error == "" {
		out.Error = l.Error + o.Error
	}
	return &out
}

// cloneOr returns a copy of whichever of a and b is not nil; nil when
// both are.
func cloneOr[T any](a, b *T) *T {
	if a == nil {
		a = b
	}
	if a == nil {
		return nil
	}
	c := *a
	return &c
}

// Text says what f shows, in one line per figure (each ending in a
// newline), each starting with label; "" when f is empty.
func (f Failover) Text(label string) string {
	var s string
	if r := f.FailoverRecovery; r != nil {
		s += label + " failover: " + r.text() + "\n"
	}
	if b := f.SplitBrain; b != nil {
		s += label + " split brain: " + b.text() + "\n"
	}
	if l := f.LostIncrements; l != nil {
		s += label + " lost increments: " + l.text() + "\n"
	}
	return s
}

func (r FailoverRecovery) text() string {
	s := "clients on the new master " + spanText(r.ClientsSwitchedS) + " after it began; "
	if r.FailedDecisions == 0 {
		s += "no decision failed"
	} else {
		s += fmt.Sprintf("%d decisions failed, from %.3fs to %.3fs; first success %s after the first failure, failures ended %s after it",
			r.FailedDecisions, r.FirstFailureS, r.LastFailureS, spanText(r.RecoveryS), spanText(r.FailingS))
	}
	return s + fmt.Sprintf("; %d NOSCRIPT fallbacks after it", r.ScriptFallbacks)
}

// spanText writes a span in seconds, or says that it never ended.
func spanText(s float64) string {
	if s < 0 {
		return "never"
	}
	d := time.Duration(s * float64(time.Second))
	if d >= time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Microsecond).String()
}

func (l LostIncrements) text() string {
	if l.Error != "" && l.KeysCompared == 0 {
		return "not measured: " + l.Error
	}
	if l.Error == "" && l.Increments == 0 && l.Phantom == 0 && l.OverAdmitted == 0 {
		return fmt.Sprintf("0, and 0 phantom: the %d %s compared match the increments the clients were told of%s", l.KeysCompared, plural(l.KeysCompared, "counter", "counters"), l.leftOut())
	}
	s := fmt.Sprintf("%d on %d of %d keys (at most %d on one key), counters read on %s at %.2fs; %d phantom (unacknowledged); over the limit: %d requests on %d keys",
		l.Increments, l.Keys, l.KeysCompared, l.MaxPerKey, l.Master, l.ReadAtS, l.Phantom, l.OverAdmitted, l.OverAdmittedKeys)
	if l.Error != "" {
		s += " (" + l.Error + ")"
	}
	return s + l.leftOut()
}

// leftOut says which keys the comparison left out, and why; "" for none.
func (l LostIncrements) leftOut() string {
	var why []string
	if l.KeysCutShort > 0 {
		why = append(why, fmt.Sprintf("%d with a decision cut short", l.KeysCutShort))
	}
	if l.KeysTurned > 0 {
		why = append(why, fmt.Sprintf("%d whose window ended", l.KeysTurned))
	}
	if len(why) == 0 {
		return ""
	}
	return "; not compared: " + strings.Join(why, ", ") + " (docs/output.md)"
}

// failover checks f's figures for Validate.
func (c *checker) failover(f Failover) {
	c.splitBrain(f.SplitBrain)
	if r := f.FailoverRecovery; r != nil {
		c.count("failover_recovery.failed_decisions", r.FailedDecisions)
		c.count("failover_recovery.script_fallbacks_after", r.ScriptFallbacks)
		c.between("failover_recovery.first_failure_s", r.FirstFailureS, 0, MaxDurationS)
		c.between("failover_recovery.last_failure_s", r.LastFailureS, 0, MaxDurationS)
		c.between("failover_recovery.recovery_s", r.RecoveryS, -1, MaxDurationS)
		c.between("failover_recovery.failing_s", r.FailingS, -1, MaxDurationS)
		c.between("failover_recovery.clients_switched_s", r.ClientsSwitchedS, -1, MaxDurationS)
	}
	if l := f.LostIncrements; l != nil {
		c.between("lost_increments.read_at_s", l.ReadAtS, 0, MaxDurationS)
		for _, x := range []struct {
			field string
			n     int64
		}{
			{"keys_compared", l.KeysCompared}, {"keys", l.Keys}, {"increments", l.Increments},
			{"max_per_key", l.MaxPerKey}, {"unacknowledged", l.Unacknowledged}, {"phantom_increments", l.Phantom},
			{"over_admitted", l.OverAdmitted}, {"over_admitted_keys", l.OverAdmittedKeys},
			{"keys_cut_short", l.KeysCutShort}, {"keys_window_ended", l.KeysTurned},
		} {
			c.count("lost_increments."+x.field, x.n)
		}
		if l.Keys > l.KeysCompared {
			c.fail("lost_increments.keys", "%d is more than keys_compared %d", l.Keys, l.KeysCompared)
		}
	}
}

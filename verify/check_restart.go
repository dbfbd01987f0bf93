package verify

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

// CheckRestart: on a private server: the server restarts while a client
// decides; decisions error during the downtime, then resume and are
// correct. A strategy that needs preparing (strategies.Preparer) is
// prepared again when a decision after the restart gets an error reply.
const CheckRestart = "restart"

// Timing of the restart check.
const (
	// resumeTimeout bounds the wait for decisions to succeed again after a
	// restart.
	resumeTimeout = 10 * time.Second
	// resumeStreak is how many decisions in a row must succeed before the
	// restart check counts the client as back: a pipelining client
	// (rueidis, valkey-go) picks one of its connections at random for each
	// command (rueidis' slotfn), and finds each dead one on its first use;
	// 32 in a row miss one of two connections with a chance of 1 in 2
	// billion (8 missed one in 128), one of four with 4 in 10,000.
	resumeStreak = 32
)

func init() {
	register(checkDef{
		Check:  Check{Name: CheckRestart, Doc: "the private server restarts mid-check; errors are counted, the client reconnects, and decisions resume", ServerWide: true},
		window: longWindow,
		notApplicable: func(r *row) string {
			if r.privateServer() == nil {
				return "needs the private server"
			}
			return ""
		},
		run: checkRestart,
		expected: func(p strategies.Info, s Server) []Outcome {
			if !s.Managed {
				return []Outcome{NotApplicable}
			}
			return passUnlessNoTTL(p, s)
		},
	})
}

// restartSeen is what the restart check saw, for its note.
type restartSeen struct {
	took       time.Duration    // the restart's duration
	decisions  int64            // decisions made during the restart
	errored    int64            // of which errored
	after      int64            // decisions that errored after the restart
	resumed    time.Duration    // from the restart's end to the first of resumeStreak successes
	kinds      map[string]int64 // errors by kind, during and after
	reprepared string           // the error reply that made the check prepare the strategy again
	reloads    int64            // FUNCTION LOADs the strategy sent itself
}

func checkRestart(ctx context.Context, t *trial) Cell {
	during := t.key("during")
	if _, err := t.decide(ctx, during); err != nil {
		return failf("before the restart: %v", err)
	}
	loads := t.client.functionLoads.Load()
	seen := restartSeen{kinds: map[string]int64{}}
	if err := t.decideThroughRestart(ctx, during, &seen); err != nil {
		return failf("%v", err)
	}
	if err := t.waitResumed(ctx, during, &seen); err != nil {
		return failf("%v", err)
	}
	if seen.reprepared == "" {
		seen.reloads = t.client.functionLoads.Load() - loads
	}
	// Correct again, on a fresh key.
	after := t.key("after")
	if cell, ok := t.sequence(ctx, after, 1, "after the restart: "); !ok {
		return cell
	}
	if cell := t.ttlsSetUnder(ctx, after); cell.Outcome != Pass {
		return cell
	}
	return Cell{Outcome: Pass, Note: seen.note(t.cfg.Limit)}
}

// decideThroughRestart restarts the private server and decides on key in
// a loop until the restart returns.
func (t *trial) decideThroughRestart(ctx context.Context, key string, seen *restartSeen) error {
	restarted := make(chan error, 1)
	start := time.Now()
	go func() { restarted <- t.privateServer().Restart(ctx) }()
	for {
		select {
		case err := <-restarted:
			seen.took = time.Since(start)
			return err
		default:
		}
		seen.decisions++
		if _, err := t.decideWithin(ctx, key, time.Second); err != nil {
			seen.errored++
			seen.kinds[results.ErrorKind(err)]++
		}
		if err := sleep(ctx, 2*time.Millisecond); err != nil {
			<-restarted
			return err
		}
	}
}

// waitResumed decides on key, then on a fresh key per decision (as the
// checks after it do), until decisions succeed again, resumeStreak in a
// row: a client with several connections (rueidis and valkey-go pipeline
// over up to four) finds each dead one on its first use. The first error
// reply prepares a strategies.Preparer again.
func (t *trial) waitResumed(ctx context.Context, key string, seen *restartSeen) error {
	resume := time.Now()
	for streak, n := 0, 0; streak < resumeStreak; n++ {
		k := key
		if n > 0 {
			k = t.key("resume" + strconv.Itoa(n))
		}
		_, err := t.decide(ctx, k)
		if err == nil {
			streak++
			continue
		}
		streak = 0
		seen.after++
		seen.kinds[results.ErrorKind(err)]++
		if _, ok := errors.AsType[strategies.ReplyError](err); ok && seen.reprepared == "" {
			if p, ok := t.strategy.(strategies.Preparer); ok {
				seen.reprepared = err.Error()
				if err := p.Prepare(ctx, t.client); err != nil {
					return fmt.Errorf("prepare again after the restart: %w", err)
				}
				continue
			}
		}
		if time.Since(resume) > resumeTimeout {
			return fmt.Errorf("restarted in %s; no decision succeeded in the %s after it; last error: %w", seen.took.Round(time.Millisecond), resumeTimeout, err)
		}
		if err := sleep(ctx, pollInterval); err != nil {
			return err
		}
	}
	seen.resumed = time.Since(resume)
	return nil
}

// note says what the restart check saw, ending with the decisions that
// showed the strategy correct again.
func (seen restartSeen) note(limit int64) string {
	parts := []string{
		fmt.Sprintf("restarted in %s", seen.took.Round(time.Millisecond)),
		fmt.Sprintf("%d of %d decisions during it errored", seen.errored, seen.decisions),
	}
	if seen.after > 0 {
		parts = append(parts, fmt.Sprintf("%d more after it, succeeding again %s after it", seen.after, seen.resumed.Round(time.Millisecond)))
	} else {
		parts = append(parts, fmt.Sprintf("the first %d decisions after it succeeded", resumeStreak))
	}
	if len(seen.kinds) > 0 {
		parts = append(parts, "errors: "+results.FormatErrorKinds(seen.kinds, ", "))
	}
	if seen.reprepared != "" {
		parts = append(parts, fmt.Sprintf("prepared again after %q", firstLine(seen.reprepared)))
	}
	if seen.reloads > 0 {
		parts = append(parts, fmt.Sprintf("the strategy reloaded its function library itself (%d FUNCTION LOAD)", seen.reloads))
	}
	parts = append(parts, fmt.Sprintf("then %d allowed, the next rejected", limit))
	return strings.Join(parts, "; ")
}

package verify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/netproxy"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

// CheckRetry: a decision's reply is lost after the server ran it (a proxy
// on loopback resets the connection instead of passing the reply on),
// with the client's retries on (retryRetries): does the counter count the
// request twice? The reply lost is that of the round trip that counts a
// key's second request (writeRoundTrip): its INCR, or its script. go-redis
// sends every command again after a network error (MaxRetries), also one
// the server already ran (leaks), but not a MULTI/EXEC transaction;
// rueidis and valkey-go retry read-only commands only, redigo not at all,
// and the decision fails instead. A set-up error is a FAIL, never
// documented.
const CheckRetry = "retry"

// retryRetries is the retries of the retry check's client: go-redis'
// default MaxRetries.
const retryRetries = 3

func init() {
	register(checkDef{
		Check:  Check{Name: CheckRetry, Doc: "the reply of a key's second decision's write (INCR, script) lost after the server ran it, with the client's retries (3): the request is counted once (go-redis sends it again: leaks, but for a MULTI/EXEC transaction)"},
		window: longWindow,
		notApplicable: func(r *row) string {
			if !r.info.FixedWindow {
				return "needs a fixed-window counter"
			}
			if r.server.Cluster {
				return "needs a single server or a Sentinel master: a cluster's clients learn the nodes' addresses past the proxy"
			}
			return ""
		},
		run:        checkRetry,
		expectedOn: expectedRetry,
	})
}

// expectedRetry is the retry check's expectation, which depends on the
// client: go-redis sends a command again after its reply was lost, a
// write the server had run included, so that the request counts twice
// (leaks), except a MULTI/EXEC transaction, which it does not send again
// (pass); rueidis and valkey-go send only read-only commands again and
// redigo has no retries: the decision fails, the request counts once
// (pass). No client named (""): both.
func expectedRetry(client string, p strategies.Info, s Server) []Outcome {
	switch {
	case !p.FixedWindow || s.Cluster:
		return []Outcome{NotApplicable}
	case client == "":
		return []Outcome{Pass, Leaks}
	case client == "go-redis" && !strings.HasPrefix(p.Commands, "MULTI"):
		return []Outcome{Leaks}
	}
	return []Outcome{Pass}
}

func checkRetry(ctx context.Context, t *trial) Cell {
	proxy, err := netproxy.Start(t.server.Addr)
	if err != nil {
		return failf("%v", err)
	}
	defer proxy.Close()
	retries := retryRetries
	if errors.Is(clients.CheckOptions(t.row.clientName, clients.Options{Retries: retries}), clients.ErrNoRetries) {
		retries = 0 // a client with no retries (redigo) never sends a command again
	}
	client, err := t.row.connectTo(ctx, proxy.Addr(), retries)
	if err != nil {
		return failf("%v", err)
	}
	defer t.row.closeClient(client)
	t.client = client // the trial's own: the shared client stays as it is
	// A decision first, so that the reply lost is the decision's, not
	// that of a new connection's handshake; then a key's second decision,
	// whose round trips name the write to lose.
	write, err := t.writeRoundTrip(ctx)
	if err != nil {
		return failf("%v", err)
	}
	// The reply lost may be of another command the client sent at the
	// same time (a new connection's handshake, a keep-alive): then the
	// request did not count, and the check tries again on a fresh key.
	var cell Cell
	for attempt := 1; attempt <= retryAttempts; attempt++ {
		counted, allowed, took, lostErr, err := t.loseOneReply(ctx, proxy, t.key(fmt.Sprintf("k%d", attempt)), write)
		if err != nil {
			return failf("%v", err)
		}
		cell = retryCell(counted, allowed, t.cfg.Limit, write, lostErr)
		// Requests given back by the strategy once a request's share of
		// the window has gone by are allowed again, and the count is low:
		// too late to judge (Cell.late), whatever the cell says.
		cell.late = took >= t.lateAfter()
		if counted > 0 || lostErr == nil {
			break
		}
	}
	return cell
}

// retryAttempts bounds the retry check's attempts to lose the reply of a
// decision rather than another command's.
const retryAttempts = 3

// writeRoundTrip returns the round trip, as a strategies.Tap names it,
// that counts a key's second request: the first that names an increment
// (INCR, INCRBY, HINCRBY), else the first script call (EVALSHA, EVAL,
// FCALL). The second, because a strategy that reads first creates the
// counter otherwise on the first (naive: GET; SET EXAT) and increments it
// on the later ones (GET; INCR).
func (t *trial) writeRoundTrip(ctx context.Context) (string, error) {
	key := t.key("probe")
	if _, err := t.decide(ctx, key); err != nil {
		return "", fmt.Errorf("a decision through the proxy: %w", err)
	}
	var sent []string
	tapped := strategies.WithTap(ctx, &strategies.Tap{Sent: func(rt string) { sent = append(sent, rt) }})
	if _, err := t.decide(tapped, key); err != nil {
		return "", fmt.Errorf("a key's second decision through the proxy: %w", err)
	}
	for _, names := range [][]string{{"INCR", "INCRBY", "HINCRBY"}, {"EVALSHA", "EVAL", "FCALL"}} {
		for _, rt := range sent {
			if slices.ContainsFunc(strings.Split(rt, "+"), func(c string) bool { return slices.Contains(names, strings.Fields(c)[0]) }) {
				return rt, nil
			}
		}
	}
	return "", fmt.Errorf("a key's second decision sent no increment nor script (%s)", strings.Join(sent, "; "))
}

// loseOneReply makes one decision on key, then a second one whose write
// round trip's reply the proxy loses, then decides on key until a request
// is rejected, and returns how many times the second request counted (the
// limit, less the requests allowed before and after it), those allowed
// after it, the time from the first request to the last, and the second
// request's own error.
func (t *trial) loseOneReply(ctx context.Context, proxy *netproxy.Proxy, key, write string) (counted, allowed int64, took time.Duration, lostErr, err error) {
	if err := t.roomInWindow(ctx, key); err != nil {
		return 0, 0, 0, nil, err
	}
	first := time.Now()
	if _, err := t.decide(ctx, key); err != nil {
		return 0, 0, 0, nil, fmt.Errorf("request 1, before the lost reply: %w", err)
	}
	before, losing := proxy.Stats().LostReplies, true
	lossy := strategies.WithTap(ctx, &strategies.Tap{Sent: func(rt string) {
		if losing && rt == write {
			losing = false
			proxy.LoseReplies(1)
		}
	}})
	_, lostErr = t.decide(lossy, key)
	if lost := proxy.Stats().LostReplies - before; lost != 1 {
		return 0, 0, 0, nil, fmt.Errorf("the proxy lost %d replies of request 2 (%s); want 1", lost, write)
	}
	for i := int64(0); i <= t.cfg.Limit; i++ {
		d, err := t.decide(ctx, key)
		if err != nil {
			return 0, 0, 0, nil, fmt.Errorf("request %d after the lost reply: %w", i+1, err)
		}
		if !d.Allowed {
			break
		}
		allowed++
	}
	return t.cfg.Limit - 1 - allowed, allowed, time.Since(first), lostErr, nil
}

// retryCell is the retry check's cell for a request counted counted times,
// after which allowed of limit were allowed; write is the round trip whose
// reply was lost, lostErr the request's own error (nil when the client's
// retry succeeded).
func retryCell(counted, allowed, limit int64, write string, lostErr error) Cell {
	told := "the client's retry succeeded"
	if lostErr != nil {
		told = fmt.Sprintf("the decision failed (%s): the client did not send it again", results.ErrorKind(lostErr))
	}
	lost := fmt.Sprintf("request 2's %s reply lost, %s", write, told)
	switch {
	case counted == 1:
		return Cell{Outcome: Pass, Note: fmt.Sprintf("%s; the server counted the request once: %d of %d allowed after it", lost, allowed, limit)}
	case counted > 1:
		return Cell{Outcome: Leaks, Note: fmt.Sprintf("%s: the server counted the request %d times (%d of %d allowed after it): each retry after the server had run it is a request counted again, users rejected early", lost, counted, allowed, limit)}
	}
	if lostErr != nil {
		// The reply lost was another command's, or the write never
		// ran: the decision failed uncounted, not counted twice.
		return Cell{Outcome: Pass, Note: fmt.Sprintf("%s; the server did not count the request: %d of %d allowed after it", lost, allowed, limit)}
	}
	return failf("%s: the server did not count the request (%d of %d allowed after it)", lost, allowed, limit)
}

// proxiedServerName is the TLS server name of a client that dials a proxy
// in front of addr: addr's host.
func proxiedServerName(addr string) string {
	host, _, _ := net.SplitHostPort(addr)
	return host
}

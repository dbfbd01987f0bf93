package verify

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/netproxy"
	"github.com/rlbench/rlbench/results"
)

// CheckRetry: a decision's reply is lost after the server ran it (a proxy
// on loopback resets the connection instead of passing the reply on),
// with the client's retries on (retryRetries): does the counter count the
// request twice? go-redis sends every command again after a network error
// (MaxRetries), also one the server already ran; rueidis retries read-only
// commands only, and the decision fails instead.
const CheckRetry = "retry"

// retryRetries is the retries of the retry check's client: go-redis'
// default MaxRetries.
const retryRetries = 3

func init() {
	register(checkDef{
		Check:  Check{Name: CheckRetry, Doc: "a reply lost after the server ran the decision, with the client's retries (3): the request is counted once"},
		window: longWindow,
		notApplicable: func(r *row) string {
			if !r.properties.FixedWindow {
				return "needs a fixed-window counter"
			}
			if r.server.Cluster {
				return "needs a single server or a Sentinel master: a cluster's clients learn the nodes' addresses past the proxy"
			}
			return ""
		},
		run: checkRetry,
		// Which, depends on the client, which the expectation does not
		// know: go-redis retries a write after its reply was lost (FAIL
		// unless the decision is idempotent), rueidis does not (PASS).
		expected: func(p Properties, s Server) []Outcome {
			if !p.FixedWindow || s.Cluster {
				return []Outcome{NotApplicable}
			}
			return []Outcome{Pass, Fail}
		},
	})
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
	// that of a new connection's handshake.
	if _, err := t.decide(ctx, t.key("warm")); err != nil {
		return failf("a decision through the proxy: %v", err)
	}
	// The reply lost may be of another command the client sent at the
	// same time (a new connection's handshake, a keep-alive): then the
	// request did not count, and the check tries again on a fresh key.
	var cell Cell
	for attempt := 1; attempt <= retryAttempts; attempt++ {
		counted, allowed, lostErr, err := t.loseOneReply(ctx, proxy, t.key(fmt.Sprintf("k%d", attempt)))
		if err != nil {
			return failf("%v", err)
		}
		if cell = retryCell(counted, allowed, t.cfg.Limit, lostErr); counted > 0 || lostErr == nil {
			break
		}
	}
	return cell
}

// retryAttempts bounds the retry check's attempts to lose the reply of a
// decision rather than another command's.
const retryAttempts = 3

// loseOneReply makes one decision on key whose first reply the proxy
// loses, then decides on key until a request is rejected, and returns how
// many times the first request counted (the limit, less the requests
// allowed after it), those allowed, and the first request's own error.
func (t *trial) loseOneReply(ctx context.Context, proxy *netproxy.Proxy, key string) (counted, allowed int64, lostErr, err error) {
	if err := t.roomInWindow(ctx, key); err != nil {
		return 0, 0, nil, err
	}
	before := proxy.Stats().LostReplies
	proxy.LoseReplies(1)
	_, lostErr = t.decide(ctx, key)
	if lost := proxy.Stats().LostReplies - before; lost != 1 {
		return 0, 0, nil, fmt.Errorf("the proxy lost %d replies; want 1", lost)
	}
	for i := int64(0); i <= t.cfg.Limit; i++ {
		d, err := t.decide(ctx, key)
		if err != nil {
			return 0, 0, nil, fmt.Errorf("request %d after the lost reply: %w", i+1, err)
		}
		if !d.Allowed {
			break
		}
		allowed++
	}
	return t.cfg.Limit - allowed, allowed, lostErr, nil
}

// retryCell is the retry check's cell for a request counted counted times,
// after which allowed of limit were allowed; lostErr is the request's own
// error (nil when the client's retry succeeded).
func retryCell(counted, allowed, limit int64, lostErr error) Cell {
	told := "the client's retry succeeded"
	if lostErr != nil {
		told = fmt.Sprintf("the decision failed (%s): the client did not send it again", results.ErrorKind(lostErr))
	}
	switch {
	case counted == 1:
		return Cell{Outcome: Pass, Note: fmt.Sprintf("its reply lost, %s; the server counted the request once: %d of %d allowed after it", told, allowed, limit)}
	case counted > 1:
		return failf("its reply lost, %s: the server counted the request %d times (%d of %d allowed after it): each retry after the server had run it is a request counted again, users rejected early", told, counted, allowed, limit)
	}
	if lostErr != nil {
		// The reply lost was a read's: the decision stopped before it
		// wrote.
		return Cell{Outcome: Pass, Note: fmt.Sprintf("its reply lost, %s; the server did not count the request: %d of %d allowed after it", told, allowed, limit)}
	}
	return failf("its reply lost, %s: the server did not count the request (%d of %d allowed after it)", told, allowed, limit)
}

// proxiedServerName is the TLS server name of a client that dials a proxy
// in front of addr: addr's host.
func proxiedServerName(addr string) string {
	host, _, _ := net.SplitHostPort(addr)
	return host
}

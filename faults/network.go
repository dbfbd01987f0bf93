package faults

import (
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/netproxy"
)

// The network faults act on the load's connections only, through a proxy
// on loopback between the clients and the server (package netproxy):
// rlbench's own connections never go through it.
const (
	// Latency delays every reply by MS milliseconds, give or take up to
	// JITTER, for D: latency@T:D:MS[~JITTER].
	Latency = "latency"
	// ReplyLoss loses each reply with probability P for D: the server ran
	// the request, the connection is reset before the reply reaches the
	// client: reply-loss@T:D:P.
	ReplyLoss = "reply-loss"
	// Partition makes every byte vanish both ways for D, with no reset:
	// the clients see timeouts: partition@T:D.
	Partition = "partition"
	// Reset resets every connection of the load at once: reset@T.
	Reset = "reset"
)

// networkKinds are the kinds that need the proxy.
var networkKinds = []string{Latency, ReplyLoss, Partition, Reset}

// Network reports whether a fault of kind acts on the network between the
// load's clients and the server, through a proxy.
func Network(kind string) bool { return slices.Contains(networkKinds, kind) }

// NeedsProxy reports whether fs has a network fault: the load's
// connections then go through a proxy.
func NeedsProxy(fs []Fault) bool {
	return slices.ContainsFunc(fs, func(f Fault) bool { return Network(f.Kind) })
}

// maxLatencyMS bounds latency's MS: a minute.
const maxLatencyMS = 60_000

// networkSyntax is what a malformed network fault is told.
const networkSyntax = "latency@T:D:MS[~JITTER], reply-loss@T:D:P, partition@T:D, reset@T (D a duration of at least 1ms, MS and JITTER whole milliseconds with JITTER <= MS, P a probability in (0, 1])"

// parseNetwork reads the arguments after T of a network fault (rest, ""
// when there is none) into f.
func parseNetwork(f *Fault, s, rest string, hasArg bool) error {
	bad := func(why string) error {
		return fmt.Errorf("%w; got %q (%s; network faults: %s)", ErrSyntax, s, why, networkSyntax)
	}
	if f.Kind == Reset {
		if hasArg {
			return bad("reset takes no argument")
		}
		return nil
	}
	if !hasArg {
		return bad(f.Kind + " needs a length D")
	}
	d, param, hasParam := strings.Cut(rest, ":")
	var err error
	if f.Arg, err = time.ParseDuration(d); err != nil || f.Arg < time.Millisecond {
		return bad(fmt.Sprintf("bad length %q", d))
	}
	switch {
	case f.Kind == Partition && hasParam:
		return bad("partition takes only a length")
	case f.Kind != Partition && !hasParam:
		return bad(f.Kind + " needs " + map[string]string{Latency: "MS", ReplyLoss: "P"}[f.Kind] + " after its length")
	case f.Kind == Latency:
		ms, jitter, hasJitter := strings.Cut(param, "~")
		if f.LatencyMS, err = strconv.Atoi(ms); err != nil || f.LatencyMS < 1 || f.LatencyMS > maxLatencyMS {
			return bad(fmt.Sprintf("bad latency %q: want whole milliseconds, 1 to %d", ms, maxLatencyMS))
		}
		if hasJitter {
			if f.JitterMS, err = strconv.Atoi(jitter); err != nil || f.JitterMS < 0 || f.JitterMS > f.LatencyMS {
				return bad(fmt.Sprintf("bad jitter %q: want whole milliseconds, 0 to the latency", jitter))
			}
		}
	case f.Kind == ReplyLoss:
		if f.P, err = strconv.ParseFloat(param, 64); err != nil || math.IsNaN(f.P) || f.P <= 0 || f.P > 1 {
			return bad(fmt.Sprintf("bad probability %q: want a number in (0, 1], e.g. 0.05", param))
		}
	}
	return nil
}

// networkString is the part of a network fault's String after its time.
func networkString(f Fault) string {
	switch f.Kind {
	case Latency:
		s := fmt.Sprintf(":%s:%d", f.Arg, f.LatencyMS)
		if f.JitterMS > 0 {
			s += fmt.Sprintf("~%d", f.JitterMS)
		}
		return s
	case ReplyLoss:
		return fmt.Sprintf(":%s:%s", f.Arg, strconv.FormatFloat(f.P, 'g', -1, 64))
	case Partition:
		return ":" + f.Arg.String()
	}
	return ""
}

// networkWhy says why a network fault cannot act on a cluster or a
// Sentinel set-up.
const networkWhy = "needs a single server (private, or --addr): the clients of a cluster or of a Sentinel set-up learn the servers' addresses from the servers, past the proxy"

// StartProxy starts the proxy that the load's connections to addr go
// through when fs has a network fault, and returns it with the address the
// clients dial instead and their TLS configuration (which still names
// addr's host); a nil proxy, addr and cfg when fs has none.
func StartProxy(fs []Fault, addr string, cfg *tls.Config) (*netproxy.Proxy, string, *tls.Config, error) {
	if !NeedsProxy(fs) {
		return nil, addr, cfg, nil
	}
	p, err := netproxy.Start(addr)
	if err != nil {
		return nil, "", nil, fmt.Errorf("network faults: %w", err)
	}
	if cfg != nil && cfg.ServerName == "" {
		host, _, _ := net.SplitHostPort(addr)
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	return p, p.Addr(), cfg, nil
}

// injectNetwork performs the network fault f on p, holds it for its length
// (less if ctx ends first: the load ended) and ends it, and returns its
// event's detail and counts.
func injectNetwork(ctx context.Context, f Fault, p *netproxy.Proxy, ev *Event) error {
	if p == nil {
		return fmt.Errorf("%s: the load's connections go through no proxy", f)
	}
	if f.Kind == Reset {
		n := p.Open()
		ev.ResetConnections = n
		ev.Detail = fmt.Sprintf("reset %d connections", n)
		return p.ResetAll()
	}
	var (
		what        string
		apply, undo func() error
	)
	switch f.Kind {
	case Latency:
		what = fmt.Sprintf("replies delayed %dms~%dms", f.LatencyMS, f.JitterMS)
		apply, undo = func() error { return p.Latency(f.LatencyMS, f.JitterMS) }, p.ClearLatency
	case ReplyLoss:
		what = fmt.Sprintf("replies lost with probability %g", f.P)
		apply, undo = func() error { return p.ReplyLoss(f.P) }, func() error { return p.ReplyLoss(0) }
	case Partition:
		what = "every byte held both ways"
		apply, undo = p.Cut, p.Heal
	default:
		return fmt.Errorf("unknown network fault kind %q", f.Kind)
	}
	before := p.Stats()
	if err := apply(); err != nil {
		return err
	}
	held := hold(ctx, f.Arg)
	err := undo()
	ev.LostReplies = p.Stats().LostReplies - before.LostReplies
	ev.Detail = fmt.Sprintf("%s for %s", what, held.Round(time.Millisecond))
	if held < f.Arg {
		ev.Detail += " (the load ended first)"
	}
	if f.Kind == ReplyLoss {
		ev.Detail += fmt.Sprintf(": %d replies lost, their connections reset", ev.LostReplies)
	}
	return err
}

// hold waits d, or until ctx ends, and returns how long it waited.
func hold(ctx context.Context, d time.Duration) time.Duration {
	start := time.Now()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
	return time.Since(start)
}

// CheckOverlap refuses two network faults of the same kind whose spans
// overlap: the first to end would undo the other (a heal, latency
// cleared, reply loss ended) while it is still meant to hold.
func CheckOverlap(fs []Fault) error {
	for i, a := range fs {
		for _, b := range fs[i+1:] {
			if a.Kind != b.Kind || !Network(a.Kind) || a.Kind == Reset {
				continue
			}
			if a.At < b.At+b.Arg && b.At < a.At+a.Arg {
				return fmt.Errorf("%s and %s overlap: two %s faults must not hold at once (the first to end would end both)", a, b, a.Kind)
			}
		}
	}
	return nil
}

// Package netproxy is an in-process TCP proxy on loopback between a load's
// clients and one server, which cuts, slows and resets their connections on
// demand: toxiproxy v2 used as a library, with one toxic of its own (control)
// for what toxiproxy's toxics cannot do, a reply lost per reply rather than
// per connection, and every connection reset at once, and an accept loop of
// its own (conn.go), so that a close it passes on keeps its kind (a FIN
// stays a FIN) and one it makes is a reset.
package netproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// Toxic names, one per direction where a fault acts both ways.
const (
	latencyDown = "rlbench_latency"
	controlUp   = "rlbench_control_up"
	controlDown = "rlbench_control_down"
)

// Proxy forwards every connection made to Addr to its upstream, through
// the faults set on it.
type Proxy struct {
	// proxy holds the toxics' chains; the proxy's own accept loop (serve)
	// starts the links, toxiproxy's is never started.
	proxy    *toxiproxy.Proxy
	api      *toxiproxy.ApiServer
	listener *net.TCPListener
	upstream string
	served   chan struct{} // closed when serve returns
	state    *state

	connsMu sync.Mutex
	conns   map[*conn]struct{} // open connections; nil once closed

	mu      sync.Mutex
	latency bool
}

// Stats counts what the faults did to the proxy's connections.
type Stats struct {
	// LostReplies counts the replies (chunks of reply bytes read from the
	// server) that ReplyLoss dropped, resetting their connection.
	LostReplies int64
	// Resets counts the connections ResetAll reset.
	Resets int64
}

// Start listens on 127.0.0.1 on a free port and forwards each connection to
// upstream (host:port). Close stops it.
func Start(upstream string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return nil, fmt.Errorf("netproxy: start: upstream %q: %w", upstream, err)
	}
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("netproxy: start proxy to %s: %w", upstream, err)
	}
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	tp := toxiproxy.NewProxy(api, "rlbench:"+upstream, ln.Addr().String(), upstream)
	p := &Proxy{
		proxy: tp, api: api, listener: ln, upstream: upstream,
		served: make(chan struct{}), state: newState(), conns: map[*conn]struct{}{},
	}
	for _, c := range []struct {
		name, stream string
		down         bool
	}{{controlUp, "upstream", false}, {controlDown, "downstream", true}} {
		w, err := p.add(c.name, controlType, c.stream, 1, struct{}{})
		if err != nil {
			_ = ln.Close()
			return nil, err
		}
		ctl := w.Toxic.(*control)
		ctl.state, ctl.down = p.state, c.down
	}
	go p.serve(p.served)
	return p, nil
}

// Addr is the address the proxy listens on, e.g. "127.0.0.1:41234".
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// Cut makes every byte stop both ways, on the open connections and on new
// ones, until Heal: no reset, no close; the clients see timeouts. A new
// connection is still accepted (the kernel completes the handshake) but
// nothing it sends arrives. What is sent meanwhile is held and delivered
// at Heal, as TCP retransmits after a partition, also for a client that
// closed its connection meanwhile: its request reaches the server late,
// followed by its orderly close (FIN).
func (p *Proxy) Cut() error {
	p.state.cut()
	return nil
}

// healTimeout bounds Heal's wait for the requests held to be passed on.
const healTimeout = 30 * time.Second

// Heal ends a Cut: the bytes held are delivered, and flow again. It
// returns once every request held (a closed connection's too) has been
// passed on to the server, so that a count read after it includes them
// (at most 30 seconds: an error then says how many chunks are still held).
func (p *Proxy) Heal() error {
	p.state.heal()
	deadline := time.Now().Add(healTimeout)
	for n := p.state.holding.Load(); n > 0; n = p.state.holding.Load() {
		if time.Now().After(deadline) {
			return fmt.Errorf("netproxy: heal: %d chunks of requests still held after %s", n, healTimeout)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Held is how many chunks of requests a Cut holds, not yet passed on.
func (p *Proxy) Held() int64 { return p.state.holding.Load() }

// Latency delays every reply by ms milliseconds, give or take up to
// jitterMS, until ClearLatency; a second call replaces the first.
func (p *Proxy) Latency(ms, jitterMS int) error {
	if ms < 0 || jitterMS < 0 || jitterMS > ms {
		return fmt.Errorf("netproxy: latency %dms~%dms: want 0 <= jitter <= latency", ms, jitterMS)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.latency {
		if err := p.remove(latencyDown); err != nil {
			return err
		}
		p.latency = false
	}
	if _, err := p.add(latencyDown, "latency", "downstream", 1, map[string]int{"latency": ms, "jitter": jitterMS}); err != nil {
		return err
	}
	p.latency = true
	return nil
}

// ClearLatency ends Latency.
func (p *Proxy) ClearLatency() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.latency {
		return nil
	}
	p.latency = false
	return p.remove(latencyDown)
}

// ReplyLoss makes each reply, with probability prob, reach the proxy from
// the server (the server ran the request) and reset its connection instead
// of reaching the client. The decision is per chunk of reply bytes the
// proxy reads: a pipeline's replies read at once are lost together.
// ReplyLoss(0) ends it.
func (p *Proxy) ReplyLoss(prob float64) error {
	if math.IsNaN(prob) || prob < 0 || prob > 1 {
		return fmt.Errorf("netproxy: reply loss %v: want a probability in [0, 1]", prob)
	}
	p.state.replyLoss.Store(math.Float64bits(prob))
	return nil
}

// LoseReplies makes the next n replies (chunks of reply bytes, on any
// connection) lost as ReplyLoss loses them: the server ran the request,
// the connection is reset instead of the reply reaching the client.
func (p *Proxy) LoseReplies(n int) {
	p.state.loseNext.Store(int64(n))
}

// ResetAll resets every open connection at once (RST to both the client
// and the server).
func (p *Proxy) ResetAll() error {
	p.state.resetAll()
	return nil
}

// Open returns how many client connections are open through the proxy.
func (p *Proxy) Open() int { return p.state.open() }

// Stats returns what the faults did so far.
func (p *Proxy) Stats() Stats {
	return Stats{LostReplies: p.state.lostReplies.Load(), Resets: p.state.resets.Load()}
}

// Close stops listening and resets every connection; on a nil Proxy it
// does nothing.
func (p *Proxy) Close() error {
	if p == nil {
		return nil
	}
	_ = p.listener.Close()
	<-p.served
	p.connsMu.Lock()
	open := p.conns
	p.conns = nil
	p.connsMu.Unlock()
	for c := range open {
		c.resetNow()
	}
	return nil
}

// add adds a toxic to the proxy's chain.
func (p *Proxy) add(name, typ, stream string, toxicity float32, attrs any) (*toxics.ToxicWrapper, error) {
	body, err := json.Marshal(map[string]any{
		"name": name, "type": typ, "stream": stream, "toxicity": toxicity, "attributes": attrs,
	})
	if err != nil {
		return nil, fmt.Errorf("netproxy: add %s: %w", name, err)
	}
	w, err := p.proxy.Toxics.AddToxicJson(strings.NewReader(string(body)))
	if err != nil {
		return nil, fmt.Errorf("netproxy: add %s: %w", name, err)
	}
	return w, nil
}

// remove removes a toxic from the proxy's chain.
func (p *Proxy) remove(name string) error {
	if err := p.proxy.Toxics.RemoveToxic(context.Background(), name); err != nil {
		return fmt.Errorf("netproxy: remove %s: %w", name, err)
	}
	return nil
}

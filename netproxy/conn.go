package netproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/Shopify/toxiproxy/v2/stream"
)

// The proxy accepts its connections itself and hands each direction to a
// toxiproxy link (ToxicCollection.StartLink), so that it holds both
// sockets of each connection and decides how each ends. toxiproxy's own
// accept loop gives a link the bare sockets, whose writer closes its
// destination when the link ends: a reset (RST) for every close with a
// reset_peer toxic in the chain, a FIN for every close without one. A
// reset sent right after the last bytes can overtake them on loopback (the
// two segments can be queued on different CPUs), and it makes the server
// discard what it has not read yet: a request whose client closed during
// a cut was then lost at the heal, not delivered. So here an end the
// proxy relays is orderly, and one it decides is a reset:
//
//   - a side that closes in order (its FIN read as EOF) is passed on as a
//     FIN to the other side, after every byte it sent, held by a cut or
//     not; the other side's replies still flow until it closes too, and
//     then both sockets close;
//   - a reset the proxy makes (ResetAll, a reply lost, Close), or one it
//     relays (a read or a write on either socket failed), resets both
//     sockets (SO_LINGER 0).

// conn is one client's connection through the proxy: the socket the
// client dialled and the proxy's own to the server.
type conn struct {
	client, server *net.TCPConn
	// reset is set when the connection is to be reset: its next end, by
	// either direction's writer, resets both sockets.
	reset atomic.Bool

	mu     sync.Mutex
	ended  int  // directions that ended in order (a FIN passed on)
	closed bool // both sockets closed
	// gone is called once both sockets are closed.
	gone func(*conn)
}

// source is one side's socket as its direction's link reads it: a read
// that fails (the peer reset, or the socket was reset here) makes the
// connection reset; EOF (the peer's FIN) ends the direction in order.
type source struct {
	c    *conn
	sock *net.TCPConn
}

// Read implements io.Reader.
func (s source) Read(b []byte) (int, error) {
	n, err := s.sock.Read(b)
	if err != nil && !errors.Is(err, io.EOF) {
		s.c.reset.Store(true)
	}
	return n, err
}

// destination is one side's socket as the other direction's link writes
// to it; the link closes it when its direction ends.
type destination struct {
	c    *conn
	sock *net.TCPConn
}

// Write implements io.Writer: a write that fails makes the connection reset.
func (d destination) Write(b []byte) (int, error) {
	n, err := d.sock.Write(b)
	if err != nil {
		d.c.reset.Store(true)
	}
	return n, err
}

// Close implements io.Closer: it ends the direction that writes to d.
func (d destination) Close() error {
	d.c.end(d.sock)
	return nil
}

// end ends the direction that writes to sock: a reset of both sockets when
// the connection is to be reset, otherwise a FIN to sock after what was
// written to it, and both sockets closed once both directions ended.
func (c *conn) end(sock *net.TCPConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if c.reset.Load() {
		c.closeLocked(true)
		return
	}
	_ = sock.CloseWrite()
	if c.ended++; c.ended == 2 {
		c.closeLocked(false)
	}
}

// resetNow resets both sockets at once.
func (c *conn) resetNow() {
	c.reset.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closeLocked(true)
	}
}

// closeLocked closes both sockets, with resets when reset is true.
func (c *conn) closeLocked(reset bool) {
	c.closed = true
	for _, sock := range []*net.TCPConn{c.client, c.server} {
		if reset {
			_ = sock.SetLinger(0)
		}
		_ = sock.Close()
	}
	c.gone(c)
}

// serve accepts the proxy's connections until its listener closes, dials
// the server for each, and starts both directions' links; done is closed
// when it returns.
func (p *Proxy) serve(done chan<- struct{}) {
	defer close(done)
	for {
		accepted, err := p.listener.AcceptTCP()
		if err != nil {
			return // closed by Close
		}
		dialled, err := net.Dial("tcp", p.upstream)
		if err != nil {
			_ = accepted.Close()
			continue
		}
		c := &conn{client: accepted, server: dialled.(*net.TCPConn), gone: p.forget}
		if !p.track(c) {
			c.resetNow()
			return
		}
		name := accepted.RemoteAddr().String()
		// The control toxics' state for these two links (control.NewState,
		// which StartLink calls) is this connection's.
		p.state.starting.Store(c)
		p.proxy.Toxics.StartLink(p.api, name+"upstream", source{c, c.client}, destination{c, c.server}, stream.Upstream)
		p.proxy.Toxics.StartLink(p.api, name+"downstream", source{c, c.server}, destination{c, c.client}, stream.Downstream)
		p.state.starting.Store(nil)
	}
}

// track records c as open; false once the proxy is closed.
func (p *Proxy) track(c *conn) bool {
	p.connsMu.Lock()
	defer p.connsMu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// forget records c as closed.
func (p *Proxy) forget(c *conn) {
	p.connsMu.Lock()
	defer p.connsMu.Unlock()
	delete(p.conns, c)
}

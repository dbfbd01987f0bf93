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
// proxy passes on keeps its kind, and one it makes is a reset:
//
//   - a side that closes in order (its FIN read as EOF) is passed on as a
//     FIN to the other side, after every byte it sent, held by a cut or
//     not; the other side's replies still flow until it closes too, and
//     then both sockets close;
//   - a side whose socket fails (a read or a write: the peer reset, or is
//     gone) has its direction end in a reset of the other side, after the
//     bytes it sent;
//   - a reset the proxy makes (ResetAll, a reply lost, Close) resets both
//     sockets (SO_LINGER 0).

// Directions, as indices of conn's per-direction fields.
const (
	upstream   = 0 // client to server
	downstream = 1 // server to client
)

// direction returns the index of the downstream direction when down, else
// the upstream's.
func direction(down bool) int {
	if down {
		return downstream
	}
	return upstream
}

// conn is one client's connection through the proxy: the socket the
// client dialled and the proxy's own to the server.
type conn struct {
	client, server *net.TCPConn
	// reset is set when the proxy resets the connection: its next end, by
	// either direction's writer, resets both sockets.
	reset atomic.Bool
	// failed[d] is set when a read from direction d's source or a write to
	// its destination failed: its end is then a reset of the destination.
	failed [2]atomic.Bool
	// ended[d] is closed when direction d's writer has ended: what its
	// control still passes on is dropped.
	ended [2]chan struct{}

	mu     sync.Mutex
	nEnded int  // directions whose writer has ended
	closed bool // both sockets closed
	// gone is called once both sockets are closed.
	gone func(*conn)
}

// newConn returns the connection of the sockets client and server.
func newConn(client, server *net.TCPConn, gone func(*conn)) *conn {
	return &conn{client: client, server: server, gone: gone, ended: [2]chan struct{}{make(chan struct{}), make(chan struct{})}}
}

// source is direction dir's source socket as its link reads it: a read
// that fails makes the direction end in a reset; EOF (the peer's FIN) ends
// it in order.
type source struct {
	c    *conn
	dir  int
	sock *net.TCPConn
}

// Read implements io.Reader.
func (s source) Read(b []byte) (int, error) {
	n, err := s.sock.Read(b)
	if err != nil && !errors.Is(err, io.EOF) {
		s.c.failed[s.dir].Store(true)
	}
	return n, err
}

// destination is direction dir's destination socket as its link writes to
// it; the link closes it when the direction ends.
type destination struct {
	c    *conn
	dir  int
	sock *net.TCPConn
}

// Write implements io.Writer: a write that fails makes the direction end
// in a reset.
func (d destination) Write(b []byte) (int, error) {
	n, err := d.sock.Write(b)
	if err != nil {
		d.c.failed[d.dir].Store(true)
	}
	return n, err
}

// Close implements io.Closer: it ends direction dir.
func (d destination) Close() error {
	d.c.end(d.dir, d.sock)
	return nil
}

// end ends direction dir, whose destination is sock: both sockets reset
// when the proxy resets the connection; else sock reset when the direction
// failed, or a FIN to it after what was written to it; both sockets
// closed once both directions ended.
func (c *conn) end(dir int, sock *net.TCPConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.ended[dir]: // ended already
	default:
		close(c.ended[dir])
	}
	if c.closed {
		return
	}
	switch {
	case c.reset.Load():
		c.closeLocked(true)
		return
	case c.failed[dir].Load():
		_ = sock.SetLinger(0)
		_ = sock.Close()
	default:
		_ = sock.CloseWrite()
	}
	if c.nEnded++; c.nEnded == 2 {
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

// closeLocked closes both sockets (one already closed stays so), with
// resets when reset is true.
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
		c := newConn(accepted, dialled.(*net.TCPConn), p.forget)
		if !p.track(c) {
			c.resetNow()
			return
		}
		name := accepted.RemoteAddr().String()
		// The control toxics' state for these two links (control.NewState,
		// which StartLink calls) is this connection's.
		p.state.starting.Store(c)
		p.proxy.Toxics.StartLink(p.api, name+"upstream", source{c, upstream, c.client}, destination{c, upstream, c.server}, stream.Upstream)
		p.proxy.Toxics.StartLink(p.api, name+"downstream", source{c, downstream, c.server}, destination{c, downstream, c.client}, stream.Downstream)
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

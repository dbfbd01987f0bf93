package netproxy

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// controlType is the toxiproxy type name of control.
const controlType = "rlbench_control"

func init() { toxics.Register(controlType, new(control)) }

// state is what the control toxics of one proxy share: the reply-loss
// probability, the cut, the signal that resets every connection, and the
// counts.
type state struct {
	replyLoss   atomic.Uint64 // math.Float64bits of the probability
	loseNext    atomic.Int64  // replies to lose next, whatever the probability
	lostReplies atomic.Int64
	resets      atomic.Int64
	// holding is the chunks of requests (upstream) held during a cut and
	// not yet passed on: Heal waits until it is 0.
	holding atomic.Int64

	// cutting is nil while the network is whole; during a cut, the cut,
	// whose healed channel heal closes. Read for each chunk.
	cutting atomic.Pointer[cut]

	// starting is the connection whose links serve is starting, for
	// NewState, which StartLink calls for each control toxic of a link.
	starting atomic.Pointer[conn]

	mu    sync.Mutex
	reset chan struct{}                  // closed by resetAll, then replaced
	live  map[*toxics.ToxicStub]struct{} // downstream stubs of open connections
}

func newState() *state {
	return &state{reset: make(chan struct{}), live: map[*toxics.ToxicStub]struct{}{}}
}

// resetAll signals every open connection's control toxics to reset it.
func (s *state) resetAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resets.Add(int64(len(s.live)))
	close(s.reset)
	s.reset = make(chan struct{})
}

// cut is one cut of the network; healed is closed when it heals.
type cut struct{ healed chan struct{} }

// cut holds every byte both ways until heal.
func (s *state) cut() {
	s.cutting.CompareAndSwap(nil, &cut{healed: make(chan struct{})})
}

// heal ends a cut.
func (s *state) heal() {
	if c := s.cutting.Swap(nil); c != nil {
		close(c.healed)
	}
}

// cutNow returns the channel closed when the current cut heals; nil when
// there is no cut.
func (s *state) cutNow() chan struct{} {
	if c := s.cutting.Load(); c != nil {
		return c.healed
	}
	return nil
}

// open returns how many connections are open.
func (s *state) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

// enter records stub as open (down: a downstream stub) and returns the
// reset signal it must watch.
func (s *state) enter(stub *toxics.ToxicStub, down bool) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if down {
		s.live[stub] = struct{}{}
	}
	return s.reset
}

// leave records stub as closed.
func (s *state) leave(stub *toxics.ToxicStub) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, stub)
}

// control is a toxic that passes data through unless told otherwise.
// During a cut it holds every byte, both ways, and delivers them when the
// cut heals, as TCP's retransmissions would after a partition: a
// connection that stays open loses nothing (its replies still match its
// requests), and a request whose client gave up and closed still reaches
// the server, late. It resets its connection when ResetAll says so and,
// downstream (replies), with the reply-loss probability per chunk.
// toxiproxy's own toxicity decides once per connection, which cannot lose
// one reply in P; its timeout toxic drops bytes (a live connection then
// reads the wrong replies) and closes every connection when removed.
type control struct {
	state *state
	down  bool
}

// held is one stub's bytes held during a cut (toxics.StatefulToxic: kept
// across the re-runs of Pipe when other toxics join or leave).
type held struct {
	// conn is the connection of the stub's link (nil for a link that
	// serve did not start).
	conn   *conn
	chunks []*stream.StreamChunk
	// ended is true when the source closed during the cut: the stub
	// closes once what it holds is delivered.
	ended bool
}

// NewState implements toxics.StatefulToxic.
func (c *control) NewState() any { return &held{conn: c.state.starting.Load()} }

// Pipe implements toxics.Toxic.
func (c *control) Pipe(stub *toxics.ToxicStub) {
	reset := c.state.enter(stub, c.down)
	h := stub.State.(*held)
	for {
		healed := c.state.cutNow()
		if healed == nil && c.deliver(stub, h) {
			return
		}
		input := stub.Input
		if h.ended {
			input = nil // wait for the heal
		}
		select {
		case <-stub.Interrupt:
			// Another toxic joins or leaves the chain; Pipe runs again.
			return
		case <-reset:
			c.close(stub)
			return
		case <-healed: // nil, so never, when there is no cut
		case chunk := <-input:
			healed = c.state.cutNow() // a cut may have begun meanwhile
			switch {
			case chunk == nil && healed != nil:
				h.ended = true
			case chunk == nil:
				c.state.leave(stub)
				stub.Close()
				return
			case healed != nil:
				h.chunks = append(h.chunks, chunk)
				c.hold(1)
			case c.down && (c.state.takeLoss() || lose(math.Float64frombits(c.state.replyLoss.Load()))):
				c.state.lostReplies.Add(1)
				c.close(stub)
				return
			default:
				c.send(stub, h, chunk)
			}
		}
	}
}

// deliver passes on what h held during a cut, and reports whether the
// stub is done (its source closed during the cut).
func (c *control) deliver(stub *toxics.ToxicStub, h *held) bool {
	for _, chunk := range h.chunks {
		c.send(stub, h, chunk)
		c.hold(-1)
	}
	h.chunks = nil
	if h.ended {
		c.state.leave(stub)
		stub.Close()
	}
	return h.ended
}

// send passes chunk on to the link's writer, or drops it once the writer
// has ended (a write to its socket failed: the peer is gone), which no
// longer reads: TCP would get a reset for it.
func (c *control) send(stub *toxics.ToxicStub, h *held, chunk *stream.StreamChunk) {
	var ended <-chan struct{} // nil, so never, for a link serve did not start
	if h.conn != nil {
		ended = h.conn.ended[direction(c.down)]
	}
	select {
	case stub.Output <- chunk:
	case <-ended:
	}
}

// hold counts n chunks more (fewer, n < 0) held, when they are requests.
func (c *control) hold(n int64) {
	if !c.down {
		c.state.holding.Add(n)
	}
}

// takeLoss reports whether a reply is to be lost as one of the next ones
// (LoseReplies), and counts it off.
func (s *state) takeLoss() bool {
	for {
		n := s.loseNext.Load()
		if n <= 0 {
			return false
		}
		if s.loseNext.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// lose reports, with probability prob, that a reply is lost.
func lose(prob float64) bool { return prob > 0 && rand.Float64() < prob }

// close resets the connection: closing the stub's output ends the link,
// whose writer then resets both sockets (conn.end). What arrives after is
// dropped, so that the reader feeding the stub never blocks.
func (c *control) close(stub *toxics.ToxicStub) {
	c.state.leave(stub)
	h := stub.State.(*held)
	if h.conn != nil {
		h.conn.reset.Store(true)
	}
	c.hold(-int64(len(h.chunks))) // dropped with the connection
	h.chunks = nil
	stub.Close()
	if stub.State.(*held).ended {
		return // the source is closed: nothing more arrives
	}
	for range stub.Input {
	}
}

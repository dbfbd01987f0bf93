package netproxy

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// controlType is the toxiproxy type name of control.
const controlType = "rlbench_control"

func init() { toxics.Register(controlType, new(control)) }

// state is what the control toxics of one proxy share: the reply-loss
// probability, the signal that resets every connection, and the counts.
type state struct {
	replyLoss   atomic.Uint64 // math.Float64bits of the probability
	cut         atomic.Bool   // every byte vanishes, both ways
	lostReplies atomic.Int64
	resets      atomic.Int64

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

// control is a toxic that passes data through unless told otherwise: it
// drops every byte while cut; it resets its connection when ResetAll says
// so and, downstream (replies), with the reply-loss probability per chunk.
// toxiproxy's own toxicity decides once per connection, which cannot lose
// one reply in P; its timeout toxic drops bytes too, but closes every
// connection when removed, where a healed network keeps them.
type control struct {
	state *state
	down  bool
}

// Pipe implements toxics.Toxic.
func (c *control) Pipe(stub *toxics.ToxicStub) {
	reset := c.state.enter(stub, c.down)
	for {
		select {
		case <-stub.Interrupt:
			// Another toxic joins or leaves the chain; Pipe runs again.
			return
		case <-reset:
			c.close(stub)
			return
		case chunk := <-stub.Input:
			if chunk == nil {
				c.state.leave(stub)
				stub.Close()
				return
			}
			if c.state.cut.Load() {
				continue // vanished: no reply, no reset
			}
			if c.down && lose(math.Float64frombits(c.state.replyLoss.Load())) {
				c.state.lostReplies.Add(1)
				c.close(stub)
				return
			}
			stub.Output <- chunk
		}
	}
}

// lose reports, with probability prob, that a reply is lost.
func lose(prob float64) bool { return prob > 0 && rand.Float64() < prob }

// close ends the connection: closing the stub's output makes toxiproxy
// close both sockets, which SO_LINGER 0 turns into resets. What arrives
// after is dropped, so that the reader feeding the stub never blocks.
func (c *control) close(stub *toxics.ToxicStub) {
	c.state.leave(stub)
	stub.Close()
	for range stub.Input {
	}
}

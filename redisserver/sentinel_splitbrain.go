package redisserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/serverinfo"
)

// splitBrainPoll is how often SplitBrain reads each data node's role and
// write count: the resolution of its write times.
const splitBrainPoll = 20 * time.Millisecond

// splitBrainRejoinTimeout bounds the wait for the old master to rejoin
// once healed: a sentinel reads a replica's INFO every 10 seconds, and
// reconfigures one that says it is a master 8 seconds after (some 20
// seconds in all; some 3 with SentinelOptions.QuickRejoin), and more than
// a minute at load average 28 on 2 cores.
const splitBrainRejoinTimeout = 2 * time.Minute

// ErrNoRelay is returned, wrapped, by SplitBrain on a set-up started
// without SentinelOptions.Relay: nothing can cut the master off.
var ErrNoRelay = errors.New("the set-up has no relays to cut (SentinelOptions.Relay)")

// SplitBrain is what Sentinel.SplitBrain did, each time from the cut.
type SplitBrain struct {
	// Old is the master that was cut off, New the replica the sentinels
	// promoted; each the node's own address.
	Old, New string
	// CutAt is when the master was cut off.
	CutAt time.Time
	// Promoted is when every sentinel named New and it answered ROLE as a
	// master; Healed when the relay was healed; Rejoined when Old answered
	// ROLE as a replica.
	Promoted, Healed, Rejoined time.Duration
	// OldLastIncrement is when the old master was last seen to take a
	// write (a call of any command the server flags "write": INCR, SET,
	// HSET, ZADD, EXPIRE, ..., in a script or not) as a master, after the
	// cut; NewFirstIncrement when the new master was first seen to take
	// one as a master. 0 when none was seen. Each is known to
	// splitBrainPoll. (The names are older than the count of every write.)
	OldLastIncrement, NewFirstIncrement time.Duration
	// OldIncrements is the writes the old master took as a master after
	// the cut (it throws them away when it rejoins); NewIncrements those
	// the new master took until the old one rejoined.
	OldIncrements, NewIncrements int64
}

// BothMasters is how long the two masters both took writes: from the new
// master's first to the old master's last; 0 when they did not overlap.
func (b SplitBrain) BothMasters() time.Duration {
	if b.OldLastIncrement == 0 || b.NewFirstIncrement == 0 {
		return 0
	}
	return max(b.OldLastIncrement-b.NewFirstIncrement, 0)
}

// String says what happened, e.g. "127.0.0.1:7000 cut off from its
// sentinels and replicas; 127.0.0.1:7001 promoted 2.1s after the cut; ...".
func (b SplitBrain) String() string {
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	seen := func(d time.Duration) string {
		if d == 0 {
			return "never"
		}
		return ms(d)
	}
	return fmt.Sprintf("%s cut off from its sentinels and replicas; %s promoted %s after the cut; healed at %s; "+
		"the old master took %d writes after the cut (last at %s), the new one %d (first at %s): both masters took writes for %s; "+
		"the old master a replica again at %s",
		b.Old, b.New, ms(b.Promoted), ms(b.Healed), b.OldIncrements, seen(b.OldLastIncrement),
		b.NewIncrements, seen(b.NewFirstIncrement), ms(b.BothMasters()), ms(b.Rejoined))
}

// SplitBrain cuts the master off from the sentinels and the replicas (its
// relay: the clients, which dial it directly, keep writing to it) for
// hold, or until the sentinels have promoted a replica if that takes
// longer; heals the cut, and waits until the old master is a replica of
// the new one, which throws away what it took meanwhile (some 20 seconds
// after the heal; some 3 with SentinelOptions.QuickRejoin). The wait for
// the promotion is at most 30 seconds (or hold), the one for the rejoin a
// minute. It reads each data node's role and write count every 20 ms
// throughout, for when each master took writes.
func (s *Sentinel) SplitBrain(ctx context.Context, hold time.Duration) (SplitBrain, error) {
	wait, err := s.StartSplitBrain(ctx, hold)
	if err != nil {
		return SplitBrain{}, err
	}
	return wait()
}

// StartSplitBrain is SplitBrain, returning once the master is cut off;
// wait returns what SplitBrain returns, once the old master has rejoined.
func (s *Sentinel) StartSplitBrain(ctx context.Context, hold time.Duration) (wait func() (SplitBrain, error), err error) {
	if len(s.nodes) < 2 {
		return nil, fmt.Errorf("redisserver: split brain: %w", ErrNoReplica)
	}
	if len(s.relays) == 0 {
		return nil, fmt.Errorf("redisserver: split brain: %w", ErrNoRelay)
	}
	old, err := s.MasterAddr(ctx)
	if err != nil {
		return nil, fmt.Errorf("redisserver: split brain: %w", err)
	}
	if err := s.AwaitReady(ctx); err != nil {
		return nil, fmt.Errorf("redisserver: split brain: %w", err)
	}
	relay := s.relays[old]
	w, err := s.watchIncrements(ctx)
	if err != nil {
		return nil, fmt.Errorf("redisserver: split brain: %w", err)
	}
	if err := relay.Cut(); err != nil {
		w.stop()
		return nil, fmt.Errorf("redisserver: split brain: cut %s: %w", old, err)
	}
	b := SplitBrain{Old: old, CutAt: time.Now()}
	w.from(b.CutAt)
	done := make(chan error, 1)
	go func() { done <- s.splitBrain(ctx, relay, &b, hold) }()
	return func() (SplitBrain, error) {
		err := <-done
		w.stop()
		b.OldIncrements, b.OldLastIncrement, _ = w.result(old)
		b.NewIncrements, _, b.NewFirstIncrement = w.result(b.New)
		if err != nil {
			return b, fmt.Errorf("redisserver: split brain of %s: %w", old, err)
		}
		return b, nil
	}, nil
}

// splitBrain is the rest of SplitBrain once the master at b.Old is cut off
// (relay): the promotion, the heal, the rejoin, noted in b.
func (s *Sentinel) splitBrain(ctx context.Context, relay Relay, b *SplitBrain, hold time.Duration) (err error) {
	healed := false
	defer func() {
		if !healed {
			err = errors.Join(err, relay.Heal())
		}
	}()
	wait, cancel := context.WithTimeout(ctx, max(hold, sentinelSettleTimeout))
	defer cancel()
	// Not a write: under min-replicas-to-write the new master may refuse
	// every write until the old one rejoins it.
	err = poll(wait, "the sentinels to promote a replica", func(ctx context.Context) error {
		named, err := s.namedByAll(ctx, b.Old)
		if err != nil {
			return err
		}
		if master, _, err := readWrites(ctx, s.clients[named], nil); err != nil || !master {
			return fmt.Errorf("%s is not a master yet (%v)", named, err)
		}
		b.New = named
		return nil
	})
	if err != nil {
		return err
	}
	b.Promoted = time.Since(b.CutAt)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(hold - b.Promoted):
	}
	healed = true
	if err := relay.Heal(); err != nil {
		return fmt.Errorf("heal: %w", err)
	}
	b.Healed = time.Since(b.CutAt)
	if err := s.awaitReplica(ctx, b.Old, splitBrainRejoinTimeout); err != nil {
		return err
	}
	b.Rejoined = time.Since(b.CutAt)
	return nil
}

// namedByAll returns the master every sentinel names, when they all name
// the same one and it is not old.
func (s *Sentinel) namedByAll(ctx context.Context, old string) (string, error) {
	named := ""
	for _, sen := range s.sentinels {
		addr, err := s.masterFrom(ctx, s.clients[sen.Addr()])
		if err != nil {
			return "", err
		}
		if addr == old || (named != "" && addr != named) {
			return "", fmt.Errorf("sentinel %s names %s", sen.Addr(), addr)
		}
		named = addr
	}
	return named, nil
}

// incrementWatch reads every data node's role and write count every
// splitBrainPoll, in the background, until stop.
type incrementWatch struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	since time.Time // zero until from: nothing is counted before
	nodes map[string]*nodeIncrements
}

// nodeIncrements is what an incrementWatch saw of one node.
type nodeIncrements struct {
	last        int64 // the write count at the last read; -1 before the first
	taken       int64 // writes taken as a master since the watch's from
	first, rise time.Time
}

// watchIncrements starts an incrementWatch of every data node, once it
// has read which commands each node flags "write".
func (s *Sentinel) watchIncrements(ctx context.Context) (*incrementWatch, error) {
	writes := map[string]map[string]bool{}
	for _, n := range s.nodes {
		w, err := writeCommands(ctx, s.clients[n.Addr()])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Addr(), err)
		}
		writes[n.Addr()] = w
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &incrementWatch{cancel: cancel, done: make(chan struct{}), nodes: map[string]*nodeIncrements{}}
	for _, n := range s.nodes {
		w.nodes[n.Addr()] = &nodeIncrements{last: -1}
	}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			for _, n := range s.nodes {
				master, count, err := readWrites(ctx, s.clients[n.Addr()], writes[n.Addr()])
				if err == nil {
					w.note(n.Addr(), master, count)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(splitBrainPoll):
			}
		}
	}()
	return w, nil
}

// from starts counting at t.
func (w *incrementWatch) from(t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.since = t
}

// note records one read of the node at addr.
func (w *incrementWatch) note(addr string, master bool, count int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.nodes[addr]
	now := time.Now()
	if master && !w.since.IsZero() && n.last >= 0 && count > n.last {
		n.taken += count - n.last
		if n.first.IsZero() {
			n.first = now
		}
		n.rise = now
	}
	n.last = count
}

// stop ends the watch and waits for its last read.
func (w *incrementWatch) stop() {
	w.cancel()
	<-w.done
}

// result returns the writes the node at addr took as a master, and
// when it was last and first seen to, from the watch's from; 0 for a time
// not seen.
func (w *incrementWatch) result(addr string) (taken int64, last, first time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, ok := w.nodes[addr]
	if !ok || n.first.IsZero() {
		return 0, 0, 0
	}
	return n.taken, n.rise.Sub(w.since), n.first.Sub(w.since)
}

// writeCommands returns the names of the commands the server at rdb flags
// "write" (COMMAND INFO), as INFO commandstats names them (cmdstat_NAME).
func writeCommands(ctx context.Context, rdb *redis.Client) (map[string]bool, error) {
	infos, err := rdb.Command(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("COMMAND: %w", err)
	}
	writes := map[string]bool{}
	for name, info := range infos {
		for _, flag := range info.Flags {
			if flag == "write" {
				writes["cmdstat_"+strings.ToLower(name)] = true
			}
		}
	}
	return writes, nil
}

// readWrites reads whether the node is a master, and how many calls of
// the commands in writes (every command flagged "write": INCR, SET, HSET,
// ZADD, EXPIRE, ...) it has run (INFO commandstats; the calls a script
// makes too), so that a strategy of any command is counted.
func readWrites(ctx context.Context, rdb *redis.Client, writes map[string]bool) (master bool, count int64, err error) {
	var repl, stats *redis.StringCmd
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		repl, stats = p.Info(ctx, "replication"), p.Info(ctx, "commandstats")
		return nil
	})
	if err != nil {
		return false, 0, err
	}
	for name, value := range serverinfo.Parse(stats.Val()) {
		if !writes[name] {
			continue
		}
		for _, kv := range strings.Split(value, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				count += n
			}
		}
	}
	return serverinfo.Parse(repl.Val())["role"] == "master", count, nil
}

// AwaitReplicated waits, at most 30 seconds, until every replica has
// acknowledged every write the master took so far: it writes key (with a
// 1-second TTL) on the master and sends WAIT on the same connection until
// every replica has it.
func (s *Sentinel) AwaitReplicated(ctx context.Context, key string) error {
	master, err := s.MasterAddr(ctx)
	if err != nil {
		return fmt.Errorf("redisserver: await replicated: %w", err)
	}
	conn := s.clients[master].Conn()
	defer conn.Close()
	want := int64(len(s.nodes) - 1)
	ctx, cancel := context.WithTimeout(ctx, sentinelSettleTimeout)
	defer cancel()
	err = poll(ctx, "the replicas of "+master+" to acknowledge its writes", func(ctx context.Context) error {
		if err := conn.Set(ctx, key, 1, time.Second).Err(); err != nil {
			return err
		}
		n, err := conn.Do(ctx, "wait", want, 1000).Int64()
		if err == nil && n < want {
			err = fmt.Errorf("WAIT: %d of %d replicas", n, want)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("redisserver: await replicated: %w", err)
	}
	return nil
}

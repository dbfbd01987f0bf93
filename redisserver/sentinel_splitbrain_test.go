package redisserver

import (
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/internal/proctest"
	"github.com/rlbench/rlbench/netproxy"
)

// startRelay is a SentinelOptions.Relay: a netproxy.Proxy.
func startRelay(addr string) (Relay, error) { return netproxy.Start(addr) }

// startSplitSentinel starts a set-up with relays and replicas replicas.
func startSplitSentinel(t *testing.T, replicas, minReplicas int) *Sentinel {
	t.Helper()
	s, err := StartSentinel(t.Context(), SentinelOptions{Replicas: replicas, MinReplicas: minReplicas,
		Binary: os.Getenv("RLBENCH_REDIS_SERVER"), Relay: startRelay})
	if err != nil {
		t.Fatalf("StartSentinel(relays) error: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close() = %v; want nil", err)
		}
	})
	return s
}

// incrLoop INCRs key through rdb until ctx ends, counting the replies that
// say it was done and noting the last error; done is closed at the end.
type incrLoop struct {
	acked atomic.Int64
	mu    sync.Mutex
	errs  []string
	done  chan struct{}
}

func runIncr(ctx context.Context, rdb redis.Cmdable, key string) *incrLoop {
	return runWrites(ctx, func(ctx context.Context) error { return rdb.Incr(ctx, key).Err() })
}

// runWrites is runIncr of any write.
func runWrites(ctx context.Context, write func(context.Context) error) *incrLoop {
	l := &incrLoop{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for ctx.Err() == nil {
			op, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			err := write(op)
			cancel()
			if err == nil {
				l.acked.Add(1)
				continue
			}
			l.mu.Lock()
			l.errs = append(l.errs, err.Error())
			l.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return l
}

// sawError reports whether one of l's errors starts with prefix.
func (l *incrLoop) sawError(prefix string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.errs {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// followClient is a client that follows the master as the load's do:
// through the sentinels, dialling each node's own address.
func followClient(t *testing.T, s *Sentinel) *redis.Client {
	t.Helper()
	target := connection.Sentinel{Master: s.MasterName(), Addrs: s.SentinelAddrs(), Direct: s.Direct()}
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: target.Master, SentinelAddrs: target.Addrs,
		Dialer: target.GoRedisDialer(0, nil), MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestSentinelSplitBrain checks a split brain on a set-up with relays: a
// client that never learns of the new master keeps writing to the old one
// while one that follows writes to the new, so that both masters take
// increments; what the old master took after the cut is lost; and the old
// master rejoins as a replica with the new master's data.
func TestSentinelSplitBrain(t *testing.T) {
	t.Parallel()
	s := startSplitSentinel(t, 1, 0)
	old, replica := s.Nodes()[0].Addr(), s.Nodes()[1].Addr()
	if got, err := s.MasterAddr(t.Context()); err != nil || got != old {
		t.Fatalf("MasterAddr() = %q, %v; want the master's own address %q", got, err, old)
	}
	if len(s.Direct()) != 2 {
		t.Fatalf("Direct() = %v; want a relay for each of the 2 data nodes", s.Direct())
	}
	ctx, cancel := context.WithCancel(t.Context())
	pinned := runIncr(ctx, client(t, old), "pinned")
	follow := runIncr(ctx, followClient(t, s), "follow")
	waitFor(t, "both writers to be acknowledged", func() bool { return pinned.acked.Load() > 0 && follow.acked.Load() > 0 })

	const hold = 3 * time.Second
	b, err := s.SplitBrain(t.Context(), hold)
	cancel()
	<-pinned.done
	<-follow.done
	if err != nil {
		t.Fatalf("SplitBrain(%s) error: %v", hold, err)
	}
	t.Logf("SplitBrain(%s): %s", hold, b)
	if b.Old != old || b.New != replica {
		t.Errorf("SplitBrain() old, new = %s, %s; want %s, %s", b.Old, b.New, old, replica)
	}
	if b.OldIncrements == 0 || b.NewIncrements == 0 || b.BothMasters() <= 0 {
		t.Errorf("SplitBrain() = %+v; want both masters to take increments, for a while at once", b)
	}
	if !(b.Promoted > 0 && b.Promoted <= b.Healed && b.Healed >= hold && b.Healed <= b.Rejoined) {
		t.Errorf("SplitBrain() times = promoted %s, healed %s, rejoined %s; want 0 < promoted <= healed (>= %s) <= rejoined", b.Promoted, b.Healed, b.Rejoined, hold)
	}
	if got, err := s.MasterAddr(t.Context()); err != nil || got != replica {
		t.Errorf("MasterAddr() after SplitBrain = %q, %v; want %q", got, err, replica)
	}
	// The pinned client's increments after the cut went to the old master
	// only, which threw them away when it rejoined.
	counter, err := client(t, replica).Get(t.Context(), "pinned").Int64()
	if err != nil || counter >= pinned.acked.Load() {
		t.Errorf("GET pinned on the new master = %d, %v; want below the %d increments acknowledged", counter, err, pinned.acked.Load())
	}
	waitFor(t, "the old master to hold the new master's counter", func() bool {
		got, err := client(t, old).Get(t.Context(), "pinned").Int64()
		return err == nil && got == counter
	})
	if err := s.AwaitReady(t.Context()); err != nil {
		t.Errorf("AwaitReady() after SplitBrain = %v; want the set-up whole again", err)
	}
}

// TestSentinelSplitBrainWrites checks that the split brain's figures count
// writes of any command, not increments only: writers that send HSET and
// ZADD (a script's, for one) as a token bucket or a sliding log does are
// seen on both masters.
func TestSentinelSplitBrainWrites(t *testing.T) {
	t.Parallel()
	s := startSplitSentinel(t, 1, 0)
	ctx, cancel := context.WithCancel(t.Context())
	pinnedClient, followed := client(t, s.Nodes()[0].Addr()), followClient(t, s)
	n := 0
	pinned := runWrites(ctx, func(ctx context.Context) error {
		n++
		return pinnedClient.HSet(ctx, "bucket", "tokens", n).Err()
	})
	follow := runWrites(ctx, func(ctx context.Context) error {
		return followed.Eval(ctx, "return redis.call('ZADD', KEYS[1], ARGV[1], ARGV[1])", []string{"log"}, time.Now().UnixNano()).Err()
	})
	waitFor(t, "both writers to be acknowledged", func() bool { return pinned.acked.Load() > 0 && follow.acked.Load() > 0 })
	const hold = 3 * time.Second
	b, err := s.SplitBrain(t.Context(), hold)
	cancel()
	<-pinned.done
	<-follow.done
	if err != nil {
		t.Fatalf("SplitBrain(%s) error: %v", hold, err)
	}
	t.Logf("SplitBrain(%s) of HSET and ZADD writers: %s", hold, b)
	if b.OldIncrements == 0 || b.NewIncrements == 0 {
		t.Errorf("SplitBrain() writes = old %d, new %d; want both masters' HSET and ZADD counted", b.OldIncrements, b.NewIncrements)
	}
}

// TestSentinelSplitBrainMinReplicas checks what min-replicas-to-write
// does in a split brain: the old master, without a replica that
// acknowledges it, refuses writes (NOREPLICAS) within a few seconds of the
// cut instead of taking them until the partition heals.
func TestSentinelSplitBrainMinReplicas(t *testing.T) {
	t.Parallel()
	s := startSplitSentinel(t, 1, 1)
	old := s.Nodes()[0].Addr()
	ctx, cancel := context.WithCancel(t.Context())
	pinned := runIncr(ctx, client(t, old), "pinned")
	waitFor(t, "the writer to be acknowledged", func() bool { return pinned.acked.Load() > 0 })
	const hold = 8 * time.Second
	b, err := s.SplitBrain(t.Context(), hold)
	cancel()
	<-pinned.done
	if err != nil {
		t.Fatalf("SplitBrain(%s) error: %v", hold, err)
	}
	t.Logf("SplitBrain(%s) with min-replicas-to-write 1: %s", hold, b)
	if !pinned.sawError("NOREPLICAS") {
		t.Errorf("the old master's writer saw no NOREPLICAS error; want the old master to refuse writes")
	}
	// Lag 1 s, acknowledged every second, checked every second: some 3 s
	// after the cut; without the setting it takes them until the heal (at
	// least hold after the cut). No bound of the wall clock beyond that.
	if b.OldLastIncrement >= b.Healed {
		t.Errorf("the old master took writes until %s after the cut; want before the heal at %s (min-replicas-max-lag %d s)", b.OldLastIncrement, b.Healed, DefaultMinReplicasMaxLag)
	}
}

// waitFor polls cond until it holds, at most 30 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	proctest.WaitFor(t, what, cond)
}

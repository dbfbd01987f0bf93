package redisserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Failover waits until the set-up is ready to fail over (AwaitReady), asks a sentinel to promote a replica (SENTINEL FAILOVER) and
// waits, at most 30 seconds in all, until every sentinel names the new master,
// that master answers ROLE as a master and accepts a write (SET of a key
// outside any run's prefix, "rlbench-sentinel-probe", with a 1-second
// TTL). It returns what it did, e.g. "127.0.0.1:7001 took over from
// 127.0.0.1:7000". The old master becomes a replica when the sentinels
// reconfigure it, some 10 seconds later (AwaitReplica); until then it accepts writes
// from clients that have not switched. With no replica, the error wraps
// ErrNoReplica.
func (s *Sentinel) Failover(ctx context.Context) (string, error) {
	if len(s.nodes) < 2 {
		return "", fmt.Errorf("redisserver: sentinel failover: %w", ErrNoReplica)
	}
	old, err := s.MasterAddr(ctx)
	if err != nil {
		return "", fmt.Errorf("redisserver: sentinel failover: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, sentinelSettleTimeout)
	defer cancel()
	if err := s.awaitReady(ctx, old); err != nil {
		return "", fmt.Errorf("redisserver: sentinel failover: %w", err)
	}
	sen := s.clients[s.sentinels[0].Addr()]
	err = poll(ctx, "a sentinel to accept the failover", func(ctx context.Context) error {
		return sen.Do(ctx, "sentinel", "failover", s.name).Err()
	})
	if err != nil {
		return "", fmt.Errorf("redisserver: sentinel failover: %w", err)
	}
	var promoted string
	err = poll(ctx, "a new master to be named and writable", func(ctx context.Context) error {
		promoted = ""
		for _, sen := range s.sentinels {
			addr, err := s.masterFrom(ctx, s.clients[sen.Addr()])
			if err != nil {
				return err
			}
			if addr == old || (promoted != "" && addr != promoted) {
				return fmt.Errorf("sentinel %s names %s", sen.Addr(), addr)
			}
			promoted = addr
		}
		return s.writable(ctx, promoted)
	})
	if err != nil {
		return "", fmt.Errorf("redisserver: sentinel failover from %s: %w", old, err)
	}
	return fmt.Sprintf("%s took over from %s", promoted, old), nil
}

// AwaitReplica waits, at most 30 seconds, until the data node at addr
// answers ROLE as a replica: after a Failover, the old master once the
// sentinels have reconfigured it, a few seconds after. From then on it
// refuses writes (READONLY), so no client can count on it any more.
func (s *Sentinel) AwaitReplica(ctx context.Context, addr string) error {
	return s.awaitReplica(ctx, addr, sentinelSettleTimeout)
}

// awaitReplica is AwaitReplica, waiting at most timeout.
func (s *Sentinel) awaitReplica(ctx context.Context, addr string, timeout time.Duration) error {
	rdb, ok := s.clients[addr]
	if !ok || s.isClosed() {
		return fmt.Errorf("redisserver: await replica: %s is not a data node of this open set-up", addr)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := poll(ctx, addr+" to become a replica", func(ctx context.Context) error {
		role, err := rdb.Do(ctx, "role").Slice()
		if err != nil {
			return fmt.Errorf("role on %s: %w", addr, err)
		}
		if len(role) == 0 || fmt.Sprint(role[0]) != "slave" {
			return fmt.Errorf("%s answers ROLE %v", addr, role)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisserver: await replica: %w", err)
	}
	return nil
}

// PauseWrites pauses writes (CLIENT PAUSE WRITE, Redis 6.2 and later) for
// at most hold on every data node that answers ROLE as a master: after a
// Failover, the new master and, until the sentinels reconfigure it, the
// old one. Reads go on, and no key expires while writes are paused. It
// returns the function that lifts the pause (CLIENT UNPAUSE) on those
// nodes; on error no node is left paused for longer than hold.
func (s *Sentinel) PauseWrites(ctx context.Context, hold time.Duration) (unpause func(context.Context) error, err error) {
	if s.isClosed() {
		return nil, errors.New("redisserver: pause writes: sentinel set-up is closed")
	}
	var paused []*redis.Client
	unpause = func(ctx context.Context) error {
		var errs []error
		for _, rdb := range paused {
			if err := rdb.Do(ctx, "client", "unpause").Err(); err != nil {
				errs = append(errs, fmt.Errorf("client unpause on %s: %w", rdb.Options().Addr, err))
			}
		}
		return errors.Join(errs...)
	}
	for _, node := range s.nodes {
		rdb := s.clients[node.Addr()]
		role, err := rdb.Do(ctx, "role").Slice()
		if err != nil || len(role) == 0 || fmt.Sprint(role[0]) != "master" {
			continue // a replica, or a node that does not answer: it takes no write
		}
		if err := rdb.Do(ctx, "client", "pause", hold.Milliseconds(), "write").Err(); err != nil {
			return nil, errors.Join(fmt.Errorf("redisserver: pause writes: client pause on %s: %w", node.Addr(), err), unpause(ctx))
		}
		paused = append(paused, rdb)
	}
	if len(paused) == 0 {
		return nil, errors.New("redisserver: pause writes: no data node answers as a master")
	}
	return unpause, nil
}

// writable checks that the data node at addr is a master that takes a write.
func (s *Sentinel) writable(ctx context.Context, addr string) error {
	rdb, ok := s.clients[addr]
	if !ok {
		return fmt.Errorf("%s is not a node of this set-up", addr)
	}
	role, err := rdb.Do(ctx, "role").Slice()
	if err != nil {
		return fmt.Errorf("role on %s: %w", addr, err)
	}
	if len(role) == 0 || fmt.Sprint(role[0]) != "master" {
		return fmt.Errorf("%s is not a master yet", addr)
	}
	if err := rdb.Set(ctx, "rlbench-sentinel-probe", 1, time.Second).Err(); err != nil {
		return fmt.Errorf("write to %s: %w", addr, err)
	}
	return nil
}

// AwaitReady waits, at most 30 seconds, until the set-up can fail over
// with every write kept: the sentinels agree on the master and know its
// replicas as healthy and each other, and each replica's link to the
// master is up. After a Failover that takes some 10 seconds: the
// sentinels must make the old master a replica, and it must sync.
func (s *Sentinel) AwaitReady(ctx context.Context) error {
	master, err := s.MasterAddr(ctx)
	if err != nil {
		return fmt.Errorf("redisserver: await ready: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, sentinelSettleTimeout)
	defer cancel()
	if err := s.awaitReady(ctx, master); err != nil {
		return fmt.Errorf("redisserver: await ready: %w", err)
	}
	return nil
}

// awaitReady is AwaitReady with the master at master.
func (s *Sentinel) awaitReady(ctx context.Context, master string) error {
	if err := s.awaitSettled(ctx, master); err != nil {
		return err
	}
	// A replica still in its first sync would be promoted with part of the
	// data, or none.
	for _, node := range s.nodes {
		if node.Addr() != master {
			if err := s.awaitLinkUp(ctx, node.Addr()); err != nil {
				return err
			}
		}
	}
	return nil
}

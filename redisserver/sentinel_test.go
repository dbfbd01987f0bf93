package redisserver

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestStartSentinelFailover(t *testing.T) {
	t.Parallel()
	s, err := StartSentinel(t.Context(), SentinelOptions{Replicas: 1, Binary: os.Getenv("RLBENCH_REDIS_SERVER")})
	if err != nil {
		t.Fatalf("StartSentinel() error: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close() = %v; want nil", err)
		}
	})
	if got := len(s.SentinelAddrs()); got != SentinelCount {
		t.Errorf("len(SentinelAddrs()) = %d; want %d", got, SentinelCount)
	}
	if s.MasterName() != DefaultSentinelMaster {
		t.Errorf("MasterName() = %q; want %q", s.MasterName(), DefaultSentinelMaster)
	}
	before, err := s.MasterAddr(t.Context())
	if err != nil || before != s.Nodes()[0].Addr() {
		t.Fatalf("MasterAddr() = %q, %v; want %q", before, err, s.Nodes()[0].Addr())
	}
	what, err := s.Failover(t.Context())
	if err != nil {
		t.Fatalf("Failover() error: %v", err)
	}
	after, err := s.MasterAddr(t.Context())
	if err != nil || after != s.Nodes()[1].Addr() {
		t.Fatalf("MasterAddr() after Failover = %q, %v; want the replica %q", after, err, s.Nodes()[1].Addr())
	}
	if want := after + " took over from " + before; what != want {
		t.Errorf("Failover() = %q; want %q", what, want)
	}
	if err := client(t, after).Incr(t.Context(), "k").Err(); err != nil {
		t.Errorf("INCR on the new master = %v; want nil", err)
	}
	start := time.Now()
	if err := s.AwaitReplica(t.Context(), before); err != nil {
		t.Fatalf("AwaitReplica(old master) error: %v", err)
	}
	t.Logf("the old master became a replica %s after the failover", time.Since(start).Round(time.Millisecond))
	if err := client(t, before).Incr(t.Context(), "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Errorf("INCR on the old master after AwaitReplica = %v; want READONLY", err)
	}
	if err := s.AwaitReplica(t.Context(), "127.0.0.1:1"); err == nil {
		t.Errorf("AwaitReplica(not a node) = nil; want an error")
	}
	checkPauseWrites(t, s, after)
}

// checkPauseWrites checks that PauseWrites holds writes on the master at
// addr and lets reads through, until unpause.
func checkPauseWrites(t *testing.T, s *Sentinel, addr string) {
	t.Helper()
	// A hold far longer than the checks take, so that a machine that stalls
	// the test for seconds (CI runs every package at once on two cores)
	// does not see the pause run out: unpause ends it.
	paused := time.Now()
	unpause, err := s.PauseWrites(t.Context(), time.Minute)
	if err != nil {
		t.Fatalf("PauseWrites error: %v", err)
	}
	t.Cleanup(func() { unpause(context.Background()) }) // after a failed check too
	rdb := client(t, addr)
	if err := rdb.Get(t.Context(), "k").Err(); err != nil {
		t.Errorf("GET while writes are paused = %v; want nil", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := rdb.Incr(ctx, "k").Err(); err == nil {
		t.Errorf("INCR while writes are paused (%s after the pause) = nil; want it held past its deadline",
			time.Since(paused).Round(time.Millisecond))
	}
	if err := unpause(t.Context()); err != nil {
		t.Fatalf("unpause error: %v", err)
	}
	if err := client(t, addr).Incr(t.Context(), "k").Err(); err != nil {
		t.Errorf("INCR after unpause = %v; want nil", err)
	}
}

func TestSentinelFailoverWithoutReplica(t *testing.T) {
	t.Parallel()
	s, err := StartSentinel(t.Context(), SentinelOptions{MasterName: "m0", Binary: os.Getenv("RLBENCH_REDIS_SERVER")})
	if err != nil {
		t.Fatalf("StartSentinel() error: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Failover(t.Context()); !errors.Is(err, ErrNoReplica) {
		t.Errorf("Failover() with no replica = %v; want ErrNoReplica", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close() = %v; want nil", err)
	}
	if _, err := s.MasterAddr(t.Context()); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("MasterAddr() after Close = %v; want a 'closed' error", err)
	}
}

func TestStartSentinelBadReplicas(t *testing.T) {
	t.Parallel()
	if _, err := StartSentinel(t.Context(), SentinelOptions{Replicas: -1}); err == nil {
		t.Errorf("StartSentinel(Replicas: -1) = nil error; want one")
	}
}

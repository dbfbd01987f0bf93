package redisserver

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestClusterFormsAfterADroppedHandshake: a node that is not scheduled for
// longer than cluster-node-timeout right after the others meet it (a
// loaded machine) has its handshakes dropped by the nodes that met it,
// which Redis never tries again; the cluster forms all the same, the
// nodes that do not know it meeting it again.
func TestClusterFormsAfterADroppedHandshake(t *testing.T) {
	t.Parallel()
	c, masters, err := startUnformed(t.Context(), ClusterOptions{Binary: os.Getenv("RLBENCH_REDIS_SERVER")})
	if err != nil {
		t.Fatalf("start the nodes: %v (run scripts/test.sh or apt-get install redis-server)", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), clusterFormTimeout)
	defer cancel()
	if err := c.assign(ctx, masters); err != nil {
		t.Fatal(err)
	}
	// The last node meets no other itself: the others meet it.
	asleep := c.nodes[len(c.nodes)-1]
	signal := func(sig syscall.Signal) {
		t.Helper()
		asleep.mu.Lock()
		defer asleep.mu.Unlock()
		if err := asleep.proc.cmd.Process.Signal(sig); err != nil {
			t.Fatalf("signal %v to %s: %v", sig, asleep.Addr(), err)
		}
	}
	signal(syscall.SIGSTOP)
	t.Cleanup(func() { signal(syscall.SIGCONT) })
	if err := c.meetAll(ctx); err != nil {
		t.Fatal(err)
	}
	// Past cluster-node-timeout twice over, so that the handshakes with it
	// are dropped (clusterCron, ten times a second) before it wakes.
	time.Sleep(2*clusterNodeTimeout*time.Millisecond + time.Second)
	signal(syscall.SIGCONT)
	if err := c.awaitKnown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.await(ctx, "the cluster to settle", func(ctx context.Context) error {
		_, err := c.settled(ctx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

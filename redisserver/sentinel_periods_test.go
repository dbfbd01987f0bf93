package redisserver

import (
	"os"
	"testing"
	"time"

	"github.com/rlbench/rlbench/serverinfo"
)

// TestSentinelQuickRejoin checks that with QuickRejoin an old master back
// from a split brain is a replica again within seconds of the heal, where
// Sentinel's own periods take 8 s at least (4 hello periods of 2 s after
// the first INFO, read every 10 s, that shows it a master); on a server
// without SENTINEL DEBUG (before 7.0) the set-up starts with its own.
func TestSentinelQuickRejoin(t *testing.T) {
	t.Parallel()
	s, err := StartSentinel(t.Context(), SentinelOptions{Replicas: 1, Binary: os.Getenv("RLBENCH_REDIS_SERVER"), Relay: startRelay, QuickRejoin: true})
	if err != nil {
		t.Fatalf("StartSentinel(QuickRejoin) error: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close() = %v; want nil", err)
		}
	})
	info, err := serverinfo.Read(t.Context(), s.clients[s.sentinels[0].Addr()])
	if err != nil {
		t.Fatal(err)
	}
	if !serverinfo.VersionAtLeast(info.RedisVersion, "7.0.0") {
		t.Logf("%s %s has no SENTINEL DEBUG: the set-up keeps Sentinel's periods", info.Name, info.Version)
		return
	}
	b, err := s.SplitBrain(t.Context(), 3*time.Second)
	if err != nil {
		t.Fatalf("SplitBrain(3s) error: %v", err)
	}
	if after := b.Rejoined - b.Healed; after >= 6*time.Second {
		t.Errorf("SplitBrain(3s): %s; the old master a replica again %s after the heal; want under 6s with QuickRejoin", b, after.Round(time.Millisecond))
	}
}

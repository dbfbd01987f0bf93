package redisserver

import (
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestStartSentinelWithPassword checks that SentinelPassword protects the
// sentinels (NOAUTH without it), that they still agree on the master (they
// log in to each other with it), and that the master keeps its own password.
func TestStartSentinelWithPassword(t *testing.T) {
	t.Parallel()
	s, err := StartSentinel(t.Context(), SentinelOptions{
		Replicas: 1, Binary: os.Getenv("RLBENCH_REDIS_SERVER"),
		Args: []string{"--requirepass", "master-secret"}, SentinelPassword: "sentinel-secret",
	})
	if err != nil {
		t.Fatalf("StartSentinel(SentinelPassword) error: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	master, err := s.MasterAddr(t.Context())
	if err != nil || master != s.Nodes()[0].Addr() {
		t.Fatalf("MasterAddr() = %q, %v; want %q", master, err, s.Nodes()[0].Addr())
	}
	for _, addr := range s.SentinelAddrs() {
		for _, tc := range []struct {
			password, want string // want: the error's start, "" for none
		}{
			{"", "NOAUTH"},
			{"master-secret", "WRONGPASS"},
			{"sentinel-secret", ""},
		} {
			rdb := redis.NewSentinelClient(&redis.Options{Addr: addr, Password: tc.password, DisableIdentity: true, MaxRetries: -1})
			_, err := rdb.GetMasterAddrByName(t.Context(), s.MasterName()).Result()
			rdb.Close()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("sentinel %s with password %q: GET-MASTER-ADDR-BY-NAME error = %v; want %q", addr, tc.password, err, tc.want)
			}
		}
	}
}

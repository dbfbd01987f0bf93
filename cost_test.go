package rlbench_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/workload"
)

// busyFixedWindow is examples/fixed_window.lua with a busy loop in front:
// a known server-side cost of some hundreds of microseconds per decision.
const busyFixedWindow = `local spin = 0
for i = 1, 30000 do spin = spin + i end
local n = redis.call('INCR', KEYS[1])
if redis.call('TTL', KEYS[1]) < 0 then
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
end
if n <= tonumber(ARGV[1]) then
  return {1, n}
end
return {0, n}
`

// TestCostPerDecision checks the saturation's CPU per decision on both
// clients: present and positive for rlbench and the server, and the
// server's larger by at least the known cost of a busy loop in the
// script (30,000 Lua additions: far over 20 µs on any machine) than that
// of incr-expire, one INCR and one EXPIRE.
func TestCostPerDecision(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	file := filepath.Join(t.TempDir(), "busy.lua")
	if err := os.WriteFile(file, []byte(busyFixedWindow), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Strategies: []string{"incr-expire", "busy-cost"},
		Scripts:    []string{"busy-cost=" + file},
		Clients:    []string{"go-redis", "rueidis"},
		Workload:   workload.Config{Workers: 4, Keys: 50, Requests: 2000, Prefix: redistest.Prefix(t)},
		Targets:    []rlbench.TargetSpec{{Addr: srv.Addr()}},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	server := map[string]float64{}
	for _, r := range rep.Runs {
		s := r.Saturation
		if s == nil || s.ClientCPUPerDecisionUS <= 0 || s.ServerCPUPerDecisionUS <= 0 {
			t.Fatalf("%s/%s: saturation = %+v; want rlbench's and the server's CPU per decision > 0", r.Strategy, r.Client, s)
		}
		server[r.Strategy+"/"+r.Client] = s.ServerCPUPerDecisionUS
	}
	for _, c := range []string{"go-redis", "rueidis"} {
		light, heavy := server["incr-expire/"+c], server["busy-cost/"+c]
		t.Logf("%s: server CPU per decision: incr-expire %.3f µs, busy-cost %.3f µs", c, light, heavy)
		if heavy < light+20 {
			t.Errorf("%s: server CPU per decision %.3f µs with the busy loop, %.3f µs without; want at least 20 µs more", c, heavy, light)
		}
	}
}

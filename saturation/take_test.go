package saturation_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/saturation"
)

// busyScript keeps the server's main thread busy for tens of milliseconds.
const busyScript = `local n = 0
for i = 1, 3000000 do n = n + 1 end
return n`

// TestTakeAgainstServer takes a sample, makes the server work and opens a
// known number of connections, and checks what the second sample saw.
func TestTakeAgainstServer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()

	before, err := saturation.Take(ctx, rdb) // opens rdb's connection: counted in before
	if err != nil {
		t.Fatalf("Take(before) error = %v", err)
	}

	// One command at a time: a go-redis pipeline would open a connection of
	// its own (go-redis v9.23 routes pipelines through a pool of their own).
	key := redistest.Prefix(t) + "counter"
	for range 500 {
		if err := rdb.Incr(ctx, key).Err(); err != nil {
			t.Fatalf("INCR %s: %v", key, err)
		}
	}
	for range 3 {
		if err := rdb.Eval(ctx, busyScript, nil).Err(); err != nil {
			t.Fatalf("EVAL busy loop: %v", err)
		}
	}

	const newConns = 3
	for i := range newConns {
		c := redis.NewClient(&redis.Options{
			Addr:                     srv.Addr(),
			PoolSize:                 1,
			DisableIdentity:          true,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		})
		err := c.Ping(ctx).Err()
		c.Close()
		if err != nil {
			t.Fatalf("PING on new connection %d: %v", i, err)
		}
	}

	after, err := saturation.Take(ctx, rdb)
	if err != nil {
		t.Fatalf("Take(after) error = %v", err)
	}
	if after.ServerCPU <= before.ServerCPU {
		t.Errorf("ServerCPU after a burst = %v; want more than before, %v", after.ServerCPU, before.ServerCPU)
	}
	if want := runtime.GOMAXPROCS(0); after.ProcessCPUs != want {
		t.Errorf("ProcessCPUs = %d; want GOMAXPROCS, %d", after.ProcessCPUs, want)
	}
	if after.ProcessCPU < before.ProcessCPU {
		t.Errorf("ProcessCPU after = %v; want >= before, %v", after.ProcessCPU, before.ProcessCPU)
	}
	if got := after.ServerConnsReceived - before.ServerConnsReceived; got != newConns {
		t.Errorf("ServerConnsReceived after - before = %d - %d = %d; want %d (the new connections)",
			after.ServerConnsReceived, before.ServerConnsReceived, got, newConns)
	}
	rep := saturation.Compare([]saturation.Sample{before}, []saturation.Sample{after})
	if rep.ConnectionsOpened != newConns || rep.ServerCPU <= 0 || rep.PeakRSSBytes <= 0 {
		t.Errorf("Compare(before, after) = %+v; want connections_opened %d, server_cpu > 0, peak_rss_bytes > 0", rep, newConns)
	}
}

func ExampleCompare() {
	start := time.Date(2026, 11, 29, 19, 40, 0, 0, time.UTC)
	before := saturation.Sample{At: start, ServerConnsReceived: 1}
	after := saturation.Sample{
		At:                  start.Add(10 * time.Second),
		ProcessCPU:          9100 * time.Millisecond, // 0.91 core
		ServerCPU:           8200 * time.Millisecond, // 0.82 core: Redis had room
		ServerConnsReceived: 3,
		PeakRSSBytes:        96 << 20,
	}
	rep := saturation.Compare([]saturation.Sample{before}, []saturation.Sample{after})
	fmt.Printf("client %.2f cores, server %.2f cores, %d connections, peak RSS %d MiB\n",
		rep.ClientCPU, rep.ServerCPU, rep.ConnectionsOpened, rep.PeakRSSBytes>>20)
	fmt.Println(rep.Verdict)
	// Output:
	// client 0.91 cores, server 0.82 cores, 2 connections, peak RSS 96 MiB
	// client-bound: Redis had CPU to spare: the figures measure rlbench, not Redis
}

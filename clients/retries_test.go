package clients_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/internal/redistest"
)

// busyScript keeps the server busy for ARGV[1] microseconds: it reads no
// command meanwhile, so a client's request waits in its socket, and runs
// once the script ends, even if the client has given up and closed the
// connection by then.
const busyScript = `local t0 = redis.call('TIME')
while true do
  local t = redis.call('TIME')
  if (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > tonumber(ARGV[1]) then return 1 end
end`

// blockServer runs busyScript for d on a connection of its own and
// returns once the server is busy with it (a PING with a short timeout
// times out), and a function that waits for the script's end.
func blockServer(t *testing.T, addr string, d time.Duration) (wait func()) {
	t.Helper()
	busy := connection.Admin{PoolSize: 1}.PlainClient(addr)
	done := make(chan error, 1)
	go func() {
		done <- busy.Eval(context.Background(), busyScript, nil, d.Microseconds()).Err()
	}()
	probe := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 50 * time.Millisecond, MaxRetries: -1, PoolSize: 1})
	defer probe.Close()
	deadline := time.Now().Add(30 * time.Second)
	for probe.Ping(context.Background()).Err() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the server never got busy with the script")
		}
	}
	return func() {
		if err := <-done; err != nil {
			t.Errorf("busy script: %v", err)
		}
		busy.Close()
	}
}

// TestRetriesAndTimeouts checks --retries and --read-timeout on every
// client against a real server that a script keeps busy: the INCR times
// out after the read timeout, and the server runs every attempt the client
// sent once the script ends. go-redis with Retries 3 sends it 4 times (a
// request counted 4 times: phantom increments); rueidis never retries an
// INCR, whatever Retries says, nor does valkey-go, its descendant, so the
// server counts it at most once; redigo has no retries.
func TestRetriesAndTimeouts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		client  string
		retries int
		// want is the counter after the script; for rueidis, the most it
		// may be: whether its one attempt reached the server depends on
		// whether its keep-alive PING timed out first.
		want int64
		opts []string
	}{
		{"go-redis", 0, 1, []string{"retries=off", "read_timeout=100ms", "write_timeout=100ms", "dial_timeout=5s"}},
		{"go-redis", 3, 4, []string{"retries=3", "read_timeout=100ms"}},
		{"rueidis", 0, 1, []string{"retry=off", "conn_write_timeout=100ms", "dial_timeout=5s"}},
		{"rueidis", 3, 1, []string{"retry=3(read-only)", "conn_write_timeout=100ms"}},
		{"valkey-go", 0, 1, []string{"retry=off", "conn_write_timeout=100ms", "dial_timeout=5s"}},
		{"valkey-go", 3, 1, []string{"retry=3(read-only)", "conn_write_timeout=100ms"}},
		{"redigo", 0, 1, []string{"retries=none", "read_timeout=100ms", "write_timeout=none", "dial_timeout=30s"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/retries=%d", tc.client, tc.retries), func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			ctx := context.Background()
			c, err := clients.New(tc.client, clients.Options{Addr: srv.Addr(), Workers: 4, Retries: tc.retries, ReadTimeout: 100 * time.Millisecond})
			if err != nil {
				t.Fatalf("New(%q) error: %v", tc.client, err)
			}
			defer c.Close()
			for _, want := range tc.opts {
				if !strings.Contains(c.Options(), want) {
					t.Errorf("Options() = %q; want it to contain %q", c.Options(), want)
				}
			}
			// Every attempt finds a connection ready: a retry that had to
			// dial would time out on the connection's HELLO instead.
			if err := c.Open(ctx, 4); err != nil {
				t.Fatal(err)
			}
			key := redistest.Prefix(t) + "{counter}"
			wait := blockServer(t, srv.Addr(), 3*time.Second)
			start := time.Now()
			if _, err := c.Incr(ctx, key); err == nil {
				t.Errorf("Incr during the busy script succeeded; want a timeout")
			}
			if took := time.Since(start); took > 2500*time.Millisecond {
				t.Errorf("Incr took %s to fail; want about %d x the 100ms read timeout", took, tc.retries+1)
			}
			wait()
			got, err := redistest.Client(t, srv).Get(ctx, key).Int64()
			if err == redis.Nil {
				got, err = 0, nil
			}
			if err != nil || got != tc.want && (tc.client == "go-redis" || got > tc.want) {
				t.Errorf("counter after the script = %d, %v; want %d (1 + the INCRs retried)", got, err, tc.want)
			}
		})
	}
}

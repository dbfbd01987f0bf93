package clients_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/strategies"
)

// countScript returns {#KEYS[1], 1, 2, ..., ARGV[1]}: a reply as long as
// asked for.
var countScript = strategies.NewScript(`local r = {#KEYS[1]}
for i = 1, tonumber(ARGV[1]) do r[#r + 1] = i end
return r`)

// TestLongMessages checks that a request and a reply several times longer
// than a connection's buffers (go-redis: 1 KiB each, see client_options)
// pass whole, on every client.
func TestLongMessages(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, cname := range clients.Names {
		t.Run(cname, func(t *testing.T) {
			t.Parallel()
			c, err := clients.New(cname, clients.Options{Addr: srv.Addr(), Workers: 1})
			if err != nil {
				t.Fatalf("New(%q) error: %v", cname, err)
			}
			defer c.Close()
			key := redistest.Prefix(t) + strings.Repeat("k", 5000)
			const n = 2000 // about 14 KB of reply
			got, err := c.EvalInts(context.Background(), countScript, []string{key}, strategies.NewArgs(strconv.Itoa(n)))
			if err != nil || len(got) != n+1 || got[0] != int64(len(key)) || got[n] != n {
				t.Errorf("EvalInts(a %d-byte key, %d) = %d values (first %v), %v; want %d values, %d first, %d last",
					len(key), n, len(got), got[:min(len(got), 1)], err, n+1, len(key), n)
			}
		})
	}
}

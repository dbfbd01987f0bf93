package verify

import (
	"errors"
	"testing"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/strategies/published"
)

// TestCountingClientPublished checks that a row's client, which wraps the
// adapter to count its calls, still hands a published strategy the go-redis
// client of a go-redis row (clients.GoRedisConn, through Unwrap), and that
// another client's row refuses it with ErrNeedsGoRedis.
func TestCountingClientPublished(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, tc := range []struct {
		client string
		want   error
	}{
		{"go-redis", nil},
		{"rueidis", published.ErrNeedsGoRedis},
	} {
		t.Run(tc.client, func(t *testing.T) {
			t.Parallel()
			conn, err := clients.New(tc.client, clients.Options{Addr: srv.Addr()})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			s, err := strategies.New("redis_rate", strategies.Config{Limit: 5, Window: 10})
			if err != nil {
				t.Fatal(err)
			}
			d, err := s.Decide(t.Context(), &countingClient{Conn: conn}, redistest.Prefix(t)+"{k}")
			if !errors.Is(err, tc.want) || (tc.want == nil && !d.Allowed) {
				t.Errorf("redis_rate on a %s row: Decide = %+v, %v; want allowed, error %v", tc.client, d, err, tc.want)
			}
		})
	}
}

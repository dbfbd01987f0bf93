package clients

import "testing"

// TestRueidisRingPerMaster: a cluster's ring is sized per master, the
// workers' requests spread over them: 50,000 workers on 4 connections to
// each of 3 masters need 2^13 slots a connection, not the 2^14 that one
// node would.
func TestRueidisRingPerMaster(t *testing.T) {
	t.Parallel()
	tests := []struct{ workers, conns, masters, want int }{
		{50_000, 4, 1, 14},
		{50_000, 4, 0, 14}, // unknown: as one
		{50_000, 4, 3, 13},
		{50_000, 4, 12, 11},
		{1000, 4, 3, 10}, // never below rueidis' default
	}
	for _, tc := range tests {
		if got := rueidisRing(tc.workers, tc.conns, tc.masters); got != tc.want {
			t.Errorf("rueidisRing(%d workers, %d conns, %d masters) = %d; want %d", tc.workers, tc.conns, tc.masters, got, tc.want)
		}
	}
}

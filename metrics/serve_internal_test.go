package metrics

import "testing"

// TestWhere checks that the log line of a server listening on every
// interface says so, and that one on a host does not.
func TestWhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ addr, want string }{
		{":9464", "http://[::]:9464/metrics (every interface)"},
		{"0.0.0.0:9464", "http://[::]:9464/metrics (every interface)"},
		{"[::]:9464", "http://[::]:9464/metrics (every interface)"},
		{"127.0.0.1:9464", "http://[::]:9464/metrics"},
		{"localhost:9464", "http://[::]:9464/metrics"},
	} {
		if got := where(tc.addr, "http://[::]:9464/metrics"); got != tc.want {
			t.Errorf("where(%q) = %q; want %q", tc.addr, got, tc.want)
		}
	}
}

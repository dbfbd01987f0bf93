package rlbench_test

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/internal/porttest"
	"github.com/rlbench/rlbench/internal/redistest"
)

// TestMasters opens each kind of target and checks the masters it returns:
// how many, by address, each one answering.
func TestMasters(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cl := redistest.StartCluster(t, 3, 0)
	tests := []struct {
		name string
		cfg  rlbench.Config
		want []string // the masters' addresses; nil: one, anywhere
	}{
		// A private server, started for the caller and stopped by closeFn.
		{name: "private", cfg: rlbench.Config{}},
		// An existing server, by its address.
		{name: "addr", cfg: rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}}, want: []string{srv.Addr()}},
		// An existing server named by a URL's target, with its own login.
		{name: "url", cfg: rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: srv.Addr(), Login: connection.Settings{DB: 3}}}}, want: []string{srv.Addr()}},
		// Every master of a cluster, from one seed node, by address.
		{name: "cluster", cfg: rlbench.Config{Targets: []rlbench.TargetSpec{{Cluster: cl.Addrs()[:1]}}}, want: slices.Sorted(slices.Values(cl.MasterAddrs()))},
		// The master of a private Sentinel set-up.
		{name: "sentinel", cfg: rlbench.Config{Targets: []rlbench.TargetSpec{{ManagedSentinel: "0"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			masters, closeFn, err := rlbench.Masters(t.Context(), tc.cfg)
			if err != nil {
				t.Fatalf("Masters(%s) error: %v", tc.name, err)
			}
			defer closeFn()
			var addrs []string
			for _, m := range masters {
				if err := m.Ping(t.Context()).Err(); err != nil {
					t.Errorf("Masters(%s): PING %s = %v; want PONG", tc.name, m.Options().Addr, err)
				}
				addr := m.Options().Addr
				if _, _, err := net.SplitHostPort(addr); err != nil {
					t.Errorf("Masters(%s): a master's address = %q; want host:port", tc.name, addr)
				}
				addrs = append(addrs, addr)
			}
			if tc.want == nil && len(masters) != 1 || tc.want != nil && !slices.Equal(addrs, tc.want) {
				t.Errorf("Masters(%s) = %q; want %q (nil: one master)", tc.name, addrs, tc.want)
			}
		})
	}
}

// TestMastersReadOnlyUser opens a server as a user allowed PING and
// read access to keys, nothing else: Masters sends no write, no INFO and
// no ACL check, which would fail with NOPERM.
func TestMastersReadOnlyUser(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	rules := []any{"ACL", "SETUSER", "reader", "on", ">pw", "resetkeys", "%R~" + prefix + "*", "resetchannels", "-@all", "+ping"}
	if err := rdb.Do(t.Context(), rules...).Err(); err != nil {
		t.Fatal(err)
	}
	cfg := rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: srv.Addr(), Login: connection.Settings{Username: "reader", Password: "pw"}}}}
	masters, closeFn, err := rlbench.Masters(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Masters(as a read-only user) error: %v", err)
	}
	defer closeFn()
	if len(masters) != 1 || masters[0].Ping(t.Context()).Err() != nil {
		t.Errorf("Masters(as a read-only user) = %d masters; want one that answers PING", len(masters))
	}
	if err := masters[0].Set(t.Context(), prefix+"k", 1, 0).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("SET through the master as the read-only user = %v; want NOPERM", err)
	}
	if n := rdb.DBSize(t.Context()).Val(); n != 0 {
		t.Errorf("DBSIZE after Masters = %d; want 0", n)
	}
}

// TestMastersBadInput checks that Masters refuses, as a *UsageError naming
// the field, what it cannot open.
func TestMastersBadInput(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	closed := porttest.Refused(t)
	a := rlbench.TargetSpec{Addr: srv.Addr()}
	tests := []struct {
		name  string
		cfg   rlbench.Config
		field string
	}{
		// Two targets: one is read.
		{"two targets", rlbench.Config{Targets: []rlbench.TargetSpec{a, a}}, "Targets.Addr"},
		// A cluster has database 0 only.
		{"db on a cluster", rlbench.Config{Targets: []rlbench.TargetSpec{{Cluster: []string{srv.Addr()}, Login: connection.Settings{DB: 1}}}}, "Targets.Login.DB"},
		{"negative db", rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: srv.Addr(), Login: connection.Settings{DB: -1}}}}, "Targets.Login.DB"},
		// The login check: nothing listens, a wrong password.
		{"closed address", rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: closed}}}, "Connection"},
		{"wrong password", rlbench.Config{Targets: []rlbench.TargetSpec{{Addr: srv.Addr(), Login: connection.Settings{Username: "nobody", Password: "wrong"}}}}, "Connection"},
		// A plain server is no cluster node.
		{"not a cluster", rlbench.Config{Targets: []rlbench.TargetSpec{{Cluster: []string{srv.Addr()}}}}, "Targets.Cluster"},
	}
	for _, tc := range tests {
		masters, closeFn, err := rlbench.Masters(t.Context(), tc.cfg)
		if closeFn != nil {
			closeFn()
		}
		if got := usageField(err); got != tc.field || masters != nil {
			t.Errorf("%s: Masters() = %d masters, %v; want a UsageError of field %s", tc.name, len(masters), err, tc.field)
		}
	}
}

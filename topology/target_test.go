package topology_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/saturation"
	"github.com/rlbench/rlbench/topology"
)

// TestOpenExistingServer opens a server that is already listening: one
// master, what the server says of itself, and a pre-flight that claims the
// prefix until the target closes.
func TestOpenExistingServer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	spec := topology.Label([]topology.Spec{{Addr: srv.Addr()}})[0]
	tg, err := topology.Open(ctx, spec)
	if err != nil {
		t.Fatalf("Open(%s) = %v", srv.Addr(), err)
	}
	closed := false
	defer func() {
		if !closed {
			tg.Close()
		}
	}()
	if tg.Spec.Label != srv.Addr() || tg.Server.Addr != srv.Addr() || tg.Server.Managed || tg.Info.RedisVersion == "" {
		t.Errorf("Open(%s) = label %q, server %+v, info %+v; want the address, not managed, a version", srv.Addr(), tg.Spec.Label, tg.Server, tg.Info)
	}
	if tg.PrivateServer() != nil || tg.ManagedSentinel() != nil {
		t.Errorf("Open(%s): PrivateServer, ManagedSentinel = %v, %v; want nil, nil", srv.Addr(), tg.PrivateServer(), tg.ManagedSentinel())
	}
	nodes, err := tg.Nodes(ctx)
	if err != nil || len(nodes) != 1 || nodes[0].Options().Addr != srv.Addr() {
		t.Fatalf("Nodes() = %d nodes, %v; want the one server", len(nodes), err)
	}
	if err := tg.Preflight(ctx, topology.Checks{Prefix: prefix, RunID: "run-a", Strategies: []string{"lua"}, Clients: []string{"go-redis"}, Workers: 4}); err != nil {
		t.Fatalf("Preflight() = %v", err)
	}
	if n, err := rdb.Exists(ctx, keyspace.ClaimKey(prefix)).Result(); n != 1 || err != nil {
		t.Errorf("EXISTS %s after Preflight = %d, %v; want 1 (the run's claim)", keyspace.ClaimKey(prefix), n, err)
	}
	tg.Close()
	closed = true
	if n, err := rdb.Exists(ctx, keyspace.ClaimKey(prefix)).Result(); n != 0 || err != nil {
		t.Errorf("EXISTS %s after Close = %d, %v; want 0 (the claim released)", keyspace.ClaimKey(prefix), n, err)
	}
}

// TestOpenLogsInWithTheSpecsLogin checks that an existing server is
// logged in to with the spec's Login, the one way of saying how: its
// user, password and DB reach the admin connection and the clients; a
// wrong password is bad input of the login.
func TestOpenLogsInWithTheSpecsLogin(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	if err := rdb.Do(ctx, "ACL", "SETUSER", "bench", "on", ">pw", "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	login := connection.Settings{Username: "bench", Password: "pw", DB: 2}
	tg, err := topology.Open(ctx, topology.Spec{Label: "s", Addr: srv.Addr(), Login: login})
	if err != nil {
		t.Fatalf("Open(the user's login) = %v", err)
	}
	defer tg.Close()
	if who, err := tg.Admin.Do(ctx, "ACL", "WHOAMI").Text(); who != "bench" || err != nil {
		t.Errorf("ACL WHOAMI on the admin connection = %q, %v; want bench", who, err)
	}
	if o := tg.ClientOptions(clients.Options{}); o.Username != "bench" || o.Password != "pw" || o.DB != 2 {
		t.Errorf("ClientOptions() = user %q, db %d; want bench, 2, with the password", o.Username, o.DB)
	}
	login.Password = "wrong"
	_, err = topology.Open(ctx, topology.Spec{Label: "s", Addr: srv.Addr(), Login: login})
	if uerr, ok := errors.AsType[*topology.UsageError](err); !ok || uerr.Field != "Connection" {
		t.Errorf("Open(a wrong password) = %v; want a *UsageError of Connection", err)
	}
}

// TestPreflightRefusesAPrefixInUse checks that Preflight refuses a prefix
// that holds a key already, as bad input naming the prefix.
func TestPreflightRefusesAPrefixInUse(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	if err := rdb.Set(ctx, prefix+"tenant", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	tg, err := topology.Open(ctx, topology.Spec{Label: "s", Addr: srv.Addr()})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer tg.Close()
	err = tg.Preflight(ctx, topology.Checks{Prefix: prefix, RunID: "run-a", Strategies: []string{"lua"}, Clients: []string{"go-redis"}, Workers: 1})
	uerr, ok := errors.AsType[*topology.UsageError](err)
	if !ok || uerr.Field != "Workload.Prefix" || !strings.Contains(err.Error(), "already holds keys") {
		t.Errorf("Preflight(a prefix with a key) = %v; want a *UsageError of Workload.Prefix saying it already holds keys", err)
	}
}

// TestOpenManagedCluster starts a private cluster of three masters:
// three nodes, a cluster spec, stopped at Close.
func TestOpenManagedCluster(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	spec := topology.Label([]topology.Spec{{ManagedCluster: "3"}})[0]
	tg, err := topology.Open(ctx, spec)
	if err != nil {
		t.Fatalf("Open(managed cluster 3) = %v", err)
	}
	defer tg.Close()
	nodes, err := tg.Nodes(ctx)
	if err != nil || len(nodes) != 3 {
		t.Fatalf("Nodes() = %d nodes, %v; want 3 masters", len(nodes), err)
	}
	if !tg.Server.Managed || !strings.HasPrefix(tg.Describe(), "private Redis Cluster 3 of ") {
		t.Errorf("Open(managed cluster 3): managed %t, Describe() = %q; want a private Redis Cluster", tg.Server.Managed, tg.Describe())
	}
	admin, err := tg.NewAdmin(connection.Admin{PoolSize: 2})
	if err != nil {
		t.Fatalf("NewAdmin() = %v", err)
	}
	defer admin.Close()
	// A key on every slot's master: only a cluster client routes them all.
	for _, key := range []string{"{a}", "{b}", "{c}", "{d}"} {
		if err := admin.Set(ctx, redistest.Prefix(t)+key, 1, 0).Err(); err != nil {
			t.Errorf("SET through NewAdmin = %v; want OK on a cluster", err)
		}
	}
}

// TestSpecValidate checks the spec's own checks, before any server.
func TestSpecValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		spec  topology.Spec
		field string // "" for no error
	}{
		{"a private server", topology.Spec{}, ""},
		{"two kinds", topology.Spec{Addr: "127.0.0.1:1", ManagedCluster: "3"}, "Targets.Cluster"},
		{"a bad cluster size", topology.Spec{ManagedCluster: "0"}, "Targets.ManagedCluster"},
		{"too many replicas", topology.Spec{ManagedSentinel: "101"}, "Targets.ManagedSentinel"},
		{"a db on a cluster", topology.Spec{Cluster: []string{"127.0.0.1:1"}, Login: connection.Settings{DB: 1}}, "Targets.Login.DB"},
		{"db 0 on a cluster", topology.Spec{Cluster: []string{"127.0.0.1:1"}}, ""},
		{"a db on a single server", topology.Spec{Addr: "127.0.0.1:1", Login: connection.Settings{DB: 2}}, ""},
		{"TLS on a managed cluster", topology.Spec{ManagedCluster: "3", PrivateTLS: true}, "PrivateTLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.spec.Validate()
			uerr, _ := errors.AsType[*topology.UsageError](err)
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("Validate() = %v; want nil", err)
			case tc.field != "" && (uerr == nil || uerr.Field != tc.field):
				t.Errorf("Validate() = %v; want a *UsageError of %s", err, tc.field)
			}
		})
	}
}

// TestLabel checks the labels Label gives: the address, the kind and size,
// the binary's name, with #2 after a repeat.
func TestLabel(t *testing.T) {
	t.Parallel()
	got := topology.Label([]topology.Spec{
		{Addr: "127.0.0.1:6379"}, {Addr: "127.0.0.1:6379"}, {ManagedCluster: "3x1"}, {ManagedSentinel: "1"},
		{RedisServer: "/opt/valkey/bin/valkey-server"}, {}, {Label: "mine", Addr: "h:1"},
	})
	want := []string{"127.0.0.1:6379", "127.0.0.1:6379#2", "cluster 3x1", "sentinel 1", "valkey-server", "redis-server", "mine"}
	for i, s := range got {
		if s.Label != want[i] {
			t.Errorf("Label()[%d] = %q; want %q", i, s.Label, want[i])
		}
	}
}

// TestServerSamplesRestarted checks which servers of two readings count as
// restarted: the same address with another run_id; not an address in one
// reading only (a failover), nor a run_id not read.
func TestServerSamplesRestarted(t *testing.T) {
	t.Parallel()
	samples := func(pairs ...string) topology.ServerSamples {
		var s topology.ServerSamples
		for i := 0; i < len(pairs); i += 2 {
			s.Addrs = append(s.Addrs, pairs[i])
			s.Samples = append(s.Samples, saturation.Sample{ServerRunID: pairs[i+1]})
		}
		return s
	}
	tests := []struct {
		name          string
		before, after topology.ServerSamples
		want          string
	}{
		{"the same server", samples("a:1", "r1"), samples("a:1", "r1"), ""},
		{"restarted", samples("a:1", "r1", "b:2", "r2"), samples("b:2", "r2", "a:1", "r9"), "a:1 (run_id r1, then r9)"},
		{"a failover: another address", samples("a:1", "r1"), samples("b:2", "r2"), ""},
		{"no run_id read", samples("a:1", ""), samples("a:1", "r9"), ""},
		{"no reading after", samples("a:1", "r1"), topology.ServerSamples{}, ""},
	}
	for _, tc := range tests {
		if got := tc.before.Restarted(tc.after); got != tc.want {
			t.Errorf("%s: Restarted = %q; want %q", tc.name, got, tc.want)
		}
	}
}

package redisserver_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redisserver"
)

// These tests live in package redisserver_test so that they start clusters
// through internal/redistest, as every other package's tests will. Each
// starts its own cluster and runs in parallel with the others: forming one
// takes about 2 seconds, most of it Redis's own delay before a new master
// accepts writes.

func TestParseClusterSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		in          string
		masters     int
		replicas    int
		wantErr     bool
		errMentions string // a word the error must contain, besides the accepted form
	}{
		{name: "masters only", in: "3", masters: 3},
		{name: "with replicas", in: "3x1", masters: 3, replicas: 1},
		{name: "upper-case x", in: "5X2", masters: 5, replicas: 2},
		{name: "zero replicas", in: "4x0", masters: 4},
		{name: "leading zeros", in: "03x01", masters: 3, replicas: 1},
		{name: "empty", in: "", wantErr: true},
		{name: "too few masters", in: "2", wantErr: true, errMentions: "at least 3"},
		{name: "too few masters with replicas", in: "1x2", wantErr: true, errMentions: "at least 3"},
		{name: "missing replicas", in: "3x", wantErr: true},
		{name: "missing masters", in: "x1", wantErr: true},
		{name: "negative replicas", in: "3x-1", wantErr: true},
		{name: "plus sign", in: "+3", wantErr: true},
		{name: "space", in: "3 x1", wantErr: true},
		{name: "two x", in: "3x1x1", wantErr: true},
		{name: "word", in: "three", wantErr: true},
		{name: "too many nodes", in: "500x2", wantErr: true, errMentions: "1000 nodes"},
		{name: "overflow", in: "99999999999999999999", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			masters, replicas, err := redisserver.ParseClusterSize(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseClusterSize(%q) = (%d, %d, nil); want an error", tc.in, masters, replicas)
				}
				if !errors.Is(err, redisserver.ErrClusterSize) {
					t.Errorf("ParseClusterSize(%q) error = %v; want errors.Is ErrClusterSize", tc.in, err)
				}
				for _, want := range []string{strconv.Quote(tc.in), "N or NxR", "3x1", tc.errMentions} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("ParseClusterSize(%q) error = %q; want it to contain %q", tc.in, err, want)
					}
				}
				return
			}
			if err != nil || masters != tc.masters || replicas != tc.replicas {
				t.Errorf("ParseClusterSize(%q) = (%d, %d, %v); want (%d, %d, nil)", tc.in, masters, replicas, err, tc.masters, tc.replicas)
			}
		})
	}
}

func TestStartClusterInvalidSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    redisserver.ClusterOptions
	}{
		{name: "two masters", o: redisserver.ClusterOptions{Masters: 2}},
		{name: "negative masters", o: redisserver.ClusterOptions{Masters: -3}},
		{name: "negative replicas", o: redisserver.ClusterOptions{Replicas: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redisserver.StartCluster(t.Context(), tc.o)
			if err == nil {
				c.Close()
				t.Fatalf("StartCluster(%+v) = nil error; want ErrClusterSize", tc.o)
			}
			if !errors.Is(err, redisserver.ErrClusterSize) {
				t.Errorf("StartCluster(%+v) error = %v; want errors.Is ErrClusterSize", tc.o, err)
			}
		})
	}
}

func TestStartClusterNotFound(t *testing.T) {
	t.Parallel()
	missing := t.TempDir() + "/no-such-redis-server"
	c, err := redisserver.StartCluster(t.Context(), redisserver.ClusterOptions{Binary: missing})
	if err == nil {
		c.Close()
		t.Fatalf("StartCluster(Binary: %q) = nil error; want ErrNotFound", missing)
	}
	if !errors.Is(err, redisserver.ErrNotFound) || strings.Contains(err.Error(), "start cluster") {
		t.Errorf("StartCluster(Binary: %q) error = %v; want ErrNotFound as Start reports it, once", missing, err)
	}
}

// TestClusterSetGet writes keys that hash to many slots through a go-redis
// ClusterClient and checks that every master got some.
func TestClusterSetGet(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := redistest.StartCluster(t, 3, 0)
	t.Logf("3-master cluster formed in %v", time.Since(start).Round(time.Millisecond))
	ctx := t.Context()

	if got := len(c.Addrs()); got != 3 {
		t.Errorf("len(Addrs()) = %d; want 3", got)
	}
	if got, want := c.MasterAddrs(), c.Addrs(); !slices.Equal(got, want) {
		t.Errorf("MasterAddrs() = %v; want Addrs() = %v", got, want)
	}

	rdb := redistest.ClusterClient(t, c)
	prefix := redistest.Prefix(t)
	const keys = 1000
	slots := make(map[int64]bool)
	for i := range keys {
		key := fmt.Sprintf("%s%d", prefix, i)
		if err := rdb.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		slot, err := rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
		}
		slots[slot] = true
	}
	for i := range keys {
		key := fmt.Sprintf("%s%d", prefix, i)
		if got, err := rdb.Get(ctx, key).Int(); got != i || err != nil {
			t.Fatalf("GET %s = (%d, %v); want (%d, nil)", key, got, err, i)
		}
	}
	if len(slots) < keys/2 {
		t.Errorf("%d keys fell in %d slots; want many more", keys, len(slots))
	}

	total := int64(0)
	for _, addr := range c.MasterAddrs() {
		n, err := client(t, addr).DBSize(ctx).Result()
		if err != nil {
			t.Fatalf("DBSIZE on %s: %v", addr, err)
		}
		if n == 0 {
			t.Errorf("DBSIZE on master %s = 0; want some of the %d keys", addr, keys)
		}
		total += n
	}
	if total != keys {
		t.Errorf("sum of DBSIZE over masters = %d; want %d", total, keys)
	}

	if _, err := c.Failover(ctx, c.Addrs()[0]); !errors.Is(err, redisserver.ErrNoReplica) {
		t.Errorf("Failover(%s) without replicas = %v; want ErrNoReplica", c.Addrs()[0], err)
	}
}

// TestClusterReplicas checks the shape of a 3x1 cluster as the nodes report it.
func TestClusterReplicas(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := redistest.StartCluster(t, 3, 1)
	t.Logf("3x1 cluster formed in %v", time.Since(start).Round(time.Millisecond))
	ctx := t.Context()

	addrs := c.Addrs()
	if len(addrs) != 6 {
		t.Fatalf("Addrs() = %v; want 6 nodes", addrs)
	}
	masters := c.MasterAddrs()
	if !slices.Equal(masters, addrs[:3]) {
		t.Errorf("MasterAddrs() = %v; want the first 3 of Addrs() %v", masters, addrs)
	}
	for i, addr := range addrs {
		info := replicationInfo(t, client(t, addr))
		if i < 3 {
			if info["role"] != "master" || info["connected_slaves"] != "1" {
				t.Errorf("INFO replication on master %s: role:%s connected_slaves:%s; want master with 1", addr, info["role"], info["connected_slaves"])
			}
			continue
		}
		wantMaster := addrs[i-3]
		if got := "127.0.0.1:" + info["master_port"]; info["role"] != "slave" || got != wantMaster || info["master_link_status"] != "up" {
			t.Errorf("INFO replication on replica %s: role:%s master %s link %s; want slave of %s, link up", addr, info["role"], got, info["master_link_status"], wantMaster)
		}
	}

	// Each node's bus port is its own, not port+10000.
	for _, addr := range addrs {
		got, err := client(t, addr).ConfigGet(ctx, "cluster-port").Result()
		if err != nil || got["cluster-port"] == "" || got["cluster-port"] == "0" {
			t.Errorf("CONFIG GET cluster-port on %s = (%v, %v); want a port", addr, got, err)
		}
	}

	for _, addr := range addrs {
		if srv := c.Node(addr); srv == nil || srv.Addr() != addr {
			t.Errorf("Node(%s) = %v; want the server at that address", addr, srv)
		}
	}
	if srv := c.Node("127.0.0.1:1"); srv != nil {
		t.Errorf("Node(127.0.0.1:1) = %v; want nil", srv)
	}
}

// TestClusterFailover promotes the replica of the first master and checks
// that data written before is still there, through the old client (which
// follows MOVED) and a new one.
func TestClusterFailover(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3, 1)
	ctx := t.Context()
	addrs := c.Addrs()
	before := c.MasterAddrs()

	rdb := redistest.ClusterClient(t, c)
	prefix := redistest.Prefix(t)
	const keys = 200
	for i := range keys {
		if err := rdb.Set(ctx, fmt.Sprintf("%s%d", prefix, i), i, 0).Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
	}

	start := time.Now()
	promoted, err := c.Failover(ctx, before[0])
	if err != nil {
		t.Fatalf("Failover(%s) = %v", before[0], err)
	}
	t.Logf("Failover took %v", time.Since(start).Round(time.Millisecond))
	if promoted != addrs[3] {
		t.Errorf("Failover(%s) = %s; want its replica %s", before[0], promoted, addrs[3])
	}
	want := []string{promoted, before[1], before[2]}
	if got := c.MasterAddrs(); !slices.Equal(got, want) {
		t.Errorf("MasterAddrs() after Failover = %v; want %v", got, want)
	}
	if info := replicationInfo(t, client(t, promoted)); info["role"] != "master" {
		t.Errorf("INFO replication on %s: role:%s; want master", promoted, info["role"])
	}
	if info := replicationInfo(t, client(t, before[0])); info["role"] != "slave" || "127.0.0.1:"+info["master_port"] != promoted {
		t.Errorf("INFO replication on old master %s: role:%s master_port:%s; want slave of %s", before[0], info["role"], info["master_port"], promoted)
	}

	for name, rdb := range map[string]*redis.ClusterClient{"old client": rdb, "new client": redistest.ClusterClient(t, c)} {
		for i := range keys {
			key := fmt.Sprintf("%s%d", prefix, i)
			if got, err := rdb.Get(ctx, key).Int(); got != i || err != nil {
				t.Fatalf("%s: GET %s after Failover = (%d, %v); want (%d, nil)", name, key, got, err, i)
			}
		}
	}

	if _, err := c.Failover(ctx, before[0]); err == nil || !strings.Contains(err.Error(), "not a master") {
		t.Errorf("Failover(%s) on the demoted master = %v; want a not-a-master error", before[0], err)
	}
	// And back: the cluster settled, so the old master can take over again.
	if back, err := c.Failover(ctx, promoted); err != nil || back != before[0] {
		t.Errorf("Failover(%s) = (%s, %v); want (%s, nil)", promoted, back, err, before[0])
	}
}

// TestClusterNodeRestart restarts a replica through Node: it keeps its
// nodes.conf, so it rejoins as the same node and resyncs.
func TestClusterNodeRestart(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3, 1)
	ctx := t.Context()
	rdb := redistest.ClusterClient(t, c)
	prefix := redistest.Prefix(t)
	for i := range 100 {
		if err := rdb.Set(ctx, fmt.Sprintf("%s%d", prefix, i), i, 0).Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
	}
	master, replica := c.Addrs()[0], c.Addrs()[3]
	idBefore, err := client(t, replica).ClusterMyID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Node(replica).Restart(ctx); err != nil {
		t.Fatalf("Node(%s).Restart() = %v", replica, err)
	}
	after := client(t, replica)
	if id, err := after.ClusterMyID(ctx).Result(); err != nil || id != idBefore {
		t.Errorf("CLUSTER MYID after Restart = (%s, %v); want %s", id, err, idBefore)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info := replicationInfo(t, after)
		state, _ := after.ClusterInfo(ctx).Result()
		if info["master_link_status"] == "up" && strings.Contains(state, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after Restart, replica %s: role:%s link:%s, cluster info:\n%s", replica, info["role"], info["master_link_status"], state)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := c.MasterAddrs(); !slices.Equal(got, c.Addrs()[:3]) {
		t.Errorf("MasterAddrs() after restarting a replica = %v; want %v", got, c.Addrs()[:3])
	}
	want, err := client(t, master).DBSize(ctx).Result()
	if err != nil || want == 0 {
		t.Fatalf("DBSIZE on master %s = (%d, %v); want some keys", master, want, err)
	}
	if got, err := after.DBSize(ctx).Result(); got != want || err != nil {
		t.Errorf("DBSIZE on restarted replica %s = (%d, %v); want its master's %d (resynced)", replica, got, err, want)
	}
}

// TestClusterClose checks that Close stops every node and removes every
// node's directory.
func TestClusterClose(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3, 1)
	ctx := t.Context()
	type node struct {
		addr, dir string
		pid       int
	}
	var nodes []node
	for _, addr := range c.Addrs() {
		rdb := client(t, addr)
		info, err := rdb.Info(ctx, "server").Result()
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(infoField(info, "process_id"))
		if err != nil {
			t.Fatalf("INFO server on %s: process_id: %v", addr, err)
		}
		dir, err := rdb.ConfigGet(ctx, "dir").Result()
		if err != nil || dir["dir"] == "" {
			t.Fatalf("CONFIG GET dir on %s = (%v, %v)", addr, dir, err)
		}
		nodes = append(nodes, node{addr: addr, dir: dir["dir"], pid: pid})
	}

	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	t.Logf("Close took %v", time.Since(start).Round(time.Millisecond))
	for _, n := range nodes {
		if err := syscall.Kill(n.pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("after Close, kill(%d, 0) for %s = %v; want ESRCH (process gone)", n.pid, n.addr, err)
		}
		if _, err := os.Stat(n.dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Close, stat %s (dir of %s): %v; want not exist", n.dir, n.addr, err)
		}
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close() = %v; want nil", err)
	}
	if got := c.MasterAddrs(); got != nil {
		t.Errorf("MasterAddrs() after Close = %v; want nil", got)
	}
	if _, err := c.Failover(ctx, nodes[0].addr); err == nil || !strings.Contains(err.Error(), "cluster is closed") {
		t.Errorf("Failover() after Close error = %v; want \"cluster is closed\"", err)
	}
}

// client returns a plain go-redis client to one node, closed at the end of
// the test.
func client(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// replicationInfo returns the fields of INFO replication.
func replicationInfo(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	text, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		t.Fatalf("INFO replication: %v", err)
	}
	fields := make(map[string]string)
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields
}

// infoField returns one field of INFO output.
func infoField(text, field string) string {
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == field {
			return v
		}
	}
	return ""
}

// TestClusterMoveSlot moves the slot of two keys, one with a TTL, to the
// next master: the old owner answers ASK while the slot migrates, the keys
// arrive with their values and TTL, and every node then names the new
// owner.
func TestClusterMoveSlot(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3, 0)
	ctx := t.Context()
	rdb := redistest.ClusterClient(t, c)
	prefix := redistest.Prefix(t)
	withTTL, without := prefix+"{tag}a", prefix+"{tag}b"
	if err := rdb.Set(ctx, withTTL, 1, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, without, 2, 0).Err(); err != nil {
		t.Fatal(err)
	}
	slot, err := rdb.ClusterKeySlot(ctx, withTTL).Result()
	if err != nil {
		t.Fatal(err)
	}
	// During the hold the old owner has given its keys away and answers ASK.
	asked := make(chan error, 1)
	var masters []*redis.Client
	for _, addr := range c.MasterAddrs() {
		masters = append(masters, client(t, addr))
	}
	moved := make(chan struct{})
	go func() {
		// Until MoveSlot returns: the first MIGRATE may take a while on a
		// loaded machine, and the hold begins only after it.
		var err error
		for {
			for _, m := range masters {
				if err = m.Get(ctx, withTTL).Err(); err != nil && strings.HasPrefix(err.Error(), "ASK ") {
					asked <- nil
					return
				}
			}
			select {
			case <-moved:
				asked <- fmt.Errorf("no master answered ASK; the last said %v", err)
				return
			case <-ctx.Done(): // the test ended early
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	m, err := c.MoveSlot(ctx, int(slot), 500*time.Millisecond)
	close(moved)
	if err != nil {
		t.Fatalf("MoveSlot(%d) = %v", slot, err)
	}
	if err := <-asked; err != nil {
		t.Errorf("GET during the migration: %v", err)
	}
	if m.Keys != 2 || m.From == m.To || m.Slot != int(slot) {
		t.Errorf("MoveSlot(%d) = %+v; want 2 keys moved between two masters", slot, m)
	}
	dst := client(t, m.To)
	if ttl, err := dst.TTL(ctx, withTTL).Result(); err != nil || ttl <= 0 {
		t.Errorf("TTL %s on the new owner = %v, %v; want the key's TTL kept", withTTL, ttl, err)
	}
	if v, err := dst.Get(ctx, without).Int(); err != nil || v != 2 {
		t.Errorf("GET %s on the new owner = %d, %v; want 2", without, v, err)
	}
	for _, addr := range c.Addrs() {
		if err := client(t, addr).Get(ctx, without).Err(); addr != m.To && (err == nil || !strings.HasPrefix(err.Error(), "MOVED ")) {
			t.Errorf("GET on %s after the move = %v; want MOVED to %s", addr, err, m.To)
		}
	}
	if _, err := c.MoveSlot(ctx, 16384, 0); err == nil || !strings.Contains(err.Error(), "not a hash slot") {
		t.Errorf("MoveSlot(16384) error = %v; want not a hash slot", err)
	}
}

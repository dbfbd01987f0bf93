package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
)

// TestRunCluster runs the command against an existing 3-master cluster with
// --cluster (two seed nodes, comma-separated): one table row per cell, and a
// JSON report whose runs each have an audit per master.
func TestRunCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	args := []string{"--cluster", strings.Join(cl.Addrs()[:2], ","), "--client", "go-redis,rueidis", "--strategy", "lua,multi-nx",
		"--clients", "4", "--keys", "5", "--requests", "200", "--prefix", redistest.Prefix(t), "--json", jsonPath}
	res := mustRun(t, exitOK, args...)
	if rows := tableRows(t, res.stdout); len(rows) != 4 {
		t.Errorf("run(%q) table rows = %q; want 4 (2 strategies x 2 clients)", args, rows)
	}
	// Every cell's keys lie on the same masters (5 keys, the same names):
	// the note is said once, of all 4 cells.
	if got := strings.Count(res.stdout, "all 4 cells keys per master: "); got != 1 {
		t.Errorf("run(%q) stdout has %d \"all 4 cells keys per master\" lines; want 1\n%s", args, got, res.stdout)
	}
	runs := readReport(t, jsonPath).Runs
	if len(runs) != 4 {
		t.Fatalf("JSON has %d runs; want 4", len(runs))
	}
	for _, r := range runs {
		if len(r.AuditPerNode) != 3 || r.Decisions != 200 || r.Audit.Keys != 5 {
			t.Errorf("run %s/%s: audit_per_node %v, decisions %v, audit %+v; want 3 masters, 200, 5 keys",
				r.Strategy, r.Client, r.AuditPerNode, r.Decisions, r.Audit)
		}
	}
}

// TestRunClusterScriptLoad runs python-limits (EVALSHA; on NOSCRIPT,
// SCRIPT LOAD then EVALSHA, as redis-py's Script does) on a 3-master
// cluster after SCRIPT FLUSH on every master, with no warm-up, on each
// client that reaches a cluster: the SCRIPT LOAD names no key, and goes to
// every master (as redis-py's RedisCluster sends it), so the EVALSHA after
// it finds the script wherever its key lives and no decision fails. Each
// client has a run of its own, from an empty cache.
func TestRunClusterScriptLoad(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	rdb := redistest.ClusterClient(t, cl)
	for _, client := range clients.Names {
		if !slices.Contains(clients.Topologies[client], clients.TopologyCluster) {
			continue
		}
		// go-redis' ScriptFlush goes to every node.
		if err := rdb.ScriptFlush(t.Context()).Err(); err != nil {
			t.Fatalf("script flush: %v", err)
		}
		jsonPath := filepath.Join(t.TempDir(), client+".json")
		args := []string{"--cluster", strings.Join(cl.Addrs(), ","), "--client", client, "--strategy", "python-limits",
			"--clients", "1", "--keys", "30", "--requests", "300", "--limit", "1000000", "--warmup", "0",
			"--prefix", redistest.Prefix(t) + client + ":", "--json", jsonPath}
		res := mustRun(t, exitOK, args...)
		runs := readReport(t, jsonPath).Runs
		if len(runs) != 1 {
			t.Fatalf("run(%q): JSON has %d runs; want 1", args, len(runs))
		}
		if r := runs[0]; r.Decisions != 300 || r.Errors != 0 || len(r.ErrorKinds) != 0 {
			t.Errorf("run(%q): decisions %d, errors %d %v; want 300 decisions, no error (no NOSCRIPT after the load)\n%s",
				args, r.Decisions, r.Errors, r.ErrorKinds, res.stdout)
		}
	}
}

// TestRunClusterBadInput checks that bad cluster flags are usage errors
// that name the flag, found before any server is contacted.
func TestRunClusterBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"managed cluster of no masters", []string{"--managed-cluster", "0"}, "--managed-cluster"},
		{"managed cluster size not a number", []string{"--managed-cluster", "3xa"}, "--managed-cluster"},
		{"db other than 0 on a cluster", []string{"--cluster", closedAddr(t), "--db", "1"}, "--db"},
		{"fault on a cluster", []string{"--cluster", closedAddr(t), "--fault", "kill-clients@1s"}, "--fault"},
		{"failover on a single server", []string{"--addr", closedAddr(t), "--fault", "failover@1s"}, "--managed-cluster NxR"},
		{"failover on a cluster without replicas", []string{"--managed-cluster", "3", "--fault", "failover@1s"}, "--managed-cluster NxR"},
		{"failover on an existing cluster", []string{"--cluster", closedAddr(t), "--fault", "failover@1s"}, "--managed-cluster NxR"},
		{"reshard on a single server", []string{"--addr", closedAddr(t), "--fault", "reshard@1s"}, "--managed-cluster N"},
		{"reshard on an existing cluster", []string{"--cluster", closedAddr(t), "--fault", "reshard@1s"}, "--managed-cluster N"},
		{"fault after the end", []string{"--managed-cluster", "3", "--duration", "2s", "--fault", "reshard@2s"}, "after the end of the run"},
		{"reshard hold past the end", []string{"--managed-cluster", "3", "--duration", "2s", "--fault", "reshard@1s:1s"}, "does not end before the run does"},
		{"stall past the end", []string{"--addr", closedAddr(t), "--duration", "2s", "--fault", "stall@1500ms:1s"}, "does not end before the run does"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := mustRun(t, exitUsage, tc.args...)
			if !strings.Contains(res.stderr, tc.want) {
				t.Errorf("run(%q) stderr = %q; want it to name %s", tc.args, res.stderr, tc.want)
			}
		})
	}
}

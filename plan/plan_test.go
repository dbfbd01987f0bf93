package plan_test

import (
	"errors"
	"github.com/rlbench/rlbench/keyspace"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/plan"
	"github.com/rlbench/rlbench/serverinfo"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/topology"

	// The published limiters (go-redis only) register their strategies.
	_ "github.com/rlbench/rlbench/strategies/published"
)

var (
	single  = topology.Spec{Addr: "127.0.0.1:6379", Label: "single"}
	cluster = topology.Spec{Cluster: []string{"127.0.0.1:7000"}, Label: "cluster"}
)

// TestBuildAll checks what "all" leaves out before anything touches a
// server: the clients that a target's topology does not support (redigo
// on a cluster), and the cells of a strategy on a client it does not run
// on (a published library written for go-redis), each with its reason;
// the strategies it brought in are optional, and each cell has its keys.
func TestBuildAll(t *testing.T) {
	t.Parallel()
	p, err := plan.Build(plan.Settings{
		Strategies: []string{"all"}, Clients: []string{"all"}, Targets: []topology.Spec{single, cluster},
		Prefix: "run:",
	})
	if err != nil {
		t.Fatalf("Build(all, all) = %v", err)
	}
	if slices.Contains(p.Clients, "redigo") || !slices.Contains(p.Clients, "rueidis") {
		t.Errorf("Build(all, all on a cluster).Clients = %v; want every client but redigo", p.Clients)
	}
	if !slices.Equal(p.Strategies, strategies.BuiltinNames()) || !slices.Equal(p.Optional, p.Strategies) {
		t.Errorf("Build(all).Strategies = %v, Optional = %v; want the built-in ones, all optional", p.Strategies, p.Optional)
	}
	cells := p.Cells(1)
	if want := len(p.Strategies) * len(p.Clients); len(cells) != want {
		t.Fatalf("Cells(1) = %d cells; want %d", len(cells), want)
	}
	for _, c := range cells {
		unsupported, ok := errors.AsType[*plan.ClientUnsupported](c.LeftOut)
		if want := !c.Info.Supports(c.Client); ok != want || (c.LeftOut != nil) != want {
			t.Errorf("cell %s/%s: LeftOut = %v; want left out: %t", c.Info.Name, c.Client, c.LeftOut, want)
		}
		if ok && unsupported.Error() != c.Info.Name+" runs on go-redis only" {
			t.Errorf("cell %s/%s: LeftOut = %q; want %q", c.Info.Name, c.Client, unsupported, c.Info.Name+" runs on go-redis only")
		}
		if want := keyspace.Cell("run:t2:", c.Info.Name, c.Client); c.Prefix != want || c.RunPrefix != "run:t2:" || c.Target != 1 || c.Spec.Label != "cluster" {
			t.Errorf("cell %s/%s: target %d %q, prefixes %q %q; want 1 cluster, %q under run:t2:", c.Info.Name, c.Client, c.Target, c.Spec.Label, c.RunPrefix, c.Prefix, want)
		}
	}
}

// TestBuildRefuses checks the plan's refusals of what the user named, each
// a *topology.UsageError of the field a run names, with the message it
// gives today.
func TestBuildRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		s         plan.Settings
		field     string
		says      string
		refusedOK bool // the Settings are accepted
	}{
		{name: "unknown strategy", s: plan.Settings{Strategies: []string{"nope"}, Clients: []string{"go-redis"}, Targets: []topology.Spec{single}},
			field: "Strategies", says: `unknown strategy "nope" (accepted: naive,`},
		{name: "unknown client", s: plan.Settings{Strategies: []string{"lua"}, Clients: []string{"jedis"}, Targets: []topology.Spec{single}},
			field: "Clients", says: `unknown client "jedis"`},
		{name: "a library on a client it is not written for", s: plan.Settings{Strategies: []string{"redis_rate"}, Clients: []string{"rueidis"}, Targets: []topology.Spec{single}},
			field: "Clients", says: "strategy redis_rate runs on go-redis only (a library written for it); it cannot run on rueidis"},
		// verify's matrix keeps the pair, to report it not applicable.
		{name: "the same in a matrix", s: plan.Settings{Strategies: []string{"redis_rate"}, Clients: []string{"rueidis"}, Targets: []topology.Spec{single}, Matrix: true},
			refusedOK: true},
		{name: "redigo named on a cluster", s: plan.Settings{Strategies: []string{"lua"}, Clients: []string{"redigo"}, Targets: []topology.Spec{single, cluster}},
			field: "Clients", says: "cluster: redigo: cluster: "},
		{name: "retries on redigo", s: plan.Settings{Strategies: []string{"lua"}, Clients: []string{"all"}, Targets: []topology.Spec{single}, Options: clients.Options{Retries: 2}},
			field: "Retries", says: "redigo: "},
		{name: "a connection shape rueidis cannot open", s: plan.Settings{Strategies: []string{"lua"}, Clients: []string{"rueidis"}, Targets: []topology.Spec{single}, Options: clients.Options{Connections: 3}},
			field: "Connections", says: "a power of two"},
		{name: "rueidis with two timeouts", s: plan.Settings{Strategies: []string{"lua"}, Clients: []string{"rueidis"}, Targets: []topology.Spec{single}, Options: clients.Options{ReadTimeout: time.Second, WriteTimeout: 2 * time.Second}},
			field: "ReadTimeout", says: "read timeout 1s, write timeout 2s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := plan.Build(tc.s)
			if tc.refusedOK {
				if err != nil || p.Cells(0)[0].LeftOut != nil {
					t.Errorf("Build() = %v, cell left out: %v; want the cell kept", err, p.Cells(0)[0].LeftOut)
				}
				return
			}
			uerr, ok := errors.AsType[*topology.UsageError](err)
			if !ok || uerr.Field != tc.field || !strings.Contains(uerr.Err.Error(), tc.says) {
				t.Errorf("Build() error = %v; want a UsageError of %s saying %q", err, tc.field, tc.says)
			}
		})
	}
}

// TestBuildUserStrategies checks that "all" brings in the run's own user
// strategies after the built-in ones, as optional, from the plan's
// registry: two plans may each have their own strategy of one name.
func TestBuildUserStrategies(t *testing.T) {
	t.Parallel()
	for i, spec := range []string{"INCR {key} | EXPIRE {key} {window} NX", "INCRBY {key} 1 | EXPIRE {key} {window} NX"} {
		reg := strategies.NewRegistry()
		if err := reg.RegisterSequence("mine=" + spec); err != nil {
			t.Fatalf("plan %d: RegisterSequence = %v", i, err)
		}
		p, err := plan.Build(plan.Settings{Strategies: []string{"all"}, Clients: []string{"go-redis"}, Registry: reg, Targets: []topology.Spec{single}})
		if err != nil {
			t.Fatalf("plan %d: Build = %v", i, err)
		}
		if p.Strategies[len(p.Strategies)-1] != "mine" || !slices.Contains(p.Optional, "mine") {
			t.Errorf("plan %d: Strategies = %v, Optional = %v; want mine last, and optional", i, p.Strategies, p.Optional)
		}
		if info, ok := p.Info("mine"); !ok || info.Commands != spec {
			t.Errorf("plan %d: Info(mine) = %q, %t; want its own %q", i, info.Commands, ok, spec)
		}
	}
	if _, err := plan.Build(plan.Settings{Strategies: []string{"mine"}, Clients: []string{"go-redis"}, Targets: []topology.Spec{single}}); err == nil {
		t.Errorf("Build(mine) with no registry = nil; want it unknown: no plan registers into the process")
	}
}

// TestLeaveOut checks the plan's second step on a server older than the
// hash-field TTLs (the 7.0 on PATH): the strategies "all" brought in that
// it cannot run are left out of its cells, each saying what the server
// lacks, and the target's header says so once per version needed.
func TestLeaveOut(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	if serverinfo.VersionAtLeast(srv.Info().RedisVersion, "7.4.0") {
		t.Skipf("the server is %s, which has hash-field TTLs; set %s to a redis-server before 7.4", srv.Info().Version, redistest.BinaryEnv)
	}
	spec := topology.Label([]topology.Spec{{Addr: srv.Addr()}})[0]
	tg, err := topology.Open(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	nodes, err := tg.Nodes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(plan.Settings{Strategies: []string{"all", "lua"}, Clients: []string{"go-redis"}, Targets: []topology.Spec{spec}})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := p.LeaveOut(t.Context(), 0, tg, nodes, redistest.Prefix(t)+"preflight")
	if err != nil || slices.Contains(runs, "hash-lua") || !slices.Contains(runs, "lua") {
		t.Fatalf("LeaveOut() = %v, %v; want lua kept and hash-lua left out", runs, err)
	}
	for _, c := range p.Cells(0) {
		lacks, ok := errors.AsType[*plan.ServerLacks](c.LeftOut)
		if want := c.Info.Layout == strategies.LayoutHashField; ok != want || ok && !slices.Contains(lacks.Lacks, "HEXPIRE") {
			t.Errorf("cell %s: LeftOut = %v; want left out for lacking HEXPIRE: %t", c.Info.Name, c.LeftOut, want)
		}
	}
	var log strings.Builder
	p.LogHeader(&log, 0, tg)
	if want := "--strategy all leaves out hash-incr-expire, hash-lua, hash-multi-nx: they need Redis >= 7.4.0"; !strings.Contains(log.String(), want) {
		t.Errorf("LogHeader() = %q; want it to say %q", log.String(), want)
	}
}

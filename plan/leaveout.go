package plan

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/acl"
	"github.com/rlbench/rlbench/serverinfo"
	"github.com/rlbench/rlbench/topology"
)

// LeaveOut is the plan's second step, on target i (an index in
// Settings.Targets) once opened as t and found writable, during its
// pre-flight (topology.Checks.LeaveOut): it asks every master (nodes)
// whether it can run each strategy that "all" brought in (Optional), and
// leaves out of i's cells those it cannot (ServerLacks), so that
// --strategy all means every strategy this target supports. probeKey is
// a key under the run's prefix that does not exist, on which the options
// are probed. It returns the strategies that target i runs, for the
// pre-flight's other checks; a strategy named is not left out: those
// checks refuse it, naming what it needs.
func (p *Plan) LeaveOut(ctx context.Context, i int, t *topology.Target, nodes []*redis.Client, probeKey string) ([]string, error) {
	if len(p.Optional) == 0 {
		return p.Strategies, nil
	}
	probe, err := t.NodeFor(ctx, probeKey, nodes)
	if err != nil {
		return nil, usage(t.Field(), fmt.Errorf("%s: %w", t.Spec.Label, err))
	}
	p.lacks[i] = map[string][]string{}
	for _, s := range p.Optional {
		// The commands on every master; the options once, on the node of
		// the probe key.
		var lacks []string
		for j, n := range append(slices.Clone(nodes), probe) {
			k := ""
			if j == len(nodes) {
				k = probeKey
			}
			l, err := acl.Unsupported(ctx, n, p.Registry, k, s)
			if err != nil {
				break // reported by the pre-flight's checks of the whole run
			}
			for _, c := range l {
				if !slices.Contains(lacks, c) {
					lacks = append(lacks, c)
				}
			}
		}
		if len(lacks) > 0 {
			p.lacks[i][s] = lacks
		}
	}
	runs := slices.DeleteFunc(slices.Clone(p.Strategies), func(s string) bool { return p.lacks[i][s] != nil })
	if len(runs) == 0 {
		return nil, usage("Strategies", fmt.Errorf("%s: the server runs none of the strategies", t.Spec.Label))
	}
	return runs, nil
}

// LogHeader writes target i's lines of the run's header: what it is
// (topology.Target.LogHeader), then one line per Redis version that the
// strategies LeaveOut left out of it need: which ones, and what the server
// lacks, e.g. "rlbench: target redis-server: --strategy all leaves out
// hash-lua: it needs Redis >= 7.4.0 (redis 7.0.15 lacks HEXPIRE, HTTL,
// HPTTL)".
func (p *Plan) LogHeader(log io.Writer, i int, t *topology.Target) {
	t.LogHeader(log)
	byVersion := map[string][]string{} // strategies by the version they need
	var versions []string
	for _, s := range slices.Sorted(maps.Keys(p.lacks[i])) {
		v := "?"
		if info := p.infos[s]; info.MinRedis != "" {
			v = info.MinRedis
		}
		if byVersion[v] == nil {
			versions = append(versions, v)
		}
		byVersion[v] = append(byVersion[v], s)
	}
	for _, v := range versions {
		var lacks []string
		for _, s := range byVersion[v] {
			for _, c := range p.lacks[i][s] {
				if !slices.Contains(lacks, c) {
					lacks = append(lacks, c)
				}
			}
		}
		need := "they need"
		if len(byVersion[v]) == 1 {
			need = "it needs"
		}
		fmt.Fprintf(log, "rlbench: target %s: --strategy all leaves out %s: %s Redis >= %s (%s %s lacks %s)\n",
			t.Spec.Label, strings.Join(byVersion[v], ", "), need, v, t.Server.Name, t.Server.Version, strings.Join(lacks, ", "))
	}
}

// Runnable returns the strategies of p that a server of version runs
// (Info.MinRedis) on every client of p, or lua, which every server runs,
// when there is none: those a pre-flight that must not refuse the plan's
// other cells checks (verify's, whose matrix reports the others as not
// applicable, or finds out as they run).
func (p *Plan) Runnable(version string) []string {
	var runnable []string
	for _, name := range p.Strategies {
		info := p.infos[name]
		if serverinfo.VersionAtLeast(version, info.MinRedis) && !slices.ContainsFunc(p.Clients, func(c string) bool { return !info.Supports(c) }) {
			runnable = append(runnable, name)
		}
	}
	if len(runnable) == 0 {
		runnable = []string{"lua"}
	}
	return runnable
}

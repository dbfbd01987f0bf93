package target

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/acl"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/strategies"
)

// leaveOut asks every master of t whether it can run each strategy that
// "all" brought in (Checks.Optional), and leaves out of t's cells those it
// cannot (t.LeftOut), so that --strategy all means every strategy this
// target supports. It returns cfg with the strategies t runs, for the
// pre-flight's other checks; a strategy named on the command line is not
// left out: those checks refuse it, naming what it needs.
func (t *Target) leaveOut(ctx context.Context, cfg Checks, nodes []*redis.Client) (Checks, error) {
	if len(cfg.Optional) == 0 {
		return cfg, nil
	}
	key := keyspace.PreflightKey(cfg.Prefix)
	probe, err := t.NodeFor(ctx, key, nodes)
	if err != nil {
		return cfg, usage(t.field(), fmt.Errorf("%s: %w", t.Spec.Label, err))
	}
	t.LeftOut = map[string][]string{}
	for _, s := range cfg.Optional {
		// The commands on every master; the options once, on the node of
		// the probe key.
		var lacks []string
		for i, n := range append(slices.Clone(nodes), probe) {
			k := ""
			if i == len(nodes) {
				k = key
			}
			l, err := acl.Unsupported(ctx, n, k, s)
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
			t.LeftOut[s] = lacks
		}
	}
	cfg.Strategies = slices.DeleteFunc(slices.Clone(cfg.Strategies), func(s string) bool { return t.LeftOut[s] != nil })
	if len(cfg.Strategies) == 0 {
		return cfg, usage("Strategies", fmt.Errorf("%s: the server runs none of the strategies", t.Spec.Label))
	}
	return cfg, nil
}

// LogHeader writes t's line of the run's header, what it is, then one
// line per Redis version that the strategies t left out need: which ones,
// and what the server lacks, e.g. "rlbench: target redis-server:
// --strategy all leaves out hash-lua: it needs Redis >= 7.4.0 (redis
// 7.0.15 lacks HEXPIRE, HTTL, HPTTL)".
func (t *Target) LogHeader(log io.Writer) {
	fmt.Fprintf(log, "rlbench: target %s: %s\n", t.Spec.Label, t.Describe())
	byVersion := map[string][]string{} // strategies by the version they need
	var versions []string
	for _, s := range slices.Sorted(maps.Keys(t.LeftOut)) {
		v := "?"
		if info, err := strategies.Lookup(s); err == nil && info.MinRedis != "" {
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
			for _, c := range t.LeftOut[s] {
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

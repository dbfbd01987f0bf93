package topology

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/acl"
	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/excerpt"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/serverinfo"
	"github.com/rlbench/rlbench/strategies"
)

// Checks are what a run asks of a target before its first write
// (Target.Preflight).
type Checks struct {
	// Prefix is the run's key prefix; RunID names the run in its claim.
	Prefix, RunID string
	// Strategies are every strategy the cells run, as Registry holds
	// them (nil: the built-in strategies).
	Strategies []string
	Registry   *strategies.Registry
	// LeaveOut, when not nil, is asked once the target is found writable
	// which of Strategies it runs (the plan's second step:
	// plan.Plan.LeaveOut); the checks of commands check those. probeKey
	// is a key under Prefix that does not exist.
	LeaveOut func(ctx context.Context, t *Target, nodes []*redis.Client, probeKey string) ([]string, error)
	// Clients are the clients under test; Workers their workers each.
	Clients []string
	Workers int
	// Faults are the kinds of the faults injected.
	Faults []string
}

// Preflight checks, before anything is written but the run's claim on its
// prefix, that every cell of cfg can run on t: the server's version runs
// every strategy, the go-redis pool fits under maxclients on every master,
// no other run holds the prefix (claimPrefix), the prefix holds no key yet
// but the claim (the audit and the clean-up treat every key under it as
// the run's), and the target takes writes (not a replica, not a read-only
// user).
func (t *Target) Preflight(ctx context.Context, cfg Checks) error {
	nodes, err := t.Nodes(ctx)
	if err != nil {
		return usage(t.field(), fmt.Errorf("%s: %w", t.Spec.Label, err))
	}
	if err := checkConnections(ctx, nodes, cfg); err != nil {
		return err
	}
	// A replica is refused before the claim is written: a read-only one
	// would refuse the claim, and a writable one would take it.
	if err := t.checkMaster(ctx); err != nil {
		return err
	}
	if err := t.claimPrefix(ctx, cfg); err != nil {
		return err
	}
	for _, n := range nodes {
		if key, err := firstKey(ctx, n, cfg.Prefix); err != nil {
			if denied := acl.Denied("scan", err); denied != nil {
				return usage("Targets.Login.Username", fmt.Errorf("%s: %w", t.where(n), denied))
			}
			return usage(t.field(), fmt.Errorf("%s: scan: %w", t.where(n), err))
		} else if key != "" {
			return usage("Workload.Prefix", fmt.Errorf("%s: the prefix %q already holds keys (e.g. %q on %s): rlbench audits and deletes every key under its prefix, so it must start empty; choose another --prefix, or, if they are a killed run's, delete them (and the ACL users and libraries it recorded there) with: rlbench cleanup --prefix '%s' and the same target flags (--dry-run shows them first)", t.Spec.Label, cfg.Prefix, excerpt.Text(key), n.Options().Addr, cfg.Prefix))
		}
	}
	if err := t.checkWritable(ctx, cfg.Prefix); err != nil {
		return err
	}
	if cfg.LeaveOut != nil {
		if cfg.Strategies, err = cfg.LeaveOut(ctx, t, nodes, keyspace.PreflightKey(cfg.Prefix)); err != nil {
			return err
		}
	}
	return t.checkCommands(ctx, cfg, nodes)
}

// checkCommands asks the server, rather than a table of versions, whether
// it knows every command the cells send (COMMAND INFO on every master,
// with UNLINK -> DEL as the one fallback) and every option they need
// (EXPIRE NX, SET EXAT), and whether the run's user may send them all
// (nothing is executed). Each refusal names the commands.
func (t *Target) checkCommands(ctx context.Context, cfg Checks, nodes []*redis.Client) error {
	cmds, err := acl.Commands(acl.Needs{Strategies: cfg.Strategies, Registry: cfg.Registry, Faults: cfg.Faults, Cluster: t.Spec.IsCluster(), Sentinel: t.Spec.IsSentinel(), DB: t.Login.DB})
	if err != nil {
		return usage("Strategies", err)
	}
	for _, n := range nodes {
		if cmds, err = acl.Supported(ctx, n, cmds); err != nil {
			if denied := acl.Denied("command|info", err); denied != nil {
				return usage("Targets.Login.Username", fmt.Errorf("%s: %w", t.where(n), denied))
			}
			return usageUnlessLost("Strategies", fmt.Errorf("%s: %w", t.where(n), err))
		}
	}
	t.unlinkToDel = !slices.ContainsFunc(cmds, func(c acl.Command) bool { return c.Name == "unlink" })
	key := keyspace.PreflightKey(cfg.Prefix)
	node, err := t.NodeFor(ctx, key, nodes)
	if err != nil {
		return usage(t.field(), fmt.Errorf("%s: %w", t.Spec.Label, err))
	}
	if err := acl.SupportedOptions(ctx, node, key, acl.Options(cfg.Strategies)); err != nil {
		return usageUnlessLost("Strategies", fmt.Errorf("%s: %w", t.Spec.Label, err))
	}
	if err := acl.Permitted(ctx, node, key, cmds); err != nil {
		return usageUnlessLost("Targets.Login.Username", fmt.Errorf("%s: %w", t.Spec.Label, err))
	}
	return nil
}

// usageUnlessLost is usage(field, err), bad input, unless err is a
// connection that failed mid-check (acl.ConnectionError): a failure.
func usageUnlessLost(field string, err error) error {
	if _, lost := errors.AsType[*acl.ConnectionError](err); lost {
		return err
	}
	return usage(field, err)
}

// checkWritable writes one key under prefix and deletes it: a replica
// (READONLY) or a user without write access (NOPERM) is refused here, not
// found out through a run in which every decision fails.
func (t *Target) checkWritable(ctx context.Context, prefix string) error {
	key := keyspace.PreflightKey(prefix)
	err := t.Admin.Set(ctx, key, 1, time.Minute).Err()
	if err == nil {
		err = t.Admin.Del(ctx, key).Err()
	}
	if err != nil {
		return t.notWritable("SET "+key, err)
	}
	return nil
}

// checkMaster refuses a target whose node is a replica (INFO replication
// says role:slave), even one that takes writes (replica-read-only no): its
// writes are not the master's, the clients of the master never see them,
// and the next full sync from the master discards them. The load run,
// rlbench cleanup and audit --fix-ttl refuse one so.
func (t *Target) checkMaster(ctx context.Context) error {
	nodes, err := t.Nodes(ctx)
	if err != nil {
		return usage(t.field(), fmt.Errorf("%s: %w", t.Spec.Label, err))
	}
	for _, n := range nodes {
		master, err := ReplicaOf(ctx, n)
		if denied := acl.Denied("info", err); denied != nil {
			return usage("Targets.Login.Username", fmt.Errorf("%s: %w", t.where(n), denied))
		}
		if err != nil {
			return usage(t.field(), fmt.Errorf("%s: %w", t.where(n), err))
		}
		if master != "" {
			return usage(t.field(), fmt.Errorf("%s: %w", t.where(n), ReplicaWrites(master)))
		}
	}
	return nil
}

// ErrReplica is returned, wrapped, for a write that rlbench refuses to
// send to a replica (ReplicaWrites).
var ErrReplica = errors.New("the server is a replica")

// ReplicaOf returns the master (host:port) of node when it is a replica
// (INFO replication: role:slave), and "" when it is not.
func ReplicaOf(ctx context.Context, node *redis.Client) (string, error) {
	text, err := node.Info(ctx, "replication").Result()
	if err != nil {
		return "", fmt.Errorf("info replication: %w", err)
	}
	info := serverinfo.Parse(text)
	if info["role"] != "slave" {
		return "", nil
	}
	return net.JoinHostPort(info["master_host"], info["master_port"]), nil
}

// ReplicaWrites is the error of a write refused on a replica of master.
func ReplicaWrites(master string) error {
	return fmt.Errorf("%w of %s (INFO replication: role:slave): a replica's writes are not the master's, even with replica-read-only no, and the next sync discards them; target the master", ErrReplica, master)
}

// notWritable is the error of a write (what) that t refused under the
// prefix.
func (t *Target) notWritable(what string, err error) error {
	return usage(t.field(), fmt.Errorf("%s: the target does not take writes under the prefix (%s): %w; a replica, or a user without write access, cannot run a load", t.Spec.Label, what, err))
}

// claimPrefix claims the run's prefix on t (takeClaim) before its
// emptiness is checked: of two runs started together on one prefix, which
// would count into each other's counters and delete each other's keys,
// the second is refused, naming the first.
func (t *Target) claimPrefix(ctx context.Context, cfg Checks) error {
	// A live run on a shorter prefix would audit and delete this run's
	// keys as its own. (A run on a longer one is found by the emptiness
	// check.) A user who may not read that claim is not refused.
	for _, anc := range ancestorPrefixes(cfg.Prefix) {
		if holder, err := t.Admin.Get(ctx, keyspace.ClaimKey(anc)).Result(); err == nil && keyspace.ClaimRunID(holder) != cfg.RunID {
			return usage("Workload.Prefix", fmt.Errorf("%s: the prefix %q lies under %q, which a live run claims (%s): that run audits and deletes every key under its prefix, this run's too; choose a prefix outside it",
				t.Spec.Label, cfg.Prefix, anc, excerpt.Text(holder)))
		}
	}
	c, err := takeClaim(ctx, t.Admin, cfg.Prefix, cfg.RunID, t.Server.Managed)
	if errors.Is(err, errClaimed) {
		return usage("Workload.Prefix", fmt.Errorf("%s: the prefix %q is in use: %w (key %s): two runs on one prefix would count into each other's counters and delete each other's keys; wait for it to end, or choose another --prefix (the claim of a run that was killed expires within %s)",
			t.Spec.Label, cfg.Prefix, err, keyspace.ClaimKey(cfg.Prefix), claimTTL))
	}
	if denied := acl.Denied("get", err); denied != nil && strings.HasPrefix(err.Error(), "get ") {
		return usage("Targets.Login.Username", fmt.Errorf("%s: %w", t.Spec.Label, denied))
	}
	if err != nil {
		return t.notWritable("SET "+keyspace.ClaimKey(cfg.Prefix)+" NX", err)
	}
	t.claim = c
	return nil
}

// firstKey returns a key under prefix on node, other than the run's claim
// on it, or "" when there is none. It stops at the first one found.
func firstKey(ctx context.Context, node *redis.Client, prefix string) (string, error) {
	var cursor uint64
	for {
		keys, next, err := node.Scan(ctx, cursor, audit.MatchPattern(prefix), 1000).Result()
		if err != nil {
			return "", err
		}
		for _, key := range keys {
			if key != keyspace.ClaimKey(prefix) {
				return key, nil
			}
		}
		if cursor = next; cursor == 0 {
			return "", nil
		}
	}
}

// checkConnections refuses, before any load, a run whose go-redis pool (one
// connection per worker; rueidis shares a few among all of them) would need
// more connections than the server accepts (maxclients, less those in use),
// instead of letting it end in a storm of connection errors. Each master is
// checked, since the pool is per node. A server that does not answer CONFIG
// GET is not checked.
func checkConnections(ctx context.Context, nodes []*redis.Client, cfg Checks) error {
	if !slices.Contains(cfg.Clients, "go-redis") {
		return nil
	}
	for _, admin := range nodes {
		v, err := admin.ConfigGet(ctx, "maxclients").Result()
		if err != nil {
			continue
		}
		maxClients, err := strconv.Atoi(v["maxclients"])
		if err != nil {
			continue
		}
		inUse := 0
		if info, err := admin.Info(ctx, "clients").Result(); err == nil {
			inUse, _ = strconv.Atoi(serverinfo.Parse(info)["connected_clients"])
		}
		free := maxClients - inUse
		if cfg.Workers <= free {
			continue
		}
		server := "the server"
		if len(nodes) > 1 {
			server = "master " + admin.Options().Addr
		}
		return usage("Workload.Workers", fmt.Errorf("go-redis opens one connection per worker: %d workers need %d connections, but %s accepts %d more (maxclients %d, %d in use); lower --workers, raise the server's maxclients, or use --client rueidis",
			cfg.Workers, cfg.Workers, server, free, maxClients, inUse))
	}
	return nil
}

// ancestorPrefixes returns the shorter prefixes of prefix that end in ':',
// shortest first: "a:" and "a:b:" for "a:b:c:".
func ancestorPrefixes(prefix string) []string {
	var out []string
	for i := 0; i < len(prefix)-1; i++ {
		if prefix[i] == ':' {
			out = append(out, prefix[:i+1])
		}
	}
	return out
}

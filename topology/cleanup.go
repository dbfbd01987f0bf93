package topology

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/excerpt"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/workload"
)

// CleanupConfirmAbove is the most keys Cleanup deletes without
// CleanupOptions.Yes.
const CleanupConfirmAbove = 1000

// CleanupSample is how many key names a CleanupReport names, and how
// many of those that do not look like a run's.
const CleanupSample = 10

// cleanupCountTimeout bounds the count of the keys left after an
// interrupted Cleanup.
const cleanupCountTimeout = 10 * time.Second

// ErrCleanupUnconfirmed is returned, wrapped, when Cleanup without
// CleanupOptions.Yes found more than CleanupConfirmAbove keys under the
// prefix, or keys that do not look like a run's: it deleted nothing, and
// the error names what it found.
var ErrCleanupUnconfirmed = errors.New("cleanup needs confirmation")

// ErrCleanupInterrupted is returned, wrapped, when ctx was done before
// Cleanup had deleted every key: the error says how many it deleted and
// how many are left.
var ErrCleanupInterrupted = errors.New("cleanup interrupted")

// CleanupOptions say how far Cleanup goes. The zero value counts the keys
// first and deletes them only when they are few and all look like a run's.
type CleanupOptions struct {
	// DryRun counts the keys under the prefix and names a sample of them;
	// nothing is deleted.
	DryRun bool
	// Yes deletes without counting first: more than CleanupConfirmAbove
	// keys, or keys that do not look like a run's.
	Yes bool
	// Abort, once done, stops the count of the keys left after ctx is
	// done (a second interrupt); nil means the count runs, for at most
	// 10 s.
	Abort context.Context
}

// CleanupReport is what Cleanup found and did.
type CleanupReport struct {
	// Prefix is the prefix of the keys.
	Prefix string
	// Counted is set when the keys were counted before any deletion
	// (DryRun, or no Yes); Found, Sample, Foreign and ForeignSample are
	// then filled. SCAN may count a key twice while a server resizes its
	// keyspace.
	Counted bool
	// Found is the keys under the prefix, on every master of every target.
	Found int64
	// Sample names up to CleanupSample of them.
	Sample []string
	// Foreign is the keys found that do not look like a run's (see
	// keyspace.RunKeyShape); ForeignSample names up to CleanupSample of them.
	Foreign       int64
	ForeignSample []string
	// Deleted is the keys deleted.
	Deleted int64
	// Left is the keys under the prefix after an interrupted Cleanup, -1
	// when they could not be counted (or Cleanup was not interrupted).
	Left int64
	// Objects are the server objects other than keys (temporary ACL
	// users, libraries of Redis Functions) that a killed run recorded
	// under the prefix and left (objects.go): deleted before the keys,
	// each one that is the run's; found only, with DryRun.
	Objects []LeftObject
}

// runKeys are the shapes of the keys a run of rlbench's clients leaves
// under its prefix (keyspace.RunKeys).
var runKeys = keyspace.NewRunKeys(clients.Names)

// looksLikeRunKey reports whether key, under prefix, has the shape of a
// run's key.
func looksLikeRunKey(prefix, key string) bool { return runKeys.Contains(prefix, key) }

// Cleanup deletes every key under prefix on every master of every
// existing target of specs (each logged in with its own Login), with no
// load and no audit: the keys of a run that was killed before it could delete them (with SIGKILL, or a
// second interrupt). The prefix must be given; private targets hold
// nothing to clean. Unless opts.Yes, it counts the keys first, and deletes
// nothing (ErrCleanupUnconfirmed) when there are more than
// CleanupConfirmAbove or when some do not look like a run's. On an
// interrupt (ctx done) it counts the keys left and returns
// ErrCleanupInterrupted.
func Cleanup(ctx context.Context, specs []Spec, prefix string, opts CleanupOptions) (CleanupReport, error) {
	rep := CleanupReport{Prefix: prefix, Left: -1}
	if prefix == "" {
		return rep, usage("Workload.Prefix", fmt.Errorf("%w: give the prefix of the keys to delete", workload.ErrEmptyPrefix))
	}
	targets, err := openCleanupTargets(ctx, specs)
	defer func() {
		for _, t := range targets {
			t.Close()
		}
	}()
	if err != nil && ctx.Err() != nil {
		return rep, fmt.Errorf("%w (%v) before it deleted any key under %q", ErrCleanupInterrupted, context.Cause(ctx), rep.Prefix)
	}
	if err != nil {
		return rep, err
	}
	for _, t := range targets {
		if err := t.checkMaster(ctx); err != nil {
			return rep, err
		}
		if err := t.refuseLiveClaim(ctx, prefix); err != nil {
			return rep, err
		}
	}
	objects := make([][]LeftObject, len(targets))
	for i, t := range targets {
		if objects[i], err = t.findObjects(ctx, prefix); err != nil {
			return rep, rep.stopped(ctx, opts, targets, err)
		}
		rep.Objects = append(rep.Objects, objects[i]...)
	}
	if opts.DryRun || !opts.Yes {
		if err := rep.count(ctx, targets); err != nil {
			return rep, rep.stopped(ctx, opts, targets, err)
		}
		if opts.DryRun {
			return rep, nil
		}
		if err := rep.confirm(); err != nil {
			return rep, err
		}
	}
	// The objects go first: their records are among the keys.
	rep.Objects = rep.Objects[:0]
	var objErrs []error
	for i, t := range targets {
		objErrs = append(objErrs, t.cleanObjects(ctx, objects[i]))
		rep.Objects = append(rep.Objects, objects[i]...)
	}
	if err := errors.Join(objErrs...); err != nil {
		return rep, rep.stopped(ctx, opts, targets, fmt.Errorf("%w: no key deleted (the records of the objects are among them); run the same command again", err))
	}
	for _, t := range targets {
		r, err := t.ScanKeys(ctx, prefix, 0, true, false)
		rep.Deleted += r.Deleted
		if err != nil {
			return rep, rep.stopped(ctx, opts, targets, fmt.Errorf("%s: %w", t.Spec.Label, err))
		}
	}
	return rep, nil
}

// refuseLiveClaim refuses, whatever CleanupOptions say, to clean a prefix
// that a live run claims (claim.go): its keys are that run's counters, in
// the middle of its measurement. The claim may be on the prefix itself, on
// a shorter one (a run on "a:" holds "a:b:"'s keys too), or on a longer
// one (a run on "a:b:" has its keys under "a:"): every claim on the
// masters under the prefix (SCAN MATCH, audit.FindClaims), and a GET of
// each shorter prefix's, each told by its value (keyspace.IsClaimValue). A
// user who may not GET a shorter prefix's claim is not refused for it.
func (t *Target) refuseLiveClaim(ctx context.Context, prefix string) error {
	for i := 1; i < len(prefix); i++ {
		holder, err := t.Admin.Get(ctx, keyspace.ClaimKey(prefix[:i])).Result()
		if err == nil && keyspace.IsClaimValue(holder) {
			return usage("Workload.Prefix", fmt.Errorf("%s: the prefix %q lies under %q, which a live run claims (%s, key %s): its keys are that run's; cleanup is for the keys of a run that was killed; wait for it to end (a killed run's claim expires within %s)",
				t.Spec.Label, prefix, prefix[:i], excerpt.Text(holder), keyspace.ClaimKey(prefix[:i]), claimTTL))
		}
	}
	masters, err := t.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", t.Spec.Label, err)
	}
	nodes := make([]audit.Node, len(masters))
	for i, m := range masters {
		nodes[i] = m
	}
	claims, err := audit.FindClaims(ctx, nodes, prefix, nil)
	if err != nil {
		return fmt.Errorf("%s: the live runs' claims under the prefix: %w", t.Spec.Label, err)
	}
	if len(claims) == 0 {
		return nil
	}
	c := claims[0]
	where := fmt.Sprintf("the prefix %q is claimed by a live run", prefix)
	if c.Key != keyspace.ClaimKey(prefix) {
		where = fmt.Sprintf("%d live run(s) claim a prefix under %q, such as %q", len(claims), prefix, c.Prefix())
	}
	return usage("Workload.Prefix", fmt.Errorf("%s: %s (%s, key %s): cleanup is for the keys of a run that was killed; wait for it to end (a killed run's claim expires within %s)",
		t.Spec.Label, where, excerpt.Text(c.Value), excerpt.Text(c.Key), claimTTL))
}

// openCleanupTargets opens every target of specs; on error, the targets
// opened so far are returned too, for the caller to close.
func openCleanupTargets(ctx context.Context, specs []Spec) ([]*Target, error) {
	var targets []*Target
	for _, spec := range specs {
		if spec.Private() {
			return targets, usage("Targets.Addr", fmt.Errorf("%s: a private server holds nothing to clean: give the target of the run (--addr or --cluster)", spec.Label))
		}
		t, err := Open(ctx, spec)
		if err != nil {
			return targets, err
		}
		targets = append(targets, t)
	}
	return targets, nil
}

// count counts the keys under the prefix on every master of targets, and
// samples them.
func (r *CleanupReport) count(ctx context.Context, targets []*Target) error {
	r.Counted = true
	return eachKey(ctx, targets, r.Prefix, func(key string) {
		r.Found++
		if len(r.Sample) < CleanupSample {
			r.Sample = append(r.Sample, key)
		}
		if !looksLikeRunKey(r.Prefix, key) {
			r.Foreign++
			if len(r.ForeignSample) < CleanupSample {
				r.ForeignSample = append(r.ForeignSample, key)
			}
		}
	})
}

// confirm returns ErrCleanupUnconfirmed, naming what count found, when
// there are too many keys or some that do not look like a run's.
func (r *CleanupReport) confirm() error {
	var why []string
	if r.Found > CleanupConfirmAbove {
		why = append(why, fmt.Sprintf("more than %d", CleanupConfirmAbove))
	}
	if r.Foreign > 0 {
		why = append(why, fmt.Sprintf("%d of which do not look like rlbench's (%s), such as %s", r.Foreign, keyspace.RunKeyShape, quoteKeys(r.ForeignSample, 3)))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w: found %d keys under %q: %s; nothing deleted", ErrCleanupUnconfirmed, r.Found, r.Prefix, strings.Join(why, ", "))
}

// stopped returns err, or, when ctx is done, ErrCleanupInterrupted with
// what was deleted and the keys left, counted under opts.Abort.
func (r *CleanupReport) stopped(ctx context.Context, opts CleanupOptions, targets []*Target, err error) error {
	if ctx.Err() == nil {
		return err
	}
	after, cancel := AbortContext(ctx, opts.Abort)
	defer cancel()
	after, cancelCount := context.WithTimeout(after, cleanupCountTimeout)
	defer cancelCount()
	var left int64
	leftText := "the keys left under it not counted"
	if cerr := eachKey(after, targets, r.Prefix, func(string) { left++ }); cerr == nil {
		r.Left = left
		leftText = fmt.Sprintf("%d keys left under it", left)
	} else {
		leftText += " (" + cerr.Error() + ")"
	}
	return fmt.Errorf("%w (%v): deleted %d keys under %q, %s: run the same command again to delete them", ErrCleanupInterrupted, context.Cause(ctx), r.Deleted, r.Prefix, leftText)
}

// eachKey calls f with each key under prefix on every master of targets:
// SCAN MATCH, and each key checked with strings.HasPrefix, as the audit
// does.
func eachKey(ctx context.Context, targets []*Target, prefix string, f func(key string)) error {
	match := audit.MatchPattern(prefix)
	for _, t := range targets {
		nodes, err := t.Nodes(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", t.Spec.Label, err)
		}
		for _, n := range nodes {
			if err := scanNode(ctx, n, match, prefix, f); err != nil {
				return fmt.Errorf("%s: scan %s: %w", t.Spec.Label, n.Options().Addr, err)
			}
		}
	}
	return nil
}

// scanNode calls f with each key of n under prefix.
func scanNode(ctx context.Context, n *redis.Client, match, prefix string, f func(key string)) error {
	var cursor uint64
	for {
		keys, next, err := n.Scan(ctx, cursor, match, audit.DefaultCount).Result()
		if err != nil {
			return err
		}
		for _, key := range keys {
			if strings.HasPrefix(key, prefix) {
				f(key)
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// quoteKeys quotes the first n of keys, with "..." when there are more.
func quoteKeys(keys []string, n int) string {
	quoted := make([]string, 0, n+1)
	for i, k := range keys {
		if i == n {
			quoted = append(quoted, "...")
			break
		}
		quoted = append(quoted, fmt.Sprintf("%q", k))
	}
	return strings.Join(quoted, ", ")
}

// AbortContext is the context of what a run still does after ctx is done:
// not cancelled with ctx, but once abort (when not nil) is done.
func AbortContext(ctx, abort context.Context) (context.Context, context.CancelFunc) {
	after, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if abort != nil {
		stop := context.AfterFunc(abort, cancel)
		return after, func() { stop(); cancel() }
	}
	return after, cancel
}

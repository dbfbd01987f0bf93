package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/keyspace"
)

// Node is what Scan needs of one server: a *redis.Client fits, as does any
// redis.Cmdable. On a cluster, pass one client per master: SCAN walks one
// node's keyspace only, and a replica would count its master's keys again.
type Node interface {
	Scan(ctx context.Context, cursor uint64, match string, count int64) *redis.ScanCmd
	ScanType(ctx context.Context, cursor uint64, match string, count int64, keyType string) *redis.ScanCmd
	DBSize(ctx context.Context) *redis.IntCmd
	Pipeline() redis.Pipeliner
}

var _ Node = (*redis.Client)(nil)

// Scan audits nodes one after the other, in order: it SCANs each node's
// keyspace, reads every examined key's PTTL in one pipeline per SCAN batch,
// and counts. It keeps nothing per key (unless Options.Dedup), so its memory
// does not grow with the keyspace. A load run's claim on its prefix (a key
// named like one, keyspace.IsClaimKey, whose value is one,
// keyspace.IsClaimValue) is left out: not counted, fixed or deleted.
//
// By default it sends only read commands: INFO server and replication
// (before each node's first SCAN, in each batch's pipeline and after the
// last: Server), DBSIZE, SCAN and PTTL, with TYPE
// (Options.Types, Options.Sample, Options.Fields, Options.FixTTL), GETRANGE (Options.Limit,
// Options.Sample, and a key named like a run's claim, to tell one), OBJECT IDLETIME and REFCOUNT (Options.Sample), HSCAN and HPTTL
// (Options.Fields), and MEMORY USAGE (Options.StaleMemory). It writes only with Options.FixTTL
// (EVAL of a script of TYPE, PTTL and EXPIRE) or Options.Unlink (UNLINK).
//
// A node whose server restarted or failed over during its audit (its
// run_id or role changed) is incomplete, with an error wrapping
// ErrServerChanged.
//
// A read whose reply is lost on the way (a stall longer than the
// connection's read timeout, a broken connection) is sent again, for up to
// 30 s; a write is not: the keys it was for are read again, and written
// again only where the read says that it did not take effect, so that its
// figures stay exact. Give Scan connections that do not retry (package
// connection's Admin): one that does runs a write twice.
//
// Bad options are refused before any command, with an error wrapping one of
// the Err values of this package. On a failure or a cancelled ctx, Scan
// returns what it counted so far, with Complete false, and the error, which
// names the node and the command.
func Scan(ctx context.Context, nodes []Node, opts Options) (Report, error) {
	rep, err := scan(ctx, nodes, opts, len(nodes) > 1)
	if len(nodes) < 2 {
		rep.PerNode = nil
	}
	if err != nil {
		return rep, fmt.Errorf("audit: %w", err)
	}
	return rep, nil
}

// scan is Scan with PerNode always filled, errors unprefixed, and each
// error naming its node when nameNodes is set.
func scan(ctx context.Context, nodes []Node, opts Options, nameNodes bool) (Report, error) {
	rep := Report{Tool: ReportTool, Started: time.Now().UTC(), ImmortalSample: []Sample{}, LockedOutSample: []Sample{}}
	o, err := opts.validate()
	if err != nil {
		return rep, err
	}
	if len(nodes) == 0 {
		return rep, ErrNoNodes
	}
	rep.Match, rep.Type = o.match(), o.Type
	if rep.Match == "" {
		rep.Match = "*" // every key: SCAN without MATCH
	}
	rep.Settings = Settings{Count: o.Count, Rate: o.Rate, MaxTTLS: o.MaxTTL.Seconds(), Limit: o.Limit,
		Sample: o.Sample, FixTTLS: int64(o.FixTTL / time.Second), DryRun: o.DryRun, Fields: o.Fields,
		WindowStamp: o.WindowStamp, WindowS: int64(o.Window / time.Second), StaleMemory: o.StaleMemory}
	if o.WindowStamp != "" {
		rep.StaleFindings = &StaleFindings{}
	}
	a := newAuditor(o, len(nodes))
	if err := a.findLive(ctx, nodes, &rep); err != nil {
		return rep, err
	}
	sizes := a.dbSizes(ctx, nodes)
	// A node that fails (a master down, a refused command) leaves the
	// others to audit: its report says it is incomplete, and so does the
	// audit's. An interrupt stops the audit.
	var errs []error
	for i, n := range nodes {
		nr := NodeReport{Addr: addrOf(n), DBSize: sizes[i]}
		if o.WindowStamp != "" {
			nr.StaleFindings = &StaleFindings{}
		}
		a.progress.Node, a.progress.Addr = i, nr.Addr
		srv, err := readServer(ctx, n)
		rep.Servers = append(rep.Servers, srv)
		if err == nil {
			err = a.node(ctx, n, srv, &nr)
		}
		nr.Complete = err == nil
		if nr.StaleFindings != nil {
			nr.StaleFindings.estimate()
		}
		rep.Findings.add(nr.Findings)
		rep.PerNode = append(rep.PerNode, nr)
		if err != nil {
			if nameNodes {
				err = fmt.Errorf("node %s: %w", nr.Addr, err)
			}
			errs = append(errs, err)
			if ctx.Err() != nil {
				for j := i + 1; j < len(nodes); j++ { // not reached
					rep.PerNode = append(rep.PerNode, NodeReport{Addr: addrOf(nodes[j]), DBSize: sizes[j]})
				}
				break
			}
		}
	}
	err = errors.Join(errs...)
	if err == nil {
		// The cap holds over the whole audit, its last batch included. Every
		// key has been examined: an interrupt here leaves it complete.
		_ = a.pace.finish(ctx)
	}
	rep.Complete = err == nil
	if err != nil {
		rep.Error = strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	rep.ElapsedS = time.Since(a.start).Seconds()
	if rep.ElapsedS > 0 {
		rep.KeysPerS = float64(rep.Keys) / rep.ElapsedS
	}
	rep.Cost = a.cost()
	rep.ImmortalSample = append(rep.ImmortalSample, a.immortalSample...)
	rep.LockedOutSample = append(rep.LockedOutSample, a.lockedOutSample...)
	return rep, err
}

// dbSizes reads each node's DBSIZE for NodeReport.DBSize and the progress
// line's ETA, -1 where unread; a node that will not say is left out of the
// ETA. Without Sizes or Progress it sends nothing.
func (a *auditor) dbSizes(ctx context.Context, nodes []Node) []int64 {
	sizes := make([]int64, len(nodes))
	for i, n := range nodes {
		sizes[i] = -1
		if !a.o.Sizes && a.o.Progress == nil {
			continue
		}
		if size, err := n.DBSize(ctx).Result(); err == nil {
			sizes[i] = size
			a.progress.DBSize += size
		}
	}
	return sizes
}

// addrOf is the address of n's server, "" if its client does not say.
func addrOf(n Node) string {
	if c, ok := n.(interface{ Options() *redis.Options }); ok {
		return c.Options().Addr
	}
	return ""
}

// auditor holds what one Scan carries from batch to batch: settings, pace,
// latency, samples and progress. Nothing in it grows with the keyspace but
// the optional dedup set.
type auditor struct {
	o        Options
	match    string
	start    time.Time
	pace     pacer
	lat      [3]latencyHist // scan, pipeline, detail
	seen     *keySet
	progress Progress
	// server is the node being audited, as its first INFO said.
	server Server
	// live are the live runs' claims that a fix leaves out (Report.Claims).
	live []Claim

	immortalSample, lockedOutSample []Sample
	// keys, claims, immortal, present and hashes are reused from batch
	// to batch.
	keys     []string
	claims   []string
	immortal []immortalKey
	present  []string
	hashes   []hashKey
	// memorySampled is how many stale keys' MEMORY USAGE was asked.
	memorySampled int
}

// immortalKey is a key of a batch that had no TTL.
type immortalKey struct {
	key string
	// typ is the type the audit read with its PTTL (Options.Type when set,
	// "" when not read): the type a fix requires (fixScript).
	typ string
	// stale is set when its name holds a window that has ended, and
	// unstamped when it holds none (Options.WindowStamp).
	stale, unstamped bool
}

func newAuditor(o Options, nodes int) *auditor {
	a := &auditor{o: o, match: o.match(), start: time.Now()}
	a.pace = pacer{rate: o.Rate}
	for i := range a.lat {
		a.lat[i] = newLatencyHist()
	}
	if o.Dedup {
		a.seen = newKeySet()
	}
	a.progress.Nodes = nodes
	a.progress.Count = o.Count
	return a
}

// node scans one node to the end, counting into nr. The next SCAN is sent
// while the current batch's pipeline is in flight, on a second connection:
// the server answers them one after the other, but neither waits for the
// other's round trip. Each batch's pipeline reads the node's identity
// again after its PTTLs, and so after the page's SCAN, and a last read
// follows the last batch: every reply came from srv, the server the audit
// began with, or the audit of the node fails with ErrServerChanged.
func (a *auditor) node(ctx context.Context, n Node, srv Server, nr *NodeReport) (err error) {
	a.server = srv
	res := scanPage(ctx, n, a.match, a.o.Type, a.o.Count, 0)
	var ahead chan scanResult
	defer func() {
		if ahead != nil {
			<-ahead // no SCAN outlives the audit
		}
	}()
	for {
		a.lat[0].record(res.took)
		if res.err != nil {
			return res.err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		ahead = nil
		if res.next != 0 {
			ahead = make(chan scanResult, 1)
			go func(cursor uint64) { ahead <- scanPage(ctx, n, a.match, a.o.Type, a.o.Count, cursor) }(res.next)
		}
		// A page is charged the keys SCAN walked for it: COUNT, or what
		// it returned when more. A pattern that matches few keys still
		// walks the keyspace at the rate, not at the server's full speed.
		if err := a.pace.wait(ctx, max(int(a.o.Count), len(res.keys))); err != nil {
			return err
		}
		a.examine(nr, res.keys)
		if err := a.leaveOutClaims(ctx, n, nr); err != nil {
			return err
		}
		if keys := a.keys; len(keys) > 0 {
			if err := a.batch(ctx, n, nr, keys); err != nil {
				return err
			}
		}
		a.progress.Scans++
		a.report()
		if ahead == nil {
			return sameServer(ctx, n, srv)
		}
		res, ahead = <-ahead, nil
	}
}

// scanResult is one SCAN's reply and how long it took.
type scanResult struct {
	keys []string
	next uint64
	took time.Duration
	err  error
}

// scanPage sends one SCAN (SCAN ... TYPE when typ is set), again while
// its reply is lost on the way.
func scanPage(ctx context.Context, n Node, match, typ string, count int64, cursor uint64) scanResult {
	began := time.Now()
	var keys []string
	var next uint64
	var err error
	for s := (stall{}); ; {
		var cmd *redis.ScanCmd
		if typ != "" {
			cmd = n.ScanType(ctx, cursor, match, count, typ)
		} else {
			cmd = n.Scan(ctx, cursor, match, count)
		}
		if keys, next, err = cmd.Result(); !s.again(ctx, err) {
			break
		}
	}
	r := scanResult{keys: keys, next: next, took: time.Since(began)}
	switch {
	case err != nil && typ != "" && strings.Contains(err.Error(), "syntax"):
		r.err = fmt.Errorf("scan: %w (SCAN ... TYPE needs Redis >= 6.0)", err)
	case err != nil:
		r.err = fmt.Errorf("scan: %w", err)
	}
	return r
}

// examine collects in a.keys the keys of a SCAN page to examine: under
// the prefix, and not seen before when deduplicating; it counts the
// matched keys. Those named like a run's claim (keyspace.IsClaimKey) go to
// a.claims instead, for leaveOutClaims to read.
func (a *auditor) examine(nr *NodeReport, keys []string) {
	a.keys, a.claims = a.keys[:0], a.claims[:0]
	for _, key := range keys {
		switch {
		case a.o.Prefix != "" && !strings.HasPrefix(key, a.o.Prefix):
		case keyspace.IsClaimKey(key):
			a.claims = append(a.claims, key)
		default:
			a.take(nr, key)
		}
	}
}

// take counts key as matched and adds it to a.keys, unless it was seen
// before.
func (a *auditor) take(nr *NodeReport, key string) {
	nr.Matched++
	if a.seen != nil && !a.seen.add(key) {
		return
	}
	a.keys = append(a.keys, key)
}

// batch reads the PTTL of keys (with TYPE where asked) in one pipeline,
// counts them, reads the fields of the hashes among them (Options.Fields),
// deletes them (Options.Unlink), then looks closer at the immortal ones.
// The reads and the deletes go in pipelines of their own: a read whose
// reply was lost is sent again, a delete never is (see write).
func (a *auditor) batch(ctx context.Context, n Node, nr *NodeReport, keys []string) error {
	ttls := make([]*redis.DurationCmd, len(keys))
	var types []*redis.StatusCmd
	if a.o.Types || a.o.Fields || a.fixing() && a.o.Type == "" {
		types = make([]*redis.StatusCmd, len(keys))
	}
	// The server's identity is read in the same pipeline, after the
	// PTTLs: a restart or failover in the middle of the audit shows.
	var server serverReads
	cmds, err := a.read(ctx, n, &a.lat[1], func(pipe redis.Pipeliner) {
		for i, key := range keys {
			ttls[i] = pipe.PTTL(ctx, key)
			if types != nil {
				types[i] = pipe.Type(ctx, key)
			}
		}
		server = queueServer(ctx, pipe)
	})
	if err != nil {
		return pipelineError(cmds, err)
	}
	if err := server.check(a.server); err != nil {
		return err
	}
	a.count(nr, keys, ttls, types)
	if a.o.Fields {
		if err := a.fieldPass(ctx, n, nr, a.hashes); err != nil {
			return err
		}
	}
	if a.o.WindowStamp != "" {
		if err := a.stamped(ctx, n, nr); err != nil {
			return err
		}
	}
	if a.o.Unlink {
		if err := a.unlink(ctx, n, nr, keys, ttls); err != nil {
			return err
		}
	}
	f := &nr.Findings
	if a.o.DryRun {
		for _, k := range a.immortal {
			switch {
			case a.underClaim(k.key):
				f.FixLeftOut++
			case keyspace.IsObjectKey(k.key):
				f.FixRecords++
			default:
				f.WouldFix++
			}
		}
	}
	if len(a.immortal) == 0 || !a.detailed() {
		return nil
	}
	return a.detail(ctx, n, nr, a.immortal)
}

// count counts a batch's PTTL (and TYPE) replies into nr, and collects
// its immortal keys and, for the field audit, its hashes.
func (a *auditor) count(nr *NodeReport, keys []string, ttls []*redis.DurationCmd, types []*redis.StatusCmd) {
	f := &nr.Findings
	a.immortal, a.hashes = a.immortal[:0], a.hashes[:0]
	for i, cmd := range ttls {
		f.Keys++
		a.progress.Keys++
		// go-redis keeps PTTL's -1 and -2 replies as raw Durations.
		ttl := cmd.Val()
		switch {
		case ttl == -1:
			f.Immortal++
			a.progress.Immortal++
			k := immortalKey{key: keys[i], typ: a.o.Type}
			if types != nil && k.typ == "" {
				k.typ = types[i].Val()
			}
			a.immortal = append(a.immortal, k)
		case ttl == -2:
			f.Vanished++
		default:
			f.WithTTL++
			f.TTL.add(ttl)
			if a.o.MaxTTL > 0 && ttl > a.o.MaxTTL {
				f.TTLOverMax++
			}
		}
		if types == nil {
			continue
		}
		if a.o.Types {
			countType(f, types[i].Val(), ttl == -1)
		}
		if a.o.Fields && types[i].Val() == "hash" {
			a.hashes = append(a.hashes, hashKey{key: keys[i], immortal: ttl == -1})
		}
	}
}

// unlink deletes the keys of a batch that its PTTL found (a key gone
// already is not sent), one UNLINK (or DEL) per key: a batch's keys may lie
// in many slots, which one UNLINK may not span on a cluster. It counts
// the keys deleted.
func (a *auditor) unlink(ctx context.Context, n Node, nr *NodeReport, keys []string, ttls []*redis.DurationCmd) error {
	a.present = a.present[:0]
	for i, cmd := range ttls {
		if cmd.Val() != -2 {
			a.present = append(a.present, keys[i])
		}
	}
	took, err := a.write(ctx, n, &a.lat[1], a.present, a.unlinkWrite())
	for _, reply := range took {
		if reply == 1 {
			nr.Deleted++
		}
	}
	return err
}

// cmdName names c in an error: "pttl", or what the fix's one EVAL does.
func cmdName(c redis.Cmder) string {
	if name := strings.ToLower(c.Name()); name != "eval" {
		return name
	}
	return "eval (the fix: TYPE, PTTL, EXPIRE in one script)"
}

// countType counts one key of type typ ("none": it vanished).
func countType(f *Findings, typ string, immortal bool) {
	if f.Types == nil {
		f.Types = map[string]*TypeCount{}
	}
	t := f.Types[typ]
	if t == nil {
		t = &TypeCount{}
		f.Types[typ] = t
	}
	t.Keys++
	if immortal {
		t.Immortal++
	}
}

// pipelineError names the first command of a pipeline that failed, in
// lower case ("pttl: NOPERM ..."), or returns err as is.
func pipelineError(cmds []redis.Cmder, err error) error {
	for _, c := range cmds {
		if cerr := c.Err(); cerr != nil && !errors.Is(cerr, redis.Nil) {
			return fmt.Errorf("%s: %w", cmdName(c), cerr)
		}
	}
	return fmt.Errorf("pipeline: %w", err)
}

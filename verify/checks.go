package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

// The checks' names: the matrix's columns, in order.
const (
	// CheckFirst: the first request is allowed; a fixed-window counter is
	// at 1 with a TTL within a second of the window; any other strategy's
	// keys have a TTL.
	CheckFirst = "first"
	// CheckRepeated: in one window, exactly Limit requests are allowed,
	// then every one is rejected.
	CheckRepeated = "repeated"
	// CheckExpiry: after the window the strategy admits again; a
	// fixed-window counter starts again at 1 with a fresh TTL.
	CheckExpiry = "expiry"
	// CheckNotExtended: fixed windows only: PTTL, read after each request,
	// only ever goes down with time; traffic never extends the window.
	CheckNotExtended = "not-extended"
	// CheckWrongType: a hash, then a list, at the key: every decision
	// errors with a server error reply and the key is left exactly as it
	// was (type, value and TTL), with no other key created.
	CheckWrongType = "wrong-type"
	// CheckConcurrent: Workers workers send 3 requests each to one key at
	// once; exactly Limit are admitted (leaks when more are).
	CheckConcurrent = "concurrent"
	// CheckCrash: the client dies (strategies.ErrCrashed) at the first gap
	// between two commands that a fresh key's requests reach; leaks when
	// that leaves a key with no TTL.
	CheckCrash = "crash"
	// CheckRace: a pause between a read and a write, at the first gap the
	// second request reaches, lasts until the key has expired; leaks when
	// the write then recreates the key with no TTL.
	CheckRace = "race"
	// CheckHealing: fixed windows only: a counter seeded with SET k Limit
	// and no TTL has a TTL after one decision (leaks when it stays immortal).
	CheckHealing = "healing"
	// CheckNoscript: strategies that send EVALSHA, on a private server:
	// after SCRIPT FLUSH decisions stay correct and the client counts its
	// fallbacks to EVAL.
	CheckNoscript = "noscript"
	// CheckRestart: on a private server: the server restarts while a
	// client decides; decisions error during the downtime, then resume and
	// are correct. A strategy that needs preparing (strategies.Preparer)
	// is prepared again when a decision after the restart gets an error reply.
	CheckRestart = "restart"
)

// Check describes one column of the matrix.
type Check struct {
	// Name is the column's name, e.g. "healing".
	Name string
	// ServerWide is true for the checks that act on the whole server
	// (SCRIPT FLUSH, a restart): they run one row at a time, after the
	// others, and only on a private server.
	ServerWide bool
}

// checkDef is a Check and the function that runs it for one row. c is the
// row's connection for per-key checks and nil for server-wide ones, which
// open their own.
type checkDef struct {
	Check
	run func(ctx context.Context, r *row, c *observedConn) Cell
}

var allChecks = []checkDef{
	{Check{Name: CheckFirst}, checkFirst},
	{Check{Name: CheckRepeated}, checkRepeated},
	{Check{Name: CheckExpiry}, checkExpiry},
	{Check{Name: CheckNotExtended}, checkNotExtended},
	{Check{Name: CheckWrongType}, checkWrongType},
	{Check{Name: CheckConcurrent}, checkConcurrent},
	{Check{Name: CheckCrash}, checkCrash},
	{Check{Name: CheckRace}, checkRace},
	{Check{Name: CheckHealing}, checkHealing},
	{Check{Name: CheckNoscript, ServerWide: true}, checkNoscript},
	{Check{Name: CheckRestart, ServerWide: true}, checkRestart},
}

// Checks returns every check, in column order.
func Checks() []Check {
	out := make([]Check, len(allChecks))
	for i, c := range allChecks {
		out[i] = c.Check
	}
	return out
}

func checkNames() []string {
	names := make([]string, len(allChecks))
	for i, c := range allChecks {
		names[i] = c.Name
	}
	return names
}

// Timing of the checks.
const (
	// requestsPerWorker is what each worker of the concurrent check sends.
	requestsPerWorker = 3
	// notExtendedSpacing is the pause between the requests of the
	// not-extended check.
	notExtendedSpacing = 75 * time.Millisecond
	// pttlTolerance absorbs PTTL's millisecond rounding.
	pttlTolerance = 25
	// pollInterval is the pause between two reads of a key being waited on.
	pollInterval = 10 * time.Millisecond
	// expiryGrace is how long past the window the checks wait for a key to
	// expire, or for a window-less strategy to admit again.
	expiryGrace = 2 * time.Second
	// resumeTimeout bounds the wait for decisions to succeed again after a
	// restart.
	resumeTimeout = 10 * time.Second
	// resumeStreak is how many decisions in a row must succeed before the
	// restart check counts the client as back.
	resumeStreak = 8
)

// row is one strategy x client while its checks run.
type row struct {
	cfg      Config
	info     strategies.Info
	client   string
	server   Server
	managed  *redisserver.Server // nil for a server rlbench does not manage
	observer *redis.Client       // independent reads and seeds, through go-redis
	prefix   string              // <Prefix><strategy>:<client>:
	cells    []Cell              // one per allChecks
	scripts  int64               // EvalInts calls seen by the per-key checks
}

// run runs the row's per-key checks, or its server-wide ones.
func (r *row) run(ctx context.Context, serverWide bool) {
	if !redisserver.VersionAtLeast(r.server.RedisVersion, r.info.MinRedis) {
		note := fmt.Sprintf("%s needs Redis >= %s; server is %s %s", r.info.Name, r.info.MinRedis, r.server.Name, r.server.Version)
		r.fill(serverWide, Cell{Outcome: Unsupported, Note: note})
		return
	}
	if !r.info.Supports(r.client) {
		r.fill(serverWide, Cell{Outcome: Unsupported, Note: r.info.Name + " runs on " + r.info.ClientsText() + " only"})
		return
	}
	var conn *observedConn
	if !serverWide {
		var err error
		conn, err = r.connect(ctx)
		if err != nil {
			r.fill(false, failf("%v", err))
			return
		}
		defer func() {
			r.scripts = conn.scripts.Load()
			conn.Close()
		}()
	}
	for i, c := range allChecks {
		if c.ServerWide != serverWide {
			continue
		}
		var cell Cell
		if err := ctx.Err(); err != nil {
			cell = failf("not run: %v", err)
		} else {
			cell = c.run(ctx, r, conn)
		}
		cell.Check = c.Name
		r.cells[i] = cell
	}
}

// fill sets every per-key (or every server-wide) cell to cell.
func (r *row) fill(serverWide bool, cell Cell) {
	for i, c := range allChecks {
		if c.ServerWide == serverWide {
			cell.Check = c.Name
			r.cells[i] = cell
		}
	}
}

// connect opens a client and prepares the strategy if it needs preparing.
func (r *row) connect(ctx context.Context) (*observedConn, error) {
	conn, err := clients.New(r.client, clients.Options{Addr: r.server.Addr, Password: r.cfg.Password, DB: r.cfg.DB, Workers: r.cfg.Workers})
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	c := &observedConn{Conn: conn}
	if err := r.prepare(ctx, c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// prepare calls Prepare when the strategy is a strategies.Preparer.
func (r *row) prepare(ctx context.Context, c strategies.Client) error {
	s, err := r.strategy(r.cfg.Window)
	if err != nil {
		return err
	}
	if p, ok := s.(strategies.Preparer); ok {
		if err := p.Prepare(ctx, c); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
	}
	return nil
}

// strategy builds the row's strategy with the row's limit and window seconds.
func (r *row) strategy(window int64) (strategies.Strategy, error) {
	return strategies.New(r.info.Name, strategies.Config{Limit: r.cfg.Limit, Window: window})
}

// checkPrefix is the prefix of every key of one check of the row.
func (r *row) checkPrefix(check string) string { return r.prefix + check + ":" }

// key names a key of one check: the check's prefix, then name in a hash tag.
func (r *row) key(check, name string) string { return r.checkPrefix(check) + "{" + name + "}" }

// decide makes one decision, bounded in time so that a lost server cannot
// hang a check.
func (r *row) decide(ctx context.Context, s strategies.Strategy, c strategies.Client, key string) (strategies.Decision, error) {
	return r.decideWithin(ctx, s, c, key, time.Duration(r.cfg.Window)*time.Second+expiryGrace+5*time.Second)
}

func (r *row) decideWithin(ctx context.Context, s strategies.Strategy, c strategies.Client, key string, d time.Duration) (strategies.Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return s.Decide(ctx, c, key)
}

// sequence makes limit+extra decisions on key and checks that exactly the
// first limit are allowed. It returns a FAIL cell, or ok.
func (r *row) sequence(ctx context.Context, s strategies.Strategy, c strategies.Client, key string, extra int, when string) (Cell, bool) {
	n := int(r.cfg.Limit) + extra
	for i := 1; i <= n; i++ {
		d, err := r.decide(ctx, s, c, key)
		if err != nil {
			return failf("%srequest %d of %d: %v", when, i, n, err), false
		}
		if want := int64(i) <= r.cfg.Limit; d.Allowed != want {
			return failf("%srequest %d %s (count %d); want exactly %d allowed, then rejected", when, i, allowedWord(d.Allowed), d.Count, r.cfg.Limit), false
		}
	}
	return Cell{}, true
}

// pttl reads key's PTTL in milliseconds: -1 for no TTL, -2 for no key.
func (r *row) pttl(ctx context.Context, key string) (int64, error) {
	n, err := r.observer.Do(ctx, "PTTL", key).Int64()
	if err != nil {
		return 0, fmt.Errorf("pttl %s: %w", key, err)
	}
	return n, nil
}

// value reads key as a string; "(none)" when it does not exist.
func (r *row) value(ctx context.Context, key string) (string, error) {
	v, err := r.observer.Get(ctx, key).Result()
	if err == redis.Nil {
		return "(none)", nil
	}
	if err != nil {
		return "", fmt.Errorf("get %s: %w", key, err)
	}
	return v, nil
}

// describe says what is at key, for a note: a string's value, or its type
// ("a zset"), or "(none)".
func (r *row) describe(ctx context.Context, key string) (string, error) {
	typ, err := r.observer.Type(ctx, key).Result()
	if err != nil {
		return "", fmt.Errorf("type %s: %w", key, err)
	}
	switch typ {
	case "string":
		return r.value(ctx, key)
	case "none":
		return "(none)", nil
	}
	return "a " + typ, nil
}

// pttlText formats a PTTL reply for a note: "1999ms", "-1 (no TTL)" or
// "-2 (no key)".
func pttlText(p int64) string {
	switch p {
	case -1:
		return "-1 (no TTL)"
	case -2:
		return "-2 (no key)"
	}
	return strconv.FormatInt(p, 10) + "ms"
}

// freshCounter checks that the fixed-window counter at key is at 1 with a
// TTL within a second of the window when the decision made at decided set
// it: the time since then is added back to the PTTL read now.
func (r *row) freshCounter(ctx context.Context, key string, decided time.Time, when string) (Cell, bool) {
	v, err := r.value(ctx, key)
	if err != nil {
		return failf("%v", err), false
	}
	if v != "1" {
		return failf("counter is %s %s; want 1", v, when), false
	}
	p, err := r.pttl(ctx, key)
	if err != nil {
		return failf("%v", err), false
	}
	since := time.Since(decided).Milliseconds()
	if w := r.cfg.Window * 1000; p <= 0 || p+since <= w-1000 || p > w {
		return failf("PTTL %s %s, %dms after the decision; want within 1s of the %ds window", pttlText(p), when, since, r.cfg.Window), false
	}
	return Cell{}, true
}

// ttlsSet audits the keys of one check: there must be some, none immortal,
// none with a TTL beyond window seconds.
func (r *row) ttlsSet(ctx context.Context, prefix string, window int64) Cell {
	res, err := audit.Run(ctx, r.observer, prefix, window)
	if err != nil {
		return failf("%v", err)
	}
	switch {
	case res.Keys-res.Vanished == 0:
		return failf("no key under %s after the decisions", prefix)
	case res.Immortal > 0:
		return failf("%d of %d keys have no TTL", res.Immortal, res.Keys)
	case res.TTLOverWindow > 0:
		return failf("%d of %d keys have a TTL beyond the %ds window", res.TTLOverWindow, res.Keys, window)
	}
	return Cell{Outcome: Pass}
}

// waitGone polls key's PTTL until the key is gone, or has no TTL to wait
// for, or timeout passes, and returns the last PTTL read (-2 when gone, -1
// when it has no TTL).
func (r *row) waitGone(ctx context.Context, key string, timeout time.Duration) (int64, error) {
	deadline := time.Now().Add(timeout)
	for {
		p, err := r.pttl(ctx, key)
		if err != nil || p < 0 || time.Now().After(deadline) {
			return p, err
		}
		if err := sleep(ctx, pollInterval); err != nil {
			return p, err
		}
	}
}

// keysUnder lists the keys under prefix.
func (r *row) keysUnder(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	var cursor uint64
	for {
		batch, next, err := r.observer.Scan(ctx, cursor, audit.MatchPattern(prefix), 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", prefix, err)
		}
		for _, k := range batch {
			if strings.HasPrefix(k, prefix) && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		if next == 0 {
			slices.Sort(keys)
			return keys, nil
		}
		cursor = next
	}
}

// allowedFresh sends one request for key, named what in failures, and
// checks that it is allowed and, for a fixed window, that it started a
// fresh counter (freshCounter, with when).
func (r *row) allowedFresh(ctx context.Context, s strategies.Strategy, c *observedConn, key, what, when string) (Cell, bool) {
	decided := time.Now()
	d, err := r.decide(ctx, s, c, key)
	if err != nil {
		return failf("%s: %v", what, err), false
	}
	if !d.Allowed {
		return failf("%s rejected (count %d); want allowed", what, d.Count), false
	}
	if r.info.FixedWindow {
		return r.freshCounter(ctx, key, decided, when)
	}
	return Cell{}, true
}

func checkFirst(ctx context.Context, r *row, c *observedConn) Cell {
	s, err := r.strategy(r.cfg.Window)
	if err != nil {
		return failf("%v", err)
	}
	key := r.key(CheckFirst, "k")
	if cell, ok := r.allowedFresh(ctx, s, c, key, "first request", "after the first request"); !ok {
		return cell
	}
	return r.ttlsSet(ctx, r.checkPrefix(CheckFirst), r.cfg.Window)
}

func checkRepeated(ctx context.Context, r *row, c *observedConn) Cell {
	s, err := r.strategy(longWindow)
	if err != nil {
		return failf("%v", err)
	}
	if cell, ok := r.sequence(ctx, s, c, r.key(CheckRepeated, "k"), 3, ""); !ok {
		return cell
	}
	return r.ttlsSet(ctx, r.checkPrefix(CheckRepeated), longWindow)
}

func checkExpiry(ctx context.Context, r *row, c *observedConn) Cell {
	s, err := r.strategy(r.cfg.Window)
	if err != nil {
		return failf("%v", err)
	}
	key := r.key(CheckExpiry, "k")
	if cell, ok := r.sequence(ctx, s, c, key, 1, "before the window ends: "); !ok {
		return cell
	}
	window := time.Duration(r.cfg.Window) * time.Second
	if r.info.FixedWindow {
		start := time.Now()
		p, err := r.waitGone(ctx, key, window+expiryGrace)
		if err != nil {
			return failf("%v", err)
		}
		if p != -2 {
			return failf("key still there %s after the window's requests (PTTL %s); want it expired", time.Since(start).Round(time.Millisecond), pttlText(p))
		}
	} else if err := sleep(ctx, window+300*time.Millisecond); err != nil {
		return failf("%v", err)
	}
	if cell, ok := r.allowedFresh(ctx, s, c, key, "request after the window", "in the new window"); !ok {
		return cell
	}
	return r.ttlsSet(ctx, r.checkPrefix(CheckExpiry), r.cfg.Window)
}

func checkNotExtended(ctx context.Context, r *row, c *observedConn) Cell {
	if !r.info.FixedWindow {
		return Cell{Outcome: NotApplicable, Note: "not a fixed-window strategy"}
	}
	s, err := r.strategy(r.cfg.Window)
	if err != nil {
		return failf("%v", err)
	}
	key := r.key(CheckNotExtended, "k")
	if _, err := r.decide(ctx, s, c, key); err != nil {
		return failf("first request: %v", err)
	}
	p0, err := r.pttl(ctx, key)
	t0 := time.Now() // no earlier than the server's reading of p0
	if err != nil {
		return failf("%v", err)
	}
	if p0 <= 0 {
		return failf("PTTL %s after the first request; want > 0", pttlText(p0))
	}
	n := int(r.cfg.Limit) + 2
	for i := 2; i <= n; i++ {
		if err := sleep(ctx, notExtendedSpacing); err != nil {
			return failf("%v", err)
		}
		if _, err := r.decide(ctx, s, c, key); err != nil {
			return failf("request %d: %v", i, err)
		}
		sent := time.Now() // no later than the server's reading of p
		p, err := r.pttl(ctx, key)
		if err != nil {
			return failf("%v", err)
		}
		elapsed := sent.Sub(t0).Milliseconds()
		switch bound := p0 - elapsed + pttlTolerance; {
		case p == -1:
			return failf("the key lost its TTL after request %d", i)
		case p == -2:
			return failf("the key expired after request %d, %dms after a PTTL of %dms", i, elapsed, p0)
		case p > bound:
			return failf("PTTL rose to %dms after request %d, %dms after a first reading of %dms; a window that traffic does not extend would be at most %dms", p, i, elapsed, p0, bound)
		}
	}
	return Cell{Outcome: Pass}
}

// keyState is what a wrong-type check compares before and after: the type,
// the serialized value and the TTL.
type keyState struct {
	typ  string
	dump string
	pttl int64
}

func (r *row) keyState(ctx context.Context, key string) (keyState, error) {
	typ, err := r.observer.Type(ctx, key).Result()
	if err != nil {
		return keyState{}, fmt.Errorf("type %s: %w", key, err)
	}
	dump, err := r.observer.Dump(ctx, key).Result()
	if err != nil && err != redis.Nil {
		return keyState{}, fmt.Errorf("dump %s: %w", key, err)
	}
	p, err := r.pttl(ctx, key)
	if err != nil {
		return keyState{}, err
	}
	return keyState{typ: typ, dump: dump, pttl: p}, nil
}

// change describes how after differs from before.
func (before keyState) change(after keyState) string {
	var what []string
	if before.typ != after.typ {
		what = append(what, "type "+before.typ+" -> "+after.typ)
	} else if before.dump != after.dump {
		what = append(what, "value changed")
	}
	if before.pttl != after.pttl {
		what = append(what, "PTTL "+pttlText(before.pttl)+" -> "+pttlText(after.pttl))
	}
	return strings.Join(what, ", ")
}

func checkWrongType(ctx context.Context, r *row, c *observedConn) Cell {
	s, err := r.strategy(r.cfg.Window)
	if err != nil {
		return failf("%v", err)
	}
	seeds := []struct {
		kind string
		seed func(key string) error
	}{
		{"hash", func(key string) error { return r.observer.HSet(ctx, key, "field", "value").Err() }},
		{"list", func(key string) error { return r.observer.RPush(ctx, key, "a", "b").Err() }},
	}
	var seeded []string
	for _, sd := range seeds {
		key := r.key(CheckWrongType, sd.kind)
		if err := sd.seed(key); err != nil {
			return failf("seed a %s: %v", sd.kind, err)
		}
		seeded = append(seeded, key)
		before, err := r.keyState(ctx, key)
		if err != nil {
			return failf("%v", err)
		}
		var kinds []string
		for i := 1; i <= 3; i++ {
			d, err := r.decide(ctx, s, c, key)
			if err == nil {
				return failf("a %s at the key: request %d succeeded (%s, count %d); want an error", sd.kind, i, allowedWord(d.Allowed), d.Count)
			}
			re, ok := errors.AsType[strategies.ReplyError](err)
			if !ok {
				return failf("a %s at the key: request %d failed with %v; want an error reply from the server", sd.kind, i, err)
			}
			if !slices.Contains(kinds, re.Prefix()) {
				kinds = append(kinds, re.Prefix())
			}
		}
		after, err := r.keyState(ctx, key)
		if err != nil {
			return failf("%v", err)
		}
		if after != before {
			return Cell{Outcome: Leaks, Note: fmt.Sprintf("a %s at the key: 3 decisions errored (%s) but the key was changed: %s", sd.kind, strings.Join(kinds, ", "), before.change(after))}
		}
	}
	keys, err := r.keysUnder(ctx, r.checkPrefix(CheckWrongType))
	if err != nil {
		return failf("%v", err)
	}
	if extra := slices.DeleteFunc(keys, func(k string) bool { return slices.Contains(seeded, k) }); len(extra) > 0 {
		return failf("the failed decisions created %s", strings.Join(extra, ", "))
	}
	return Cell{Outcome: Pass}
}

func checkConcurrent(ctx context.Context, r *row, c *observedConn) Cell {
	s, err := r.strategy(longWindow)
	if err != nil {
		return failf("%v", err)
	}
	key := r.key(CheckConcurrent, "k")
	var allowed, failed atomic.Int64
	var firstErr error
	var once sync.Once
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range r.cfg.Workers {
		wg.Go(func() {
			<-start
			for range requestsPerWorker {
				d, err := r.decide(ctx, s, c, key)
				switch {
				case err != nil:
					failed.Add(1)
					once.Do(func() { firstErr = err })
				case d.Allowed:
					allowed.Add(1)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	total := r.cfg.Workers * requestsPerWorker
	if n := failed.Load(); n > 0 {
		return failf("%d of %d decisions errored; first: %v", n, total, firstErr)
	}
	res, err := audit.Run(ctx, r.observer, r.checkPrefix(CheckConcurrent), longWindow)
	if err != nil {
		return failf("%v", err)
	}
	a := allowed.Load()
	what := fmt.Sprintf("admitted %d of limit %d (%d requests from %d workers on one key)", a, r.cfg.Limit, total, r.cfg.Workers)
	if res.Immortal > 0 {
		return Cell{Outcome: Leaks, Note: fmt.Sprintf("%s, and left %d keys with no TTL", what, res.Immortal)}
	}
	switch {
	case a > r.cfg.Limit:
		return Cell{Outcome: Leaks, Note: what}
	case a < r.cfg.Limit:
		return failf("%s; want exactly %d", what, r.cfg.Limit)
	case !r.info.Atomic:
		return Cell{Outcome: Pass, Note: what}
	}
	return Cell{Outcome: Pass}
}

// gapState records what a Gap saw; the strategy calls the Gap in the
// goroutine that called Decide.
type gapState struct {
	step    string // the first gap reached, e.g. "after INCR"; "" if none
	request int    // the request that reached it
}

func checkCrash(ctx context.Context, r *row, c *observedConn) Cell {
	s, err := r.strategy(r.cfg.Window)
	if err != nil {
		return failf("%v", err)
	}
	key := r.key(CheckCrash, "k")
	var g gapState
	gctx := strategies.WithGap(ctx, func(_ context.Context, _, step string) error {
		if g.step != "" {
			return nil
		}
		g.step = step
		return strategies.ErrCrashed
	})
	n := int(r.cfg.Limit) + 1
	for i := 1; i <= n && g.step == ""; i++ {
		_, err := r.decide(gctx, s, c, key)
		if g.step != "" {
			g.request = i
			if !errors.Is(err, strategies.ErrCrashed) {
				return failf("the client died %s on request %d, but the decision returned %v; want the crash", g.step, i, err)
			}
			break
		}
		if err != nil {
			return failf("request %d: %v", i, err)
		}
	}
	res, err := audit.Run(ctx, r.observer, r.checkPrefix(CheckCrash), r.cfg.Window)
	if err != nil {
		return failf("%v", err)
	}
	v, err := r.describe(ctx, key)
	if err != nil {
		return failf("%v", err)
	}
	if res.Immortal > 0 {
		if g.step == "" {
			return Cell{Outcome: Leaks, Note: fmt.Sprintf("no crash, yet %d keys have no TTL", res.Immortal)}
		}
		return Cell{Outcome: Leaks, Note: fmt.Sprintf("client died %s on request %d: key left at %s with no TTL", g.step, g.request, v)}
	}
	switch {
	case g.step == "" && r.info.Atomic:
		return Cell{Outcome: Pass}
	case g.step == "":
		return Cell{Outcome: Pass, Note: fmt.Sprintf("no gap between commands reached in %d requests", n)}
	}
	p, err := r.pttl(ctx, key)
	if err != nil {
		return failf("%v", err)
	}
	return Cell{Outcome: Pass, Note: fmt.Sprintf("client died %s on request %d: key left at %s with PTTL %s, no immortal key", g.step, g.request, v, pttlText(p))}
}

func checkRace(ctx context.Context, r *row, c *observedConn) Cell {
	s, err := r.strategy(r.cfg.Window)
	if err != nil {
		return failf("%v", err)
	}
	key := r.key(CheckRace, "k")
	if _, err := r.decide(ctx, s, c, key); err != nil {
		return failf("first request: %v", err)
	}
	var g gapState
	var paused time.Duration
	var last int64 // the key's PTTL when the pause ended
	var gapErr error
	gctx := strategies.WithGap(ctx, func(dctx context.Context, _, step string) error {
		if g.step != "" {
			return nil
		}
		g.step = step
		start := time.Now()
		// Pause until the key has expired (or until it is clear that it
		// has no TTL to expire with).
		last, gapErr = r.waitGone(dctx, key, time.Duration(r.cfg.Window)*time.Second+expiryGrace)
		paused = time.Since(start)
		return nil
	})
	n := int(r.cfg.Limit)
	for i := 2; i <= n && g.step == ""; i++ {
		_, err := r.decide(gctx, s, c, key)
		if g.step != "" {
			g.request = i
		}
		if err != nil {
			return failf("request %d: %v", i, err)
		}
	}
	if gapErr != nil {
		return failf("pause %s: %v", g.step, gapErr)
	}
	if g.step != "" && last >= 0 {
		return failf("paused %s for %s, but the key did not expire (PTTL %s)", g.step, paused.Round(time.Millisecond), pttlText(last))
	}
	res, err := audit.Run(ctx, r.observer, r.checkPrefix(CheckRace), r.cfg.Window)
	if err != nil {
		return failf("%v", err)
	}
	if res.Immortal > 0 {
		v, err := r.describe(ctx, key)
		if err != nil {
			return failf("%v", err)
		}
		if g.step == "" {
			return Cell{Outcome: Leaks, Note: fmt.Sprintf("no pause, yet %d keys have no TTL", res.Immortal)}
		}
		return Cell{Outcome: Leaks, Note: fmt.Sprintf("key expired while paused %s on request %d (%s); the write recreated it at %s with no TTL",
			g.step, g.request, paused.Round(time.Millisecond), v)}
	}
	switch {
	case g.step == "" && r.info.Atomic:
		return Cell{Outcome: Pass}
	case g.step == "":
		return Cell{Outcome: Pass, Note: fmt.Sprintf("no gap between a read and a write reached in requests 2 to %d", n)}
	}
	return Cell{Outcome: Pass, Note: fmt.Sprintf("key expired while paused %s on request %d: no immortal key", g.step, g.request)}
}

func checkHealing(ctx context.Context, r *row, c *observedConn) Cell {
	if !r.info.FixedWindow {
		return Cell{Outcome: NotApplicable, Note: "not a fixed-window counter: no counter to heal"}
	}
	s, err := r.strategy(r.cfg.Window)
	if err != nil {
		return failf("%v", err)
	}
	key := r.key(CheckHealing, "k")
	if err := r.observer.Set(ctx, key, r.cfg.Limit, 0).Err(); err != nil {
		return failf("seed SET %s %d: %v", key, r.cfg.Limit, err)
	}
	if _, err := r.decide(ctx, s, c, key); err != nil {
		return failf("decision on a counter with no TTL: %v", err)
	}
	v, err := r.value(ctx, key)
	if err != nil {
		return failf("%v", err)
	}
	p, err := r.pttl(ctx, key)
	if err != nil {
		return failf("%v", err)
	}
	switch {
	case p == -1:
		return Cell{Outcome: Leaks, Note: fmt.Sprintf("counter stays immortal (n never 1 again): seeded at %d with no TTL, after one decision %s with no TTL", r.cfg.Limit, v)}
	case p == -2:
		return failf("the counter vanished after one decision")
	case p > r.cfg.Window*1000:
		return failf("PTTL %dms after one decision; want at most the %ds window", p, r.cfg.Window)
	}
	return Cell{Outcome: Pass}
}

func checkNoscript(ctx context.Context, r *row, _ *observedConn) Cell {
	documented := strings.Contains(r.info.Commands, "EVALSHA")
	if !documented && r.scripts == 0 {
		return Cell{Outcome: NotApplicable, Note: "sends no EVALSHA: no script to lose"}
	}
	if r.managed == nil {
		return Cell{Outcome: NotApplicable, Note: "needs the private server: SCRIPT FLUSH empties the whole server's script cache"}
	}
	undocumented := ""
	if !documented {
		undocumented = "sends EVALSHA though its commands do not say so; "
	}
	c, err := r.connect(ctx)
	if err != nil {
		return failf("%v", err)
	}
	defer c.Close()
	s, err := r.strategy(longWindow)
	if err != nil {
		return failf("%v", err)
	}
	if _, err := r.decide(ctx, s, c, r.key(CheckNoscript, "warm")); err != nil {
		return failf("before SCRIPT FLUSH: %v", err)
	}
	before := c.Fallbacks()
	if err := r.observer.ScriptFlush(ctx).Err(); err != nil {
		return failf("script flush: %v", err)
	}
	if cell, ok := r.sequence(ctx, s, c, r.key(CheckNoscript, "k"), 1, "after SCRIPT FLUSH: "); !ok {
		cell.Note = undocumented + cell.Note
		return cell
	}
	fallbacks := c.Fallbacks() - before
	if fallbacks == 0 {
		return failf("%sdecisions after SCRIPT FLUSH are correct, but the client counted no fallback to EVAL", undocumented)
	}
	if cell := r.ttlsSet(ctx, r.checkPrefix(CheckNoscript), longWindow); cell.Outcome != Pass {
		return cell
	}
	return Cell{Outcome: Pass, Note: fmt.Sprintf("%s%d %s to EVAL after SCRIPT FLUSH; decisions correct (%d allowed, then rejected)",
		undocumented, fallbacks, plural(int(fallbacks), "fallback", "fallbacks"), r.cfg.Limit)}
}

func checkRestart(ctx context.Context, r *row, _ *observedConn) Cell {
	if r.managed == nil {
		return Cell{Outcome: NotApplicable, Note: "needs the private server"}
	}
	// A fresh client, prepared again: an earlier row's restart has
	// emptied the server.
	c, err := r.connect(ctx)
	if err != nil {
		return failf("%v", err)
	}
	defer c.Close()
	s, err := r.strategy(longWindow)
	if err != nil {
		return failf("%v", err)
	}
	during := r.key(CheckRestart, "during")
	if _, err := r.decide(ctx, s, c, during); err != nil {
		return failf("before the restart: %v", err)
	}
	loads := c.functionLoads.Load()

	// Decide in a loop while the server restarts.
	restarted := make(chan error, 1)
	start := time.Now()
	go func() { restarted <- r.managed.Restart(ctx) }()
	kinds := map[string]int64{}
	var decisions, errs int64
	var restartErr error
loop:
	for {
		select {
		case restartErr = <-restarted:
			break loop
		default:
		}
		decisions++
		if _, err := r.decideWithin(ctx, s, c, during, time.Second); err != nil {
			errs++
			kinds[results.ErrorKind(err)]++
		}
		if err := sleep(ctx, 2*time.Millisecond); err != nil {
			<-restarted
			return failf("%v", err)
		}
	}
	took := time.Since(start)
	if restartErr != nil {
		return failf("%v", restartErr)
	}

	// Decide until decisions succeed again, resumeStreak in a row: a client
	// with several connections (rueidis pipelines over up to four) finds
	// each dead one on its first use.
	resume := time.Now()
	var after int64
	var reprepared string
	for streak := 0; streak < resumeStreak; {
		_, err := r.decide(ctx, s, c, during)
		if err == nil {
			streak++
			continue
		}
		streak = 0
		after++
		kinds[results.ErrorKind(err)]++
		if _, ok := errors.AsType[strategies.ReplyError](err); ok && reprepared == "" {
			if p, ok := s.(strategies.Preparer); ok {
				reprepared = err.Error()
				if err := p.Prepare(ctx, c); err != nil {
					return failf("prepare again after the restart: %v", err)
				}
				continue
			}
		}
		if time.Since(resume) > resumeTimeout {
			return failf("restarted in %s; no decision succeeded in the %s after it; last error: %v", took.Round(time.Millisecond), resumeTimeout, err)
		}
		if err := sleep(ctx, pollInterval); err != nil {
			return failf("%v", err)
		}
	}
	resumed := time.Since(resume)

	// Correct again, on a fresh key.
	if cell, ok := r.sequence(ctx, s, c, r.key(CheckRestart, "after"), 1, "after the restart: "); !ok {
		return cell
	}
	if cell := r.ttlsSet(ctx, r.key(CheckRestart, "after"), longWindow); cell.Outcome != Pass {
		return cell
	}

	parts := []string{fmt.Sprintf("restarted in %s", took.Round(time.Millisecond)), fmt.Sprintf("%d of %d decisions during it errored", errs, decisions)}
	if after > 0 {
		parts = append(parts, fmt.Sprintf("%d more after it, succeeding again %s after it", after, resumed.Round(time.Millisecond)))
	} else {
		parts = append(parts, fmt.Sprintf("the first %d decisions after it succeeded", resumeStreak))
	}
	if len(kinds) > 0 {
		parts = append(parts, "errors: "+results.FormatErrorKinds(kinds, ", "))
	}
	if reprepared != "" {
		parts = append(parts, fmt.Sprintf("prepared again after %q", firstLine(reprepared)))
	}
	if n := c.functionLoads.Load() - loads; n > 0 && reprepared == "" {
		parts = append(parts, fmt.Sprintf("the strategy reloaded its function library itself (%d FUNCTION LOAD)", n))
	}
	parts = append(parts, fmt.Sprintf("then %d allowed, the next rejected", r.cfg.Limit))
	return Cell{Outcome: Pass, Note: strings.Join(parts, "; ")}
}

// observedConn is the row's client, counting the calls that tell what a
// strategy really sends.
type observedConn struct {
	clients.Conn
	scripts       atomic.Int64 // EvalInts calls
	functionLoads atomic.Int64 // FunctionLoad calls
}

func (c *observedConn) EvalInts(ctx context.Context, s *strategies.Script, keys []string, args strategies.Args) ([]int64, error) {
	c.scripts.Add(1)
	return c.Conn.EvalInts(ctx, s, keys, args)
}

func (c *observedConn) FunctionLoad(ctx context.Context, code string) error {
	c.functionLoads.Add(1)
	return c.Conn.FunctionLoad(ctx, code)
}

func failf(format string, args ...any) Cell {
	return Cell{Outcome: Fail, Note: firstLine(fmt.Sprintf(format, args...))}
}

// firstLine keeps a note to one line.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func allowedWord(allowed bool) string {
	if allowed {
		return "allowed"
	}
	return "rejected"
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

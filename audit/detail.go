package audit

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/keyspace"
)

// valueBytes is how much of a string's value the audit reads: enough for
// any integer counter, and a readable start of anything else.
const valueBytes = 64

// detailed reports whether immortal keys need a second look: their value
// read, a sample described, or a fix sent.
func (a *auditor) detailed() bool {
	return a.o.Limit > 0 || a.fixing() || a.wantImmortalSample()
}

// fixing reports whether the audit gives immortal keys a TTL.
func (a *auditor) fixing() bool { return a.o.FixTTL > 0 && !a.o.DryRun }

func (a *auditor) wantImmortalSample() bool { return len(a.immortalSample) < a.o.Sample }

func (a *auditor) wantLockedOutSample() bool {
	return a.o.Limit > 0 && len(a.lockedOutSample) < a.o.Sample
}

// keyDetail is the second look at one immortal key; nil commands were not
// sent.
type keyDetail struct {
	key string
	// stale and unstamped are immortalKey's: a stale key is never
	// locked out.
	stale, unstamped bool
	// sample is set when the key goes into the immortal sample.
	sample bool
	idle   *redis.DurationCmd
	// refs is OBJECT REFCOUNT, sent with idle: a shared object's idle time
	// is not the key's.
	refs  *redis.IntCmd
	typ   *redis.StatusCmd
	value *redis.StringCmd
	// fix is set when the fix was sent (fixWrite); fixed is its outcome:
	// 1 fixed, 0 left alone (the key had gained a TTL), -1 changed (another
	// type, or gone).
	fix   bool
	fixed int64
	// leftOut is set when the key lies under a live run's claim, and so
	// was not fixed (Findings.FixLeftOut).
	leftOut bool
	// record is set when the key is a run's record of an object
	// (keyspace.ObjectKey), which a fix leaves out (Findings.FixRecords).
	record bool
}

// fixScript gives KEYS[1] a TTL of ARGV[1] seconds only if, at that
// instant, it still has the type the audit read, ARGV[2], and no TTL: one
// script, so nothing can change the key between the checks and the
// EXPIRE. It returns 1 when it set the TTL, 0 when the key had gained one,
// -1 when the key has another type or is gone (TYPE "none").
var fixScript = redis.NewScript(`
if redis.call('TYPE', KEYS[1])['ok'] ~= ARGV[2] then return -1 end
if redis.call('PTTL', KEYS[1]) ~= -1 then return 0 end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
`)

// detail looks closer at the immortal keys of one batch, in up to three
// pipelines: per key OBJECT IDLETIME first (a read of the value would
// reset the idle time), OBJECT REFCOUNT (is the object shared?) and TYPE;
// then GETRANGE of the strings alone (no WRONGTYPE error for the server's
// error counters); then the fix (fixScript), a write, never sent again
// blind (see write). Only what is needed is sent: the samples stop reading
// once they are full.
func (a *auditor) detail(ctx context.Context, n Node, nr *NodeReport, keys []immortalKey) error {
	details := make([]keyDetail, len(keys))
	sampling := 0 // keys queued for the immortal sample
	for i, k := range keys {
		key := k.key
		d := keyDetail{key: key, stale: k.stale, unstamped: k.unstamped}
		d.sample = a.wantImmortalSample() && len(a.immortalSample)+sampling < a.o.Sample
		if d.sample {
			sampling++
		}
		details[i] = d
	}
	if err := a.readDetail(ctx, n, func(pipe redis.Pipeliner) {
		for i := range details {
			d := &details[i]
			if d.sample || a.wantLockedOutSample() {
				d.idle = pipe.ObjectIdleTime(ctx, d.key)
				d.refs = pipe.ObjectRefCount(ctx, d.key)
			}
			if d.sample || a.o.Limit > 0 {
				d.typ = pipe.Type(ctx, d.key)
			}
		}
	}); err != nil {
		return err
	}
	if err := a.readDetail(ctx, n, func(pipe redis.Pipeliner) {
		for i := range details {
			if d := &details[i]; d.typ != nil && d.typ.Val() == "string" {
				d.value = pipe.GetRange(ctx, d.key, 0, valueBytes-1)
			}
		}
	}); err != nil {
		return err
	}
	if a.fixing() {
		// A key under a live run's claim is that run's: left out.
		var fix []immortalKey
		var names []string
		var at []int
		for i, k := range keys {
			if a.underClaim(k.key) {
				details[i].leftOut = true
				continue
			}
			if keyspace.IsObjectKey(k.key) {
				// A killed run's record of an object: with a TTL, it
				// would hide the object from rlbench cleanup.
				details[i].record = true
				continue
			}
			fix, names, at = append(fix, k), append(names, k.key), append(at, i)
		}
		fixed, err := a.write(ctx, n, &a.lat[2], names, a.fixWrite(fix))
		for j, reply := range fixed {
			details[at[j]].fix, details[at[j]].fixed = true, reply
		}
		if err != nil {
			return err
		}
	}
	for _, d := range details {
		a.account(nr, d)
	}
	return nil
}

// readDetail sends one pipeline of reads of the second look, if queue
// queues anything.
func (a *auditor) readDetail(ctx context.Context, n Node, queue func(redis.Pipeliner)) error {
	cmds, err := a.read(ctx, n, &a.lat[2], queue)
	if err != nil {
		return detailError(cmds)
	}
	return nil
}

// changed moves n keys of a batch out of the immortal ones: they had no
// TTL when their PTTL was read, and another type, or none, when the audit
// next read them.
func (a *auditor) changed(nr *NodeReport, n int64) {
	nr.Immortal -= n
	a.progress.Immortal -= n
	nr.Changed += n
}

// account counts one key's second look, and samples it.
func (a *auditor) account(nr *NodeReport, d keyDetail) {
	if d.leftOut {
		nr.FixLeftOut++
	}
	if d.record {
		nr.FixRecords++
	}
	if d.fix {
		switch d.fixed {
		case 1:
			nr.Fixed++
		case 0:
			nr.FixSkipped++
		default:
			a.changed(nr, 1)
			switch {
			case d.stale:
				nr.Stale--
			case d.unstamped:
				nr.Unstamped--
			}
		}
	}
	var value *string
	if d.value != nil && d.value.Err() == nil {
		v := d.value.Val()
		value = &v
	}
	s := Sample{Node: nr.Addr, Key: d.key, KeyB64: b64(d.key), Type: "string", Value: value, IdleS: idleOf(d.idle)}
	if value != nil {
		s.ValueB64 = b64(*value)
	}
	if shared(d.refs, value) {
		s.IdleS, s.IdleShared = nil, true
	}
	if d.sample {
		s.Type = d.typ.Val()
		if s.Type != "string" {
			s.Value, s.ValueB64 = nil, ""
		}
		if s.Type == "hash" && a.o.Fields {
			s.IdleS = nil // the field audit's HSCAN read the hash just before
		}
		a.immortalSample = append(a.immortalSample, s)
	}
	if a.o.Limit > 0 && value != nil && !d.stale {
		if count, err := strconv.ParseInt(*value, 10, 64); err == nil && count >= a.o.Limit {
			nr.LockedOut++
			if a.wantLockedOutSample() {
				s.Type = "string"
				a.lockedOutSample = append(a.lockedOutSample, s)
			}
		}
	}
}

// sharedRefCount is OBJECT REFCOUNT's answer for a shared object
// (OBJ_SHARED_REFCOUNT, INT_MAX).
const sharedRefCount = math.MaxInt32

// sharedIntegers is Redis' OBJ_SHARED_INTEGERS: a string holding an
// integer from 0 to sharedIntegers-1 may be one object shared by every key
// that holds it (unless the maxmemory policy is LRU or LFU).
const sharedIntegers = 10000

// shared reports whether a key's value is an object shared with other
// keys, whose idle time is the object's, not the key's: OBJECT REFCOUNT
// says so; when it was not answered (a user without it), a string holding
// an integer from 0 to 9999 is taken as shared.
func shared(refs *redis.IntCmd, value *string) bool {
	if refs != nil && refs.Err() == nil {
		return refs.Val() == sharedRefCount
	}
	if value == nil {
		return false
	}
	n, err := strconv.Atoi(*value)
	return err == nil && n >= 0 && n < sharedIntegers && strconv.Itoa(n) == *value
}

// b64 is s in standard base64 when s is not valid UTF-8, which JSON
// cannot carry, and "" when it is.
func b64(s string) string {
	if utf8.ValidString(s) {
		return ""
	}
	return base64.StdEncoding.EncodeToString([]byte(s))
}

// idleOf is OBJECT IDLETIME's reply in seconds, nil when it was not sent or
// not answered.
func idleOf(cmd *redis.DurationCmd) *int64 {
	if cmd == nil || cmd.Err() != nil {
		return nil
	}
	s := int64(cmd.Val() / time.Second)
	return &s
}

// detailError returns the first error of the second look that is not about
// one key: WRONGTYPE (a key whose type changed since TYPE), a key gone
// (OBJECT's nil), an LFU policy's refusal of OBJECT IDLETIME and a user
// without OBJECT REFCOUNT (the audit's ACL line before it was added) are
// expected.
func detailError(cmds []redis.Cmder) error {
	for _, c := range cmds {
		err := c.Err()
		if err == nil || errors.Is(err, redis.Nil) || strings.HasPrefix(err.Error(), "WRONGTYPE") ||
			c.Name() == "object" && strings.Contains(err.Error(), "LFU") ||
			c.Name() == "object" && strings.HasPrefix(err.Error(), "NOPERM") && len(c.Args()) > 1 && c.Args()[1] == "refcount" {
			continue
		}
		return fmt.Errorf("%s: %w", cmdName(c), err)
	}
	return nil
}

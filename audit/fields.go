package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// hashKey is a hash of a batch, for the field audit.
type hashKey struct {
	key string
	// immortal is true when the hash itself has no TTL (PTTL -1).
	immortal bool
}

// hashFields is what the field audit found in one hash.
type hashFields struct {
	cursor   uint64
	live     int64 // fields that had not expired
	immortal int64 // fields with no TTL
	done     bool
	// changed is set when the key was no longer a hash (WRONGTYPE), or was
	// gone with no live field seen (gone checks it).
	changed bool
}

// fieldPass reads the fields of hashes and their TTLs, counts them into
// nr, and takes out of the batch's immortal keys the hashes that expire
// field by field, and those that changed (HashesChanged). Each round sends one pipeline of HSCAN ... NOVALUES (the
// next page of each hash not yet walked to its end) and one of HPTTL on the
// fields it returned, so that a big hash costs the server no more per
// command than a SCAN page does.
func (a *auditor) fieldPass(ctx context.Context, n Node, nr *NodeReport, hashes []hashKey) error {
	if len(hashes) == 0 {
		return nil
	}
	found := make([]hashFields, len(hashes))
	for pending := len(hashes); pending > 0; {
		if err := a.fieldRound(ctx, n, nr, hashes, found); err != nil {
			return err
		}
		pending = 0
		for _, h := range found {
			if !h.done {
				pending++
			}
		}
	}
	if err := a.gone(ctx, n, hashes, found); err != nil {
		return err
	}
	f := &nr.FieldFindings
	f.Hashes += int64(len(hashes))
	expiring, changed := map[string]bool{}, map[string]bool{}
	for i, h := range found {
		switch {
		case h.changed:
			f.HashesChanged++
			if hashes[i].immortal {
				changed[hashes[i].key] = true
			}
			continue
		case h.live == 0:
			f.HashesExpired++
		}
		if hashes[i].immortal && h.immortal == 0 {
			expiring[hashes[i].key] = true
		}
	}
	if len(expiring) > 0 {
		nr.Immortal -= int64(len(expiring))
		a.progress.Immortal -= int64(len(expiring))
		f.ExpiringByFields += int64(len(expiring))
	}
	a.changed(nr, int64(len(changed)))
	if len(expiring)+len(changed) > 0 {
		a.immortal = slices.DeleteFunc(a.immortal, func(k immortalKey) bool { return expiring[k.key] || changed[k.key] })
	}
	return nil
}

// gone reads, in one pipeline, the TYPE of each hash in which the field
// audit found no live field: one that is no longer a hash (deleted, or
// replaced) changed during the audit; one still a hash had every field
// expired.
func (a *auditor) gone(ctx context.Context, n Node, hashes []hashKey, found []hashFields) error {
	pipe := n.Pipeline()
	types := make([]*redis.StatusCmd, len(hashes))
	for i, h := range found {
		if h.live == 0 && !h.changed {
			types[i] = pipe.Type(ctx, hashes[i].key)
		}
	}
	if pipe.Len() == 0 {
		return nil
	}
	began := time.Now()
	cmds, err := pipe.Exec(ctx)
	a.lat[1].record(time.Since(began))
	if err != nil {
		return pipelineError(cmds, err)
	}
	for i, t := range types {
		if t != nil && t.Val() != "hash" {
			found[i].changed = true
		}
	}
	return nil
}

// fieldRound reads the next page of fields of every hash not done, and
// their PTTLs.
func (a *auditor) fieldRound(ctx context.Context, n Node, nr *NodeReport, hashes []hashKey, found []hashFields) error {
	scans := make([]*redis.ScanCmd, len(hashes))
	cmds, err := a.read(ctx, n, &a.lat[1], func(pipe redis.Pipeliner) {
		for i, h := range hashes {
			if !found[i].done {
				scans[i] = pipe.HScanNoValues(ctx, h.key, found[i].cursor, "", a.o.Count)
			}
		}
	})
	if err != nil {
		if ferr := fieldError(cmds); ferr != nil {
			return ferr
		}
	}
	ttls := make([]*redis.IntSliceCmd, len(hashes))
	queued := 0
	for i, scan := range scans {
		if scan == nil {
			continue
		}
		fields, next, err := scan.Result()
		found[i].cursor, found[i].done = next, next == 0 || err != nil
		found[i].changed = found[i].changed || wrongType(err)
		if err == nil && len(fields) > 0 {
			queued += len(fields)
		}
	}
	if queued == 0 {
		return nil
	}
	// A field read counts against the rate as a key does: a hash of
	// millions of fields is walked at the rate, not at the server's speed.
	if err := a.pace.wait(ctx, queued); err != nil {
		return err
	}
	cmds, err = a.read(ctx, n, &a.lat[1], func(pipe redis.Pipeliner) {
		for i, scan := range scans {
			if fields, _, err := scanReply(scan); err == nil && len(fields) > 0 {
				ttls[i] = pipe.HPTTL(ctx, hashes[i].key, fields...)
			}
		}
	})
	if err != nil {
		if ferr := fieldError(cmds); ferr != nil {
			return ferr
		}
	}
	for i, cmd := range ttls {
		switch {
		case cmd == nil:
		case wrongType(cmd.Err()):
			found[i].changed, found[i].done = true, true
		case cmd.Err() == nil:
			a.countFields(&nr.FieldFindings, &found[i], cmd.Val())
		}
	}
	return nil
}

// wrongType reports whether err is the server's WRONGTYPE: a key that
// stopped being a hash since its TYPE was read.
func wrongType(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") }

// scanReply is scan's reply; an error for a scan not sent.
func scanReply(scan *redis.ScanCmd) ([]string, uint64, error) {
	if scan == nil {
		return nil, 0, redis.Nil
	}
	return scan.Result()
}

// countFields counts one hash's HPTTL replies, in milliseconds: -1 no TTL,
// -2 gone.
func (a *auditor) countFields(f *FieldFindings, h *hashFields, pttls []int64) {
	for _, p := range pttls {
		f.Fields++
		switch {
		case p == -1:
			f.ImmortalFields++
			h.immortal++
			h.live++
		case p == -2:
			f.FieldsVanished++
		default:
			f.FieldsWithTTL++
			h.live++
			if a.o.MaxTTL > 0 && time.Duration(p)*time.Millisecond > a.o.MaxTTL {
				f.FieldTTLOverMax++
			}
		}
	}
}

// fieldError returns the first error of a field-audit pipeline that is
// not about one key: WRONGTYPE (a key that stopped being a hash since its
// TYPE was read) is counted by the caller as a change; the errors of a
// server without hash-field TTLs are returned with a hint.
func fieldError(cmds []redis.Cmder) error {
	for _, c := range cmds {
		err := c.Err()
		if err == nil || wrongType(err) {
			continue
		}
		if strings.Contains(err.Error(), "unknown command") || strings.Contains(err.Error(), "syntax") {
			return fmt.Errorf("%s: %w (the field audit needs Redis >= 7.4: HSCAN ... NOVALUES, HPTTL)", strings.ToLower(c.Name()), err)
		}
		return pipelineError([]redis.Cmder{c}, err)
	}
	return nil
}

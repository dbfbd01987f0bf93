package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// The connections rlbench gives Scan never retry a command (package
// connection): a pipeline caught in a stalled server's buffer runs when
// the server resumes, so sending it again would run it twice. Scan decides
// instead, per command: a read whose reply was lost on the way is sent
// again; a write (UNLINK, EXPIRE ... NX) is not sent again blind: its key
// is read first, and written again only when the read says that the write
// did not reach it.

// stallLimit bounds how long Scan keeps trying a command whose reply was
// lost on the way (a stall longer than the read timeout, a broken
// connection), from its first failure; then the audit fails.
const stallLimit = 30 * time.Second

// lostReply reports whether err leaves a command's outcome unknown: a
// timeout or a connection broken on the way. An error reply of the server,
// a cancelled context and a refused connection (a server that is down, not
// stalled) are not.
func lostReply(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if _, ok := errors.AsType[redis.Error](err); ok {
		return false
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	_, ok := errors.AsType[net.Error](err)
	return ok
}

// firstLost returns the error of the first of cmds whose reply was lost,
// nil when each was answered.
func firstLost(ctx context.Context, cmds []redis.Cmder) error {
	for _, c := range cmds {
		if err := c.Err(); lostReply(ctx, err) {
			return err
		}
	}
	return nil
}

// refusedForNow reports whether err is an error reply with which a master
// refuses a write it did not run, for now: NOREPLICAS (too few replicas
// acknowledged its stream for min-replicas-to-write, as after a failover
// until a replica has caught up), LOADING, MASTERDOWN. Such a write may be
// sent again as it is.
func refusedForNow(err error) bool {
	re, ok := errors.AsType[redis.Error](err)
	if !ok {
		return false
	}
	msg := re.Error()
	for _, prefix := range []string{"NOREPLICAS", "LOADING", "MASTERDOWN"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// stall is one episode of lost replies.
type stall struct {
	since    time.Time
	attempts int
}

// again reports whether to try once more after err: a lost reply, or a
// write refused for now (refusedForNow), within stallLimit of the first.
// It pauses first (50 ms, doubling up to 1 s).
func (s *stall) again(ctx context.Context, err error) bool {
	if !lostReply(ctx, err) && (ctx.Err() != nil || !refusedForNow(err)) {
		return false
	}
	if s.since.IsZero() {
		s.since = time.Now()
	}
	if time.Since(s.since) > stallLimit {
		return false
	}
	pause := min(50*time.Millisecond<<min(s.attempts, 5), time.Second)
	s.attempts++
	t := time.NewTimer(pause)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// read sends the pipeline that queue fills, filled and sent again while a
// reply is lost on the way: queue must queue reads only. It returns the
// commands and Exec's error; lat records each attempt.
func (a *auditor) read(ctx context.Context, n Node, lat *latencyHist, queue func(redis.Pipeliner)) ([]redis.Cmder, error) {
	var s stall
	for {
		pipe := n.Pipeline()
		queue(pipe)
		if pipe.Len() == 0 {
			return nil, nil
		}
		began := time.Now()
		cmds, err := pipe.Exec(ctx)
		lat.record(time.Since(began))
		lost := firstLost(ctx, cmds)
		if lost == nil || !s.again(ctx, lost) {
			return cmds, err
		}
	}
}

// writeOutcome is what a read of a key says of a write whose reply was
// lost.
type writeOutcome int

const (
	// written: the write took effect.
	written writeOutcome = iota
	// unwritten: it did not, and is not to be sent again (the key is gone,
	// or someone else gave it a TTL).
	unwritten
	// writeAgain: it did not reach the key; send it again.
	writeAgain
	// changedKey: the key is no longer the one the write was for (another
	// type, or gone); it is not to be sent again, and its reply is -1.
	changedKey
)

// keyWrite is one write command per key that Scan never sends again blind.
type keyWrite struct {
	// send queues the write of key; its result is the reply as an integer:
	// 1 when the write took effect, anything else when it did not.
	send func(ctx context.Context, pipe redis.Pipeliner, key string) func() (int64, error)
	// check queues a read of key that tells whether the write, first sent
	// at first, took effect.
	check func(ctx context.Context, pipe redis.Pipeliner, key string, first time.Time) func() (writeOutcome, error)
}

// write sends w to each of keys in one pipeline, and returns its reply for
// each key (1: it took effect; -1: the key changed, for a check that can
// tell). A command whose reply was lost may have run, in part, or
// may run yet (a stalled server runs what it had read when it resumes):
// its key is read again (w.check) and written again only when that read
// says so; such a key's reply is then 1 when the read says that the write
// took effect, 0 when not. A key written again and answered "no effect" is
// read again too: the first write may have run in between. It returns the
// first error reply, or a lost reply that outlasted stallLimit.
func (a *auditor) write(ctx context.Context, n Node, lat *latencyHist, keys []string, w keyWrite) ([]int64, error) {
	took := make([]int64, len(keys))
	pending := make([]int, len(keys))
	for i := range pending {
		pending[i] = i
	}
	first := time.Now()
	var s stall
	for again := false; len(pending) > 0; again = true {
		pipe := n.Pipeline()
		replies := make([]func() (int64, error), len(pending))
		for j, i := range pending {
			replies[j] = w.send(ctx, pipe, keys[i])
		}
		began := time.Now()
		cmds, _ := pipe.Exec(ctx)
		lat.record(time.Since(began))
		var unsure, refused []int
		var lost error
		for j, i := range pending {
			reply, err := replies[j]()
			switch {
			case lostReply(ctx, err):
				unsure = append(unsure, i)
				if lost == nil {
					lost = err
				}
			case refusedForNow(err):
				refused = append(refused, i) // not run: sent again as it is
				if lost == nil {
					lost = err
				}
			case err != nil:
				return took, pipelineError(cmds, err)
			case reply != 1 && again:
				unsure = append(unsure, i)
			default:
				took[i] = reply
			}
		}
		if len(unsure) == 0 && len(refused) == 0 {
			return took, nil
		}
		if lost != nil && !s.again(ctx, lost) {
			return took, pipelineError(cmds, lost)
		}
		var err error
		if pending, err = a.recheck(ctx, n, lat, keys, unsure, w, first, took); err != nil {
			return took, err
		}
		pending = append(pending, refused...)
	}
	return took, nil
}

// recheck reads the keys of unsure (indices into keys) with w.check,
// records in took (1) those written, and returns those to write again.
func (a *auditor) recheck(ctx context.Context, n Node, lat *latencyHist, keys []string, unsure []int, w keyWrite, first time.Time, took []int64) ([]int, error) {
	checks := make([]func() (writeOutcome, error), len(unsure))
	cmds, err := a.read(ctx, n, lat, func(pipe redis.Pipeliner) {
		for j, i := range unsure {
			checks[j] = w.check(ctx, pipe, keys[i], first)
		}
	})
	if err != nil {
		return nil, pipelineError(cmds, err)
	}
	var again []int
	for j, i := range unsure {
		out, err := checks[j]()
		if err != nil {
			// The re-read itself was refused: the write's outcome is
			// unknown, and the audit says so.
			return nil, fmt.Errorf("%s: re-read after a lost reply: %w", keys[i], err)
		}
		switch out {
		case written:
			took[i] = 1
		case unwritten:
			took[i] = 0
		case changedKey:
			took[i] = -1
		case writeAgain:
			again = append(again, i)
		}
	}
	return again, nil
}

// unlinkWrite is the clean-up's UNLINK (DEL with Options.UseDel), checked
// by PTTL: a key gone was deleted.
func (a *auditor) unlinkWrite() keyWrite {
	return keyWrite{
		send: func(ctx context.Context, pipe redis.Pipeliner, key string) func() (int64, error) {
			if a.o.UseDel {
				return pipe.Del(ctx, key).Result
			}
			return pipe.Unlink(ctx, key).Result
		},
		check: func(ctx context.Context, pipe redis.Pipeliner, key string, _ time.Time) func() (writeOutcome, error) {
			cmd := pipe.PTTL(ctx, key)
			return func() (writeOutcome, error) {
				if ttl, err := cmd.Result(); err != nil || ttl != -2 {
					return writeAgain, err
				}
				return written, nil
			}
		},
	}
}

// fixWrite is Options.FixTTL's fix (fixScript) of keys, checked by TYPE
// and PTTL: a key of another type, or gone, changed; a key with a TTL that
// ours could have left, given the time since it was first sent, was fixed;
// one still without a TTL is fixed again.
func (a *auditor) fixWrite(keys []immortalKey) keyWrite {
	fix := a.o.FixTTL
	types := make(map[string]string, len(keys))
	for _, k := range keys {
		types[k.key] = k.typ
	}
	return keyWrite{
		send: func(ctx context.Context, pipe redis.Pipeliner, key string) func() (int64, error) {
			// EVAL, not EVALSHA: a NOSCRIPT cannot be answered inside a
			// pipeline.
			return fixScript.Eval(ctx, pipe, []string{key}, int64(fix/time.Second), types[key]).Int64
		},
		check: func(ctx context.Context, pipe redis.Pipeliner, key string, first time.Time) func() (writeOutcome, error) {
			typ := pipe.Type(ctx, key)
			pttl := pipe.PTTL(ctx, key)
			return func() (writeOutcome, error) {
				ttl, err := pttl.Result()
				switch {
				case err != nil:
					return unwritten, err
				case typ.Val() != types[key]:
					return changedKey, nil
				case ttl == -1:
					return writeAgain, nil
				case ttl > 0 && ttl <= fix && ttl >= fix-time.Since(first):
					return written, nil
				}
				return unwritten, nil
			}
		},
	}
}

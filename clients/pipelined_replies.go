package clients

import (
	"context"
	"fmt"
	"strconv"

	"github.com/rlbench/rlbench/strategies"
)

// The pipelines, transactions and hash-field commands of the rueidis and
// valkey-go adapter (pipelined.go), and how it reads their replies.

// Pipeline sends cmds with one DoMulti, which the client writes
// contiguously on the shared connection: one round trip, not a
// transaction. On a cluster a SCRIPT LOAD goes to every master
// (clusterScriptLoad).
func (a *pipelinedAdapter[C, P, R, M, D]) Pipeline(ctx context.Context, cmds []strategies.Cmd) ([]strategies.Reply, error) {
	if a.cluster {
		if src, ok, err := clusterScriptLoad(cmds); err != nil || ok {
			return a.loadEverywhere(ctx, cmds, src, err)
		}
	}
	if err := tapRueidis(ctx, strategies.PipelineName(cmds, false)); err != nil {
		return nil, err
	}
	resps := a.c.DoMulti(ctx, a.built(cmds)...)
	out := make([]strategies.Reply, len(resps))
	for i, r := range resps {
		var err error
		if out[i], err = a.reply(r); err != nil {
			return nil, err
		}
	}
	a.fallbacks.Add(noscripts(cmds, out))
	return out, nil
}

// Transaction sends MULTI, cmds and EXEC as one DoMulti slice.
func (a *pipelinedAdapter[C, P, R, M, D]) Transaction(ctx context.Context, cmds []strategies.Cmd) ([]strategies.Reply, error) {
	if err := tapRueidis(ctx, strategies.PipelineName(cmds, true)); err != nil {
		return nil, err
	}
	all := append([]P{a.d.command(a.c, strategies.Cmd{Name: "MULTI"})}, a.built(cmds)...)
	all = append(all, a.d.command(a.c, strategies.Cmd{Name: "EXEC"}))
	resps := a.c.DoMulti(ctx, all...)
	for _, r := range resps {
		if err := a.d.nonServerError(r); err != nil {
			return nil, err
		}
	}
	exec, err := resps[len(resps)-1].ToArray()
	if err != nil {
		for _, r := range resps[:len(resps)-1] {
			if e := r.Error(); e != nil && !a.d.isNil(e) {
				return nil, fmt.Errorf("%w: %w", strategies.ErrTransactionAborted, a.err(e))
			}
		}
		if a.d.isNil(err) {
			return nil, strategies.ErrTransactionAborted
		}
		return nil, fmt.Errorf("%w: %w", strategies.ErrTransactionAborted, a.err(err))
	}
	if len(exec) != len(cmds) {
		return nil, fmt.Errorf("exec: reply has %d elements; want %d", len(exec), len(cmds))
	}
	out := make([]strategies.Reply, len(exec))
	for i := range exec {
		out[i] = a.value(exec[i])
	}
	return out, nil
}

func (a *pipelinedAdapter[C, P, R, M, D]) built(cmds []strategies.Cmd) []P {
	out := make([]P, len(cmds))
	for i, c := range cmds {
		out[i] = a.d.command(a.c, c)
	}
	return out
}

// reply is r as a Reply, or the error that is not a reply (a network
// error).
func (a *pipelinedAdapter[C, P, R, M, D]) reply(r R) (strategies.Reply, error) {
	if err := a.d.nonServerError(r); err != nil {
		return strategies.Reply{}, err
	}
	m, err := r.ToMessage()
	if err != nil {
		return a.replyOfErr(err), nil
	}
	return a.value(m), nil
}

func (a *pipelinedAdapter[C, P, R, M, D]) replyOfErr(err error) strategies.Reply {
	if a.d.isNil(err) {
		return strategies.Reply{Nil: true}
	}
	return strategies.Reply{Err: a.err(err)}
}

// value converts one reply (RESP3).
func (a *pipelinedAdapter[C, P, R, M, D]) value(m M) strategies.Reply {
	if err := a.d.msgError(m); err != nil {
		return a.replyOfErr(err)
	}
	switch {
	case a.d.isNilMsg(m):
		return strategies.Reply{Nil: true}
	case a.d.isInt64(m):
		n, _ := a.d.asInt64(m)
		return strategies.Reply{Int: n, IsInt: true}
	case a.d.isBool(m):
		b, _ := a.d.asBool(m)
		if b {
			return strategies.Reply{Int: 1, IsInt: true}
		}
		return strategies.Reply{Int: 0, IsInt: true}
	case a.d.isArray(m):
		elems, _ := a.d.toArray(m)
		arr := make([]strategies.Reply, len(elems))
		for i := range elems {
			arr[i] = a.value(elems[i])
		}
		return strategies.Reply{Array: arr}
	}
	s, err := a.d.toString(m)
	if err != nil {
		f, ferr := a.d.asFloat64(m)
		if ferr == nil {
			return strategies.Reply{Str: strconv.FormatFloat(f, 'f', -1, 64)}
		}
	}
	return strategies.Reply{Str: s}
}

// The hash-field commands (Redis >= 7.4), for the strategies whose counter
// is a field of a hash (strategies.LayoutHashField).

func (a *pipelinedAdapter[C, P, R, M, D]) HIncrBy(ctx context.Context, key, field string, n int64) (int64, error) {
	v, err := a.do(ctx, "HINCRBY", a.d.hincrby(a.c, key, field, n)).AsInt64()
	return v, a.err(err)
}

func (a *pipelinedAdapter[C, P, R, M, D]) HExpire(ctx context.Context, key, field string, seconds int64) (int64, error) {
	return a.firstInt(a.do(ctx, "HEXPIRE", a.d.hexpire(a.c, key, field, seconds)).AsIntSlice())
}

func (a *pipelinedAdapter[C, P, R, M, D]) HTTL(ctx context.Context, key, field string) (int64, error) {
	return a.firstInt(a.do(ctx, "HTTL", a.d.httl(a.c, key, field)).AsIntSlice())
}

// HIncrExpireNX sends MULTI, HINCRBY, HEXPIRE NX and EXEC as one DoMulti
// slice, written contiguously on the shared connection (see IncrExpireNX).
func (a *pipelinedAdapter[C, P, R, M, D]) HIncrExpireNX(ctx context.Context, key, field string, seconds int64) (int64, error) {
	if err := tapRueidis(ctx, "MULTI+HINCRBY+HEXPIRE NX+EXEC"); err != nil {
		return 0, err
	}
	resps := a.c.DoMulti(ctx,
		a.d.command(a.c, strategies.Cmd{Name: "MULTI"}),
		a.d.hincrby(a.c, key, field, 1),
		a.d.hexpireNX(a.c, key, field, seconds),
		a.d.command(a.c, strategies.Cmd{Name: "EXEC"}),
	)
	return a.execFirst(resps)
}

// execFirst returns the first reply of a MULTI; X; Y; EXEC round trip,
// an integer, or the most specific error.
func (a *pipelinedAdapter[C, P, R, M, D]) execFirst(resps []R) (int64, error) {
	exec, err := resps[3].ToArray()
	if err != nil {
		// The EXEC error says why; a MULTI or queued command's error is
		// more specific.
		for _, r := range resps[:3] {
			if e := r.Error(); e != nil {
				return 0, a.err(e)
			}
		}
		return 0, a.err(err)
	}
	if len(exec) != 2 {
		return 0, fmt.Errorf("exec: reply has %d elements; want 2", len(exec))
	}
	n, err := a.d.asInt64(exec[0])
	return n, a.err(err)
}

// firstInt is the one element of a one-field reply.
func (a *pipelinedAdapter[C, P, R, M, D]) firstInt(v []int64, err error) (int64, error) {
	if err != nil {
		return 0, a.err(err)
	}
	if len(v) != 1 {
		return 0, fmt.Errorf("reply has %d elements; want 1", len(v))
	}
	return v[0], nil
}

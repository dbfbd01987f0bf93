package clients

import (
	"context"
	"fmt"
	"strconv"

	"github.com/valkey-io/valkey-go"

	"github.com/rlbench/rlbench/strategies"
)

// The valkey-go twins of the rueidis adapter's pipelines, transactions and
// hash-field commands (pipeline.go, hash.go).

// Pipeline sends cmds with one DoMulti, which valkey-go writes contiguously
// on the shared connection: one round trip, not a transaction. On a
// cluster a SCRIPT LOAD goes to every master (clusterScriptLoad).
func (a *valkeyAdapter) Pipeline(ctx context.Context, cmds []strategies.Cmd) ([]strategies.Reply, error) {
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
		if err := r.NonValkeyError(); err != nil {
			return nil, err
		}
		m, err := r.ToMessage()
		if err != nil {
			out[i] = valkeyReplyOfErr(err)
			continue
		}
		out[i] = valkeyValue(&m)
	}
	a.fallbacks.Add(noscripts(cmds, out))
	return out, nil
}

// Transaction sends MULTI, cmds and EXEC as one DoMulti slice.
func (a *valkeyAdapter) Transaction(ctx context.Context, cmds []strategies.Cmd) ([]strategies.Reply, error) {
	if err := tapRueidis(ctx, strategies.PipelineName(cmds, true)); err != nil {
		return nil, err
	}
	b := a.c.B()
	all := append([]valkey.Completed{b.Multi().Build()}, a.built(cmds)...)
	all = append(all, b.Exec().Build())
	resps := a.c.DoMulti(ctx, all...)
	for _, r := range resps {
		if err := r.NonValkeyError(); err != nil {
			return nil, err
		}
	}
	exec, err := resps[len(resps)-1].ToArray()
	if err != nil {
		for _, r := range resps[:len(resps)-1] {
			if e := r.Error(); e != nil && !valkey.IsValkeyNil(e) {
				return nil, fmt.Errorf("%w: %w", strategies.ErrTransactionAborted, valkeyErr(e))
			}
		}
		if valkey.IsValkeyNil(err) {
			return nil, strategies.ErrTransactionAborted
		}
		return nil, fmt.Errorf("%w: %w", strategies.ErrTransactionAborted, valkeyErr(err))
	}
	if len(exec) != len(cmds) {
		return nil, fmt.Errorf("exec: reply has %d elements; want %d", len(exec), len(cmds))
	}
	out := make([]strategies.Reply, len(exec))
	for i := range exec {
		out[i] = valkeyValue(&exec[i])
	}
	return out, nil
}

func (a *valkeyAdapter) built(cmds []strategies.Cmd) []valkey.Completed {
	out := make([]valkey.Completed, len(cmds))
	for i, c := range cmds {
		out[i] = a.c.B().Arbitrary(append([]string{c.Name}, c.Head...)...).Keys(c.Keys...).Args(c.Args...).Build()
	}
	return out
}

func valkeyReplyOfErr(err error) strategies.Reply {
	if valkey.IsValkeyNil(err) {
		return strategies.Reply{Nil: true}
	}
	return strategies.Reply{Err: valkeyErr(err)}
}

// valkeyValue converts one reply (RESP3) of valkey.
func valkeyValue(m *valkey.ValkeyMessage) strategies.Reply {
	if err := m.Error(); err != nil {
		return valkeyReplyOfErr(err)
	}
	switch {
	case m.IsNil():
		return strategies.Reply{Nil: true}
	case m.IsInt64():
		n, _ := m.AsInt64()
		return strategies.Reply{Int: n, IsInt: true}
	case m.IsBool():
		b, _ := m.AsBool()
		if b {
			return strategies.Reply{Int: 1, IsInt: true}
		}
		return strategies.Reply{Int: 0, IsInt: true}
	case m.IsArray():
		elems, _ := m.ToArray()
		arr := make([]strategies.Reply, len(elems))
		for i := range elems {
			arr[i] = valkeyValue(&elems[i])
		}
		return strategies.Reply{Array: arr}
	}
	s, err := m.ToString()
	if err != nil {
		f, ferr := m.AsFloat64()
		if ferr == nil {
			return strategies.Reply{Str: strconv.FormatFloat(f, 'f', -1, 64)}
		}
	}
	return strategies.Reply{Str: s}
}

func (a *valkeyAdapter) HIncrBy(ctx context.Context, key, field string, n int64) (int64, error) {
	v, err := a.do(ctx, "HINCRBY", a.c.B().Hincrby().Key(key).Field(field).Increment(n).Build()).AsInt64()
	return v, valkeyErr(err)
}

func (a *valkeyAdapter) HExpire(ctx context.Context, key, field string, seconds int64) (int64, error) {
	cmd := a.c.B().Hexpire().Key(key).Seconds(seconds).Fields().Numfields(1).Field(field).Build()
	return valkeyFirstInt(a.do(ctx, "HEXPIRE", cmd).AsIntSlice())
}

func (a *valkeyAdapter) HTTL(ctx context.Context, key, field string) (int64, error) {
	cmd := a.c.B().Httl().Key(key).Fields().Numfields(1).Field(field).Build()
	return valkeyFirstInt(a.do(ctx, "HTTL", cmd).AsIntSlice())
}

// HIncrExpireNX sends MULTI, HINCRBY, HEXPIRE NX and EXEC as one DoMulti
// slice, written contiguously on the shared connection (see IncrExpireNX).
func (a *valkeyAdapter) HIncrExpireNX(ctx context.Context, key, field string, seconds int64) (int64, error) {
	if err := tapRueidis(ctx, "MULTI+HINCRBY+HEXPIRE NX+EXEC"); err != nil {
		return 0, err
	}
	b := a.c.B()
	resps := a.c.DoMulti(ctx,
		b.Multi().Build(),
		b.Hincrby().Key(key).Field(field).Increment(1).Build(),
		b.Hexpire().Key(key).Seconds(seconds).Nx().Fields().Numfields(1).Field(field).Build(),
		b.Exec().Build(),
	)
	return valkeyExecFirst(resps)
}

// execFirst returns the first reply of a MULTI; X; Y; EXEC round trip,
// an integer, or the most specific error.
func valkeyExecFirst(resps []valkey.ValkeyResult) (int64, error) {
	exec, err := resps[3].ToArray()
	if err != nil {
		// The EXEC error says why; a MULTI or queued command's error is
		// more specific.
		for _, r := range resps[:3] {
			if e := r.Error(); e != nil {
				return 0, valkeyErr(e)
			}
		}
		return 0, valkeyErr(err)
	}
	if len(exec) != 2 {
		return 0, fmt.Errorf("exec: reply has %d elements; want 2", len(exec))
	}
	n, err := exec[0].AsInt64()
	return n, valkeyErr(err)
}

// valkeyFirstInt is firstInt for valkey.
func valkeyFirstInt(v []int64, err error) (int64, error) {
	if err != nil {
		return 0, valkeyErr(err)
	}
	if len(v) != 1 {
		return 0, fmt.Errorf("reply has %d elements; want 1", len(v))
	}
	return v[0], nil
}

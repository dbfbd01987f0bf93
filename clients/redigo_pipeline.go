package clients

import (
	"context"
	"errors"
	"fmt"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/rlbench/rlbench/strategies"
)

// Pipeline sends cmds with redigo's Send on one connection, then one
// Flush (one write), then reads a reply per command: one round trip, not
// a transaction.
func (a *redigoAdapter) Pipeline(ctx context.Context, cmds []strategies.Cmd) ([]strategies.Reply, error) {
	if err := tapRueidis(ctx, strategies.PipelineName(cmds, false)); err != nil {
		return nil, err
	}
	args := make([][]any, len(cmds))
	for i, c := range cmds {
		args[i] = anyWords(c)
	}
	replies, err := a.pipeline(ctx, args)
	if err != nil {
		return nil, err
	}
	out := make([]strategies.Reply, len(replies))
	for i, r := range replies {
		out[i] = redigoValue(r)
	}
	a.fallbacks.Add(noscripts(cmds, out))
	return out, nil
}

// pipeline sends cmds (each a name and its arguments) in one write on one
// connection and returns their replies, a server's error reply as a
// redigo.Error among them; err is a network error.
func (a *redigoAdapter) pipeline(ctx context.Context, cmds [][]any) ([]any, error) {
	c, err := a.pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	for _, cmd := range cmds {
		if err := c.Send(cmd[0].(string), cmd[1:]...); err != nil {
			return nil, err
		}
	}
	if err := c.Flush(); err != nil {
		return nil, err
	}
	out := make([]any, len(cmds))
	for i := range cmds {
		v, err := redigo.ReceiveContext(c, ctx)
		if _, ok := errors.AsType[redigo.Error](err); err != nil && !ok {
			return nil, err
		}
		if err != nil {
			v = err
		}
		out[i] = v
	}
	return out, nil
}

// transaction sends MULTI, cmds and EXEC in one write, a round trip named
// name, and returns EXEC's replies. It returns
// strategies.ErrTransactionAborted, with the queuing error when there is
// one, when EXEC ran nothing.
func (a *redigoAdapter) transaction(ctx context.Context, name string, cmds [][]any) ([]any, error) {
	if err := tapRueidis(ctx, name); err != nil {
		return nil, err
	}
	all := make([][]any, 0, len(cmds)+2)
	all = append(all, []any{"MULTI"})
	all = append(all, cmds...)
	all = append(all, []any{"EXEC"})
	replies, err := a.pipeline(ctx, all)
	if err != nil {
		return nil, err
	}
	exec := replies[len(replies)-1]
	if vs, ok := exec.([]any); ok {
		return vs, nil
	}
	for _, r := range replies[:len(replies)-1] {
		if e, ok := r.(redigo.Error); ok {
			return nil, fmt.Errorf("%w: %w", strategies.ErrTransactionAborted, redigoErr(e))
		}
	}
	if e, ok := exec.(redigo.Error); ok {
		return nil, fmt.Errorf("%w: %w", strategies.ErrTransactionAborted, redigoErr(e))
	}
	return nil, strategies.ErrTransactionAborted
}

// Transaction sends MULTI, cmds and EXEC in one write.
func (a *redigoAdapter) Transaction(ctx context.Context, cmds []strategies.Cmd) ([]strategies.Reply, error) {
	args := make([][]any, len(cmds))
	for i, c := range cmds {
		args[i] = anyWords(c)
	}
	exec, err := a.transaction(ctx, strategies.PipelineName(cmds, true), args)
	if err != nil {
		return nil, err
	}
	if len(exec) != len(cmds) {
		return nil, fmt.Errorf("exec: reply has %d elements; want %d", len(exec), len(cmds))
	}
	out := make([]strategies.Reply, len(exec))
	for i, r := range exec {
		out[i] = redigoValue(r)
	}
	return out, nil
}

// redigoValue converts one reply (RESP2) of redigo: a bulk string is
// []byte, a status string a string.
func redigoValue(v any) strategies.Reply {
	switch v := v.(type) {
	case nil:
		return strategies.Reply{Nil: true}
	case int64:
		return strategies.Reply{Int: v, IsInt: true}
	case []byte:
		return strategies.Reply{Str: string(v)}
	case string:
		return strategies.Reply{Str: v}
	case []any:
		arr := make([]strategies.Reply, len(v))
		for i, e := range v {
			arr[i] = redigoValue(e)
		}
		return strategies.Reply{Array: arr}
	case redigo.Error:
		return strategies.Reply{Err: strategies.ReplyError(string(v))}
	case error:
		return strategies.Reply{Err: v}
	}
	return strategies.Reply{Str: fmt.Sprint(v)}
}

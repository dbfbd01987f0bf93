package clients

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/strategies"
)

// tapHook is the go-redis hook that shows every round trip of a decision
// to the context's strategies.Tap, the adapter's own commands and a
// published library's alike. When the Tap's Gap fails, the command is not
// sent and fails with the Gap's error: a client that died after the
// previous reply. Its connection is not closed: go-redis returned it to the
// pool when that reply arrived, and no state on the server belongs to it
// between two round trips.
//
// It also counts the EVALSHA commands the server answered NOSCRIPT,
// whoever sent them: each is followed by the script sent again (the
// adapter's EVAL, redis_rate's EVAL, ulule's SCRIPT LOAD and EVALSHA).
type tapHook struct {
	noscripts *atomic.Int64
}

var _ redis.Hook = tapHook{}

func (tapHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h tapHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if t := strategies.TapFrom(ctx); t != nil && !setupCommand(cmd.Name()) {
			if err := t.Before(ctx, roundTripName(cmd)); err != nil {
				cmd.SetErr(err)
				return err
			}
		}
		err := next(ctx, cmd)
		if err != nil && cmd.Name() == "evalsha" && isNoScript(err) {
			h.noscripts.Add(1)
		}
		return err
	}
}

func (tapHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		t := strategies.TapFrom(ctx)
		if t == nil || len(cmds) == 0 || setupCommand(cmds[0].Name()) {
			return next(ctx, cmds)
		}
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = roundTripName(c)
		}
		if err := t.Before(ctx, strings.Join(names, "+")); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// roundTripName is a command's name as a Tap shows it: the name in upper
// case, then the option words that change what it does to a key's TTL or
// existence, e.g. "SET NX" or "EXPIRE NX", so that a SET with no expiry
// reads as one.
func roundTripName(cmd redis.Cmder) string {
	name := strings.ToUpper(cmd.Name())
	args := cmd.Args()
	for i := 2; i < len(args); i++ {
		if s, ok := args[i].(string); ok && optionWords[strings.ToUpper(s)] {
			name += " " + strings.ToUpper(s)
		}
	}
	return name
}

// optionWords are the options roundTripName shows.
var optionWords = map[string]bool{
	"NX": true, "XX": true, "GT": true, "LT": true, "EX": true, "PX": true,
	"EXAT": true, "PXAT": true, "KEEPTTL": true,
}

// setupCommand reports whether a command is one go-redis sends to set up
// a new connection (it runs them through the same hooks, with the context
// of the command that needed the connection).
func setupCommand(name string) bool {
	switch name {
	case "hello", "auth", "select", "client", "readonly":
		return true
	}
	return false
}

// discardLogger drops go-redis's internal log lines ("redis: connection
// pool: failed to dial ..."), which it writes to stderr by default: every
// failure they report reaches rlbench as an error of the call that met it.
type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(discardLogger{}) }

// tapRueidis shows a rueidis round trip of commands to the context's Tap:
// the rueidis adapter's equivalent of tapHook. names gives the round
// trip's commands' names, e.g. "EVALSHA" or "MULTI+INCR+EXPIRE+EXEC".
func tapRueidis(ctx context.Context, names string) error {
	if t := strategies.TapFrom(ctx); t != nil {
		return t.Before(ctx, names)
	}
	return nil
}

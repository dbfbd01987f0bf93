package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/strategies"
)

// CheckWrongType: a hash, then a list, at the key: every decision errors
// with a server error reply and the key is left exactly as it was (type,
// value and TTL), with no other key created.
const CheckWrongType = "wrong-type"

func init() {
	register(checkDef{
		Check:         Check{Name: CheckWrongType, Doc: "with a hash or a list at the key, the request errors and the key is left exactly as it was"},
		run:           checkWrongType,
		notApplicable: notStamped,
		// ChangesWrongType is read from the commands a decision sends
		// (a sequence's TTL command after its counter's), not claimed.
		leakNotClaimed: true,
		expected: func(p strategies.Info, _ Server) []Outcome {
			if p.Stamp != "" || p.KeysBeside {
				return []Outcome{NotApplicable}
			}
			if p.ChangesWrongType {
				return []Outcome{Leaks}
			}
			return []Outcome{Pass}
		},
	})
}

func checkWrongType(ctx context.Context, t *trial) Cell {
	seeds := []struct {
		kind string
		seed func(key string) error
	}{
		{"hash", func(key string) error { return t.observer.HSet(ctx, key, "field", "value").Err() }},
		{"list", func(key string) error { return t.observer.RPush(ctx, key, "a", "b").Err() }},
	}
	if t.hashFields() {
		// A hash is the strategy's own type: a string stands in for it.
		seeds[0].kind, seeds[0].seed = "string", func(key string) error { return t.observer.Set(ctx, key, "value", 0).Err() }
	}
	var seeded []string
	for _, seed := range seeds {
		key := t.key(seed.kind)
		if err := seed.seed(key); err != nil {
			return failf("seed a %s: %v", seed.kind, err)
		}
		seeded = append(seeded, key)
		if cell, ok := t.leftAsItWas(ctx, key, "a "+seed.kind+" at the key"); !ok {
			return cell
		}
	}
	keys, err := t.keysUnder(ctx, t.keyPrefix())
	if err != nil {
		return failf("%v", err)
	}
	if extra := slices.DeleteFunc(keys, func(k string) bool { return slices.Contains(seeded, k) }); len(extra) > 0 {
		return failf("the failed decisions created %s", strings.Join(extra, ", "))
	}
	return Cell{Outcome: Pass}
}

// leftAsItWas makes 3 decisions on key, which holds what (described in
// notes), and checks that each errors with a server error reply and that
// the key is left as it was. It returns a FAIL or leaks cell, or ok.
func (t *trial) leftAsItWas(ctx context.Context, key, what string) (Cell, bool) {
	before, err := t.keyState(ctx, key)
	if err != nil {
		return failf("%v", err), false
	}
	var kinds []string
	for i := 1; i <= 3; i++ {
		d, err := t.decide(ctx, key)
		if err == nil {
			return failf("%s: request %d succeeded (%s, count %d); want an error", what, i, allowedWord(d.Allowed), d.Count), false
		}
		reply, ok := errors.AsType[strategies.ReplyError](err)
		if !ok {
			return failf("%s: request %d failed with %v; want an error reply from the server", what, i, err), false
		}
		if !slices.Contains(kinds, reply.Prefix()) {
			kinds = append(kinds, reply.Prefix())
		}
	}
	after, err := t.keyState(ctx, key)
	if err != nil {
		return failf("%v", err), false
	}
	if after != before {
		return Cell{Outcome: Leaks, Note: fmt.Sprintf("%s: 3 decisions errored (%s) but the key was changed: %s", what, strings.Join(kinds, ", "), before.change(after))}, false
	}
	return Cell{}, true
}

// keyState is what the wrong-type check compares before and after: the
// type, the serialized value and the TTL.
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
	p, err := r.keyPTTL(ctx, key)
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

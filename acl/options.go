package acl

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Option is a command option a strategy needs that COMMAND INFO cannot
// vouch for (it lists commands, not their options), with a probe that
// asks the server whether it takes it and leaves no key behind.
type Option struct {
	// Name is the option as written in the docs, e.g. "EXPIRE ... NX".
	Name string
	// Probe is the command that tries it; "K" stands for the probe key,
	// which must not exist.
	Probe []string
	// Why says who needs it.
	Why string
}

// strategyOptions are the options each strategy sends outside a script.
// EXPIRE NX arrived in Redis 7.0, SET EXAT in 6.2.
var strategyOptions = map[string][]Option{
	"multi-nx": {{Name: "EXPIRE ... NX", Probe: []string{"expire", "K", "1", "nx"}}},
	// EXAT 1 is long past: the key is set and expires at once (the server
	// counts one expired key and replicates a DEL).
	"naive": {{Name: "SET ... EXAT", Probe: []string{"set", "K", "1", "exat", "1"}}},
}

// Options returns the options the strategies need, each once.
func Options(strategyNames []string) []Option {
	var out []Option
	for _, s := range strategyNames {
		for _, o := range strategyOptions[s] {
			if !slices.ContainsFunc(out, func(x Option) bool { return x.Name == o.Name }) {
				o.Why = "strategy " + s
				out = append(out, o)
			}
		}
	}
	return out
}

// SupportedOptions sends each option's probe on key, a key under the
// run's prefix that does not exist, and returns a *MissingError naming
// the options the server refuses, with what it said (Redis 6.2 answers
// EXPIRE ... NX with "ERR wrong number of arguments for 'expire'
// command"). A NOPERM reply is returned as a denied command.
func SupportedOptions(ctx context.Context, rdb Doer, key string, opts []Option) error {
	refused := &MissingError{}
	for _, o := range opts {
		args := make([]any, len(o.Probe))
		for i, a := range o.Probe {
			if a == "K" {
				a = key
			}
			args[i] = a
		}
		err := rdb.Do(ctx, args...).Err()
		switch {
		case err == nil || err.Error() == "redis: nil":
		case strings.HasPrefix(err.Error(), "NOPERM"):
			return &MissingError{Commands: []string{o.Probe[0]}, Said: []string{err.Error()}, Denied: true}
		case strings.HasPrefix(err.Error(), "ERR"):
			refused.Commands = append(refused.Commands, o.Name)
			refused.Said = append(refused.Said, err.Error())
		default:
			return fmt.Errorf("acl: option %s: %w", o.Name, connectionFailed(strings.ToUpper(fmt.Sprint(o.Probe[0])), err))
		}
	}
	if len(refused.Commands) > 0 {
		return refused
	}
	return nil
}

package strategies

import (
	"crypto/sha1"
	"encoding/hex"
)

// NewScript returns a Script for src with its SHA-1 computed.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{Src: src, SHA1: hex.EncodeToString(sum[:])}
}

// Args is a script's or function's ARGV, built once when a strategy is
// built, in the forms both adapters take, so that no decision converts it.
type Args struct {
	strs []string
	anys []any
}

// NewArgs returns Args holding args.
func NewArgs(args ...string) Args {
	anys := make([]any, len(args))
	for i, a := range args {
		anys[i] = a
	}
	return Args{strs: args, anys: anys}
}

// Strings returns the arguments as strings. The caller must not modify it.
func (a Args) Strings() []string { return a.strs }

// Any returns the arguments as a []any. The caller must not modify it.
func (a Args) Any() []any { return a.anys }

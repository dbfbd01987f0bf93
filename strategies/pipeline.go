package strategies

import (
	"errors"
	"strings"
)

// Cmd is one command of a pipeline or a transaction (Client.Pipeline,
// Client.Transaction): Name, Head, then Keys, then Args. Keys are named
// apart so that a cluster client routes the command to their slot.
type Cmd struct {
	// Name is the command's name, e.g. "INCRBY".
	Name string
	// Head are the words between Name and Keys, e.g. EVALSHA's SHA-1 and
	// key count, or SCRIPT's LOAD and source; nil for most commands.
	Head []string
	// Keys are the keys the command takes, in the order it takes them,
	// right after Name.
	Keys []string
	// Args are the arguments after the keys.
	Args []string
}

// Words returns the command as sent: Name, Keys..., Args....
func (c Cmd) Words() []string {
	out := make([]string, 0, 1+len(c.Head)+len(c.Keys)+len(c.Args))
	out = append(out, c.Name)
	out = append(out, c.Head...)
	out = append(out, c.Keys...)
	return append(out, c.Args...)
}

// Reply is the server's reply to one command of a pipeline or transaction.
type Reply struct {
	// Int is the reply's value when IsInt.
	Int int64
	// IsInt is true for an integer reply.
	IsInt bool
	// Str is a simple or bulk string reply ("OK", "17").
	Str string
	// Nil is true for a nil reply (a missing key, SET NX that did not set).
	Nil bool
	// Array holds the elements of an array reply (TIME, HMGET).
	Array []Reply
	// Err is the command's error reply (a ReplyError), or nil.
	Err error
}

// ErrTransactionAborted is returned by Client.Transaction when EXEC
// answers nil or EXECABORT: none of the commands ran.
var ErrTransactionAborted = errors.New("transaction aborted: EXEC ran nothing")

// roundTripName is how a Tap shows a pipeline or transaction of cmds: the
// names in upper case joined with "+", each followed by the option words
// that change what it does to a key's TTL or existence (see OptionWord).
func roundTripName(cmds []Cmd) string {
	var b strings.Builder
	for i, c := range cmds {
		if i > 0 {
			b.WriteByte('+')
		}
		b.WriteString(CommandName(c.Name, c.Args))
	}
	return b.String()
}

// CommandName is a command's name as a Tap shows it: upper case, then the
// option words among args (OptionWord), e.g. "SET NX EX" or "EXPIRE NX".
func CommandName(name string, args []string) string {
	out := strings.ToUpper(name)
	for _, a := range args {
		if u := strings.ToUpper(a); OptionWord(u) {
			out += " " + u
		}
	}
	return out
}

// OptionWord reports whether an upper-case word is one of the options a
// Tap shows after a command's name: those that change what it does to a
// key's TTL or existence.
func OptionWord(w string) bool {
	switch w {
	case "NX", "XX", "GT", "LT", "EX", "PX", "EXAT", "PXAT", "KEEPTTL":
		return true
	}
	return false
}

// PipelineName is roundTripName for the adapters: the name a Tap is
// given for a pipeline of cmds, or, when tx, for MULTI, cmds and EXEC.
func PipelineName(cmds []Cmd, tx bool) string {
	if tx {
		return "MULTI+" + roundTripName(cmds) + "+EXEC"
	}
	return roundTripName(cmds)
}

package strategies

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A sequence strategy (--sequence NAME=SPEC) is a limiter written as the
// commands it sends per request, e.g.
//
//	INCRBY {key} {n} | EXPIRE {key} {window}
//
// "|" joins commands into one pipeline (one write, not a transaction), ";"
// starts a new round trip, and MULTI ... EXEC (which must open and close a
// round trip; inside it "|" and ";" both separate the queued commands) is
// a transaction. The first reply of a counter command (CounterCommands) is
// the count; the decision is count <= limit. Keys come only from the
// {key} placeholder, as the start of a key argument ({key}:{stamp}), so
// that every key stays under the cell's prefix and in its cluster slot. A
// claims header as for scripts may end the spec:
//
//	INCRBY {key} 1 | EXPIRE {key} {window} NX -- rlbench: heals fixed-window

// ErrBadSequence is returned for a --sequence spec that cannot be used.
var ErrBadSequence = errors.New("bad sequence")

// keyPositions says where a command's keys are.
type keyPositions int

const (
	noKeys   keyPositions = iota // TIME
	firstKey                     // the first argument
	allKeys                      // every argument (EXISTS)
)

// SequenceCommands are the commands a sequence may send, by name, with
// where their keys are: the string, counter and TTL families, hash and
// sorted-set counters, TIME, EXISTS and TYPE. It is the one list of them;
// acl probes each.
var SequenceCommands = map[string]keyPositions{
	"GET": firstKey, "SET": firstKey, "SETNX": firstKey, "SETEX": firstKey, "PSETEX": firstKey,
	"GETEX": firstKey, "INCR": firstKey, "INCRBY": firstKey, "DECR": firstKey, "DECRBY": firstKey,
	"EXPIRE": firstKey, "PEXPIRE": firstKey, "EXPIREAT": firstKey, "PEXPIREAT": firstKey,
	"TTL": firstKey, "PTTL": firstKey, "EXPIRETIME": firstKey, "PEXPIRETIME": firstKey,
	"HGET": firstKey, "HSET": firstKey, "HSETNX": firstKey, "HINCRBY": firstKey, "HMGET": firstKey,
	"HGETALL": firstKey, "HDEL": firstKey, "HLEN": firstKey,
	"HEXPIRE": firstKey, "HPEXPIRE": firstKey, "HTTL": firstKey, "HPTTL": firstKey,
	"ZADD": firstKey, "ZCARD": firstKey, "ZCOUNT": firstKey, "ZREMRANGEBYSCORE": firstKey, "ZREM": firstKey,
	"TIME": noKeys, "EXISTS": allKeys, "TYPE": firstKey,
}

// CounterCommands are the commands whose reply is a count: the first of
// them in a sequence gives the decision's count.
var CounterCommands = []string{"INCR", "INCRBY", "DECR", "DECRBY", "HINCRBY", "ZCARD"}

// Placeholders are the words a sequence's arguments may hold in braces.
var Placeholders = []string{"key", "stamp", "stamp_ms", "index", "window", "window_ms", "limit", "n"}

// seqToken is one argument: literal text and placeholders, in order.
type seqToken []seqPart

type seqPart struct {
	lit string // literal text, when ph is ""
	ph  string // a placeholder's name
}

type seqCmd struct {
	name string
	keys []seqToken
	args []seqToken
}

// seqTrip is one round trip: a pipeline of commands, or a transaction.
type seqTrip struct {
	tx   bool
	cmds []seqCmd
}

// Sequence is a parsed --sequence spec.
type Sequence struct {
	// Spec is the spec as given, without its claims.
	Spec   string
	trips  []seqTrip
	claims map[string]bool
	stamp  string // the stamp its keys carry: "", "unix", "unix-ms" or "index"
	// stampHidden is set when a key's name does not end its numbers with
	// the one stamp (Info.StampHidden).
	stampHidden bool
	// stamped and unstamped count the key arguments with a stamp and
	// without.
	stamped, unstamped int
}

// ParseSequence parses a spec (without NAME=). Errors wrap ErrBadSequence
// and name the token.
func ParseSequence(spec string) (*Sequence, error) {
	body, claimText, _ := strings.Cut(spec, ClaimsHeader)
	s := &Sequence{Spec: strings.TrimSpace(body), claims: map[string]bool{}}
	for _, w := range strings.Fields(claimText) {
		if !slices.Contains(Claims, w) {
			return nil, fmt.Errorf("%w: unknown claim %q (accepted: %s)", ErrBadSequence, w, strings.Join(Claims, ", "))
		}
		s.claims[w] = true
	}
	if why := checkClaims(s.claims); why != "" {
		return nil, fmt.Errorf("%w: %s", ErrBadSequence, why)
	}
	if err := s.parseTrips(s.Spec); err != nil {
		return nil, err
	}
	if len(s.trips) == 0 {
		return nil, fmt.Errorf("%w: no command", ErrBadSequence)
	}
	if !s.hasCounter() {
		return nil, fmt.Errorf("%w: %q has no counter command (one of %s): its first reply is the count", ErrBadSequence, s.Spec, strings.Join(CounterCommands, ", "))
	}
	if s.stamp != "" && s.claims["fixed-window"] {
		return nil, fmt.Errorf("%w: fixed-window: a key stamped with {%s} counts the clock's window, not one that starts at the key's first request; leave the claim out", ErrBadSequence, stampPlaceholder(s.stamp))
	}
	return s, nil
}

// parseTrips splits body into round trips and commands.
func (s *Sequence) parseTrips(body string) error {
	p := tripParser{s: s}
	var word strings.Builder
	endWord := func() {
		if word.Len() > 0 {
			p.words = append(p.words, word.String())
			word.Reset()
		}
	}
	for _, r := range body {
		switch {
		case r == ' ' || r == '\t' || r == '\n':
			endWord()
		case r == '|' || r == ';':
			endWord()
			if err := p.command(string(r)); err != nil {
				return err
			}
			if r == ';' && !p.inTx {
				p.endTrip()
			}
		default:
			word.WriteRune(r)
		}
	}
	endWord()
	if len(p.words) > 0 {
		if err := p.command(""); err != nil {
			return err
		}
	}
	if p.inTx {
		return fmt.Errorf("%w: MULTI with no EXEC", ErrBadSequence)
	}
	p.endTrip()
	return nil
}

// tripParser holds parseTrips' state: the round trip being read and the
// words of the command being read.
type tripParser struct {
	s      *Sequence
	trip   *seqTrip
	words  []string
	inTx   bool
	closed bool // the last command was EXEC
}

func (p *tripParser) endTrip() {
	if p.trip != nil && !p.inTx {
		p.s.trips = append(p.s.trips, *p.trip)
		p.trip = nil
	}
}

// command ends the command of p.words, at separator sep.
func (p *tripParser) command(sep string) error {
	if len(p.words) == 0 {
		if sep == ";" && (p.closed || p.inTx) {
			return nil
		}
		return fmt.Errorf("%w: %q with no command before it", ErrBadSequence, sep)
	}
	words := p.words
	p.words, p.closed = nil, false
	name := strings.ToUpper(words[0])
	switch {
	case name == "MULTI":
		if p.inTx || p.trip != nil {
			return fmt.Errorf("%w: MULTI must open a round trip (at the start or after ';'), not inside another", ErrBadSequence)
		}
		if len(words) > 1 {
			return fmt.Errorf("%w: MULTI takes no argument, got %q", ErrBadSequence, words[1])
		}
		p.inTx, p.trip = true, &seqTrip{tx: true}
		return nil
	case name == "EXEC":
		if !p.inTx || len(p.trip.cmds) == 0 {
			return fmt.Errorf("%w: EXEC with no MULTI and command before it", ErrBadSequence)
		}
		if len(words) > 1 {
			return fmt.Errorf("%w: EXEC takes no argument, got %q", ErrBadSequence, words[1])
		}
		if sep == "|" {
			return fmt.Errorf("%w: EXEC ends a round trip: follow it with ';', not '|'", ErrBadSequence)
		}
		p.inTx, p.closed = false, true
		p.endTrip()
		return nil
	}
	cmd, err := p.s.parseCmd(name, words[1:])
	if err != nil {
		return err
	}
	if p.trip == nil {
		p.trip = &seqTrip{}
	}
	p.trip.cmds = append(p.trip.cmds, cmd)
	return nil
}

// parseCmd checks a command and its arguments: an accepted command, keys
// that start with {key}, no {key} elsewhere, known placeholders and plain
// literals.
func (s *Sequence) parseCmd(name string, words []string) (seqCmd, error) {
	pos, ok := SequenceCommands[name]
	if !ok {
		return seqCmd{}, fmt.Errorf("%w: command %q is not one a counter needs (accepted: %s, MULTI ... EXEC)", ErrBadSequence, name, strings.Join(sequenceCommandNames(), ", "))
	}
	cmd := seqCmd{name: name}
	for i, w := range words {
		tok, err := parseToken(w)
		if err != nil {
			return seqCmd{}, err
		}
		isKey := pos == allKeys || (pos == firstKey && i == 0)
		hasKey := slices.ContainsFunc(tok, func(p seqPart) bool { return p.ph == "key" })
		switch {
		case isKey && (tok[0].ph != "key" || strings.Count(w, "{key}") != 1):
			return seqCmd{}, fmt.Errorf("%w: %s: key %q must start with {key} (the cell's counter key), e.g. {key} or {key}:{stamp}", ErrBadSequence, name, w)
		case !isKey && hasKey:
			return seqCmd{}, fmt.Errorf("%w: %s: %q: {key} may only be a key argument", ErrBadSequence, name, w)
		case isKey:
			s.noteStamp(tok)
			cmd.keys = append(cmd.keys, tok)
		default:
			cmd.args = append(cmd.args, tok)
		}
	}
	if pos != noKeys && len(cmd.keys) == 0 {
		return seqCmd{}, fmt.Errorf("%w: %s needs a key ({key})", ErrBadSequence, name)
	}
	return cmd, nil
}

// noteStamp records the stamp a key carries, and whether it is the last
// number of every key's name (stampHidden otherwise: a number after it,
// two stamps, or a key without one beside stamped keys).
func (s *Sequence) noteStamp(tok seqToken) {
	stamp, after := "", false
	for _, p := range tok {
		var st string
		switch p.ph {
		case "stamp":
			st = StampUnix
		case "stamp_ms":
			st = StampUnixMS
		case "index":
			st = StampIndex
		}
		switch {
		case st != "":
			if s.stamp != "" && s.stamp != st {
				s.stampHidden = true
			}
			s.stamp, stamp, after = st, st, false
		case stamp != "" && (p.ph != "" || strings.ContainsAny(p.lit, "0123456789")):
			after = true
		}
	}
	if stamp != "" {
		s.stamped++
	} else {
		s.unstamped++
	}
	s.stampHidden = s.stampHidden || after || s.stamped > 0 && s.unstamped > 0
}

// literalChar is what a sequence's literal text may hold.
func literalChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.:+-/", r)
}

// parseToken splits a word into literals and placeholders.
func parseToken(w string) (seqToken, error) {
	var tok seqToken
	rest := w
	for rest != "" {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			i = len(rest)
		}
		if lit := rest[:i]; lit != "" {
			if j := strings.IndexFunc(lit, func(r rune) bool { return !literalChar(r) }); j >= 0 {
				return nil, fmt.Errorf("%w: %q: character %q is not accepted (letters, digits, _ . : + - / and {placeholders})", ErrBadSequence, w, lit[j:j+1])
			}
			tok = append(tok, seqPart{lit: lit})
		}
		if i == len(rest) {
			break
		}
		end := strings.IndexByte(rest[i:], '}')
		if end < 0 {
			return nil, fmt.Errorf("%w: %q: '{' with no '}'", ErrBadSequence, w)
		}
		ph := rest[i+1 : i+end]
		if !slices.Contains(Placeholders, ph) {
			return nil, fmt.Errorf("%w: %q: unknown placeholder {%s} (accepted: {%s})", ErrBadSequence, w, ph, strings.Join(Placeholders, "}, {"))
		}
		tok = append(tok, seqPart{ph: ph})
		rest = rest[i+end+1:]
	}
	return tok, nil
}

func (s *Sequence) hasCounter() bool {
	for _, t := range s.trips {
		for _, c := range t.cmds {
			if slices.Contains(CounterCommands, c.name) {
				return true
			}
		}
	}
	return false
}

// CommandNames returns the ACL names of the commands the sequence sends,
// each once, MULTI and EXEC included.
func (s *Sequence) CommandNames() []string {
	var out []string
	add := func(n string) {
		if n = strings.ToLower(n); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, t := range s.trips {
		if t.tx {
			add("multi")
		}
		for _, c := range t.cmds {
			add(c.name)
		}
		if t.tx {
			add("exec")
		}
	}
	return out
}

func sequenceCommandNames() []string {
	names := make([]string, 0, len(SequenceCommands))
	for n := range SequenceCommands {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func stampPlaceholder(stamp string) string {
	switch stamp {
	case StampUnixMS:
		return "stamp_ms"
	case StampIndex:
		return "index"
	}
	return "stamp"
}

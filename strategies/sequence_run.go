package strategies

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/serverinfo"
)

// SequenceSource is the Info.Source of a --sequence strategy.
const SequenceSource = "--sequence"

// RegisterSequence registers spec, "NAME=SPEC", as strategy NAME (see
// ParseSequence) into r. Registering the same name and spec again is
// allowed.
func (r *Registry) RegisterSequence(spec string) error {
	name, body, ok := strings.Cut(spec, "=")
	if !ok || name == "" || strings.TrimSpace(body) == "" {
		return fmt.Errorf("%w: %q: want NAME=SPEC, e.g. 'mine=INCRBY {key} {n} | EXPIRE {key} {window}'", ErrBadSequence, spec)
	}
	if !userName.MatchString(name) {
		return fmt.Errorf("%w: %q: a name is letters, digits, '_', '.' and '-'", ErrBadSequence, name)
	}
	seq, err := ParseSequence(body)
	if err != nil {
		return err
	}
	info := seq.Info(name)
	if old, err := r.Lookup(name); err == nil && old.Source == SequenceSource && old.Commands == info.Commands {
		return nil
	}
	return r.add(info)
}

// NewSequence builds the strategy of spec (without NAME=) as name, as New
// builds a registered one, without registering it.
func NewSequence(name, spec string, cfg Config) (Strategy, error) {
	seq, err := ParseSequence(spec)
	if err != nil {
		return nil, err
	}
	return seq.Info(name).Build(cfg)
}

// Info returns the Info of the sequence as strategy name.
func (s *Sequence) Info(name string) Info {
	return Info{
		Name:        name,
		Summary:     fmt.Sprintf("user sequence; claims: %s", claimText(s.claims)),
		Commands:    s.Spec,
		Atomic:      s.claims["atomic"],
		Heals:       s.claims["heals"],
		FixedWindow: checkedAsFixedWindow(s.claims, s.stamp),
		MinRedis:    s.minRedis(),
		// A round trip sends all its commands: a TTL command after an
		// INCR that failed on a hash still changes the hash.
		ChangesWrongType: s.changesWrongType(),
		Keys:             "K, and keys made from K by appending",
		Source:           SequenceSource,
		Stamp:            s.stamp,
		StampHidden:      s.stampHidden,
		ACLCommands:      s.CommandNames(),
		New:              func(c Config) Strategy { return &sequenceStrategy{name: name, seq: s, cfg: c} },
	}
}

// minRedis is the lowest Redis version that runs every command of the
// sequence as written: hash-field TTLs 7.4, EXPIRE's NX/XX/GT/LT and
// EXPIRETIME 7.0, GETEX and SET's EXAT/PXAT 6.2, SET's options 2.6.12.
func (s *Sequence) minRedis() string {
	best := "2.6.0"
	raise := func(v string) {
		if !serverinfo.VersionAtLeast(best, v) {
			best = v
		}
	}
	for _, t := range s.trips {
		for _, c := range t.cmds {
			switch c.name {
			case "HEXPIRE", "HPEXPIRE", "HTTL", "HPTTL":
				raise("7.4.0")
			case "EXPIRETIME", "PEXPIRETIME":
				raise("7.0.0")
			case "GETEX":
				raise("6.2.0")
			}
			for _, a := range c.args {
				if len(a) != 1 || a[0].ph != "" {
					continue
				}
				switch w := strings.ToUpper(a[0].lit); {
				case strings.Contains(c.name, "EXPIRE") && (w == "NX" || w == "XX" || w == "GT" || w == "LT"):
					raise("7.0.0")
				case c.name == "SET" && (w == "EXAT" || w == "PXAT" || w == "GET"):
					raise("6.2.0")
				case c.name == "SET" && (w == "NX" || w == "XX" || w == "EX" || w == "PX"):
					raise("2.6.12")
				}
			}
		}
	}
	return best
}

// changesWrongType reports whether a decision changes a key of another
// type at the counter's name: a round trip (pipeline or transaction)
// sends every command even when an earlier one fails with WRONGTYPE, so
// a TTL command after the first changes the key's TTL, and SET without
// NX or XX, SETEX and PSETEX overwrite it wherever they are.
func (s *Sequence) changesWrongType() bool {
	for _, t := range s.trips {
		for i, c := range t.cmds {
			switch c.name {
			case "EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT":
				if i > 0 {
					return true
				}
			case "SETEX", "PSETEX":
				return true
			case "SET":
				if !slices.ContainsFunc(c.args, func(a seqToken) bool {
					return len(a) == 1 && (strings.EqualFold(a[0].lit, "NX") || strings.EqualFold(a[0].lit, "XX"))
				}) {
					return true
				}
			}
		}
	}
	return false
}

// sequenceStrategy runs a Sequence.
type sequenceStrategy struct {
	name string
	seq  *Sequence
	cfg  Config
}

func (s *sequenceStrategy) Name() string { return s.name }

func (s *sequenceStrategy) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	v := s.seq.values(key, s.cfg, now())
	count, counted := int64(0), false
	for i, t := range s.seq.trips {
		cmds := make([]Cmd, len(t.cmds))
		for j, tc := range t.cmds {
			cmds[j] = tc.expand(v)
		}
		send := c.Pipeline
		if t.tx {
			send = c.Transaction
		}
		replies, err := send(ctx, cmds)
		if err != nil {
			return Decision{}, fmt.Errorf("%s: round trip %d: %w", s.name, i+1, err)
		}
		for j, r := range replies {
			if r.Err != nil {
				return Decision{}, fmt.Errorf("%s: %s: %w", s.name, cmds[j].Name, r.Err)
			}
			if !counted && slices.Contains(CounterCommands, cmds[j].Name) {
				if !r.IsInt {
					return Decision{}, fmt.Errorf("%s: %s: %w, got %+v", s.name, cmds[j].Name, ErrBadReply, r)
				}
				count, counted = r.Int, true
			}
		}
	}
	return Decision{Allowed: count <= s.cfg.Limit, Count: count}, nil
}

// values returns each placeholder's value for one decision on key at t
// (the client's clock, as the limiters that stamp their keys read it).
func (s *Sequence) values(key string, cfg Config, t time.Time) map[string]string {
	index := t.Unix() / cfg.Window
	stamp := index * cfg.Window
	return map[string]string{
		"key":       key,
		"stamp":     strconv.FormatInt(stamp, 10),
		"stamp_ms":  strconv.FormatInt(stamp*1000, 10),
		"index":     strconv.FormatInt(index, 10),
		"window":    strconv.FormatInt(cfg.Window, 10),
		"window_ms": strconv.FormatInt(cfg.Window*1000, 10),
		"limit":     strconv.FormatInt(cfg.Limit, 10),
		"n":         "1",
	}
}

func (c seqCmd) expand(v map[string]string) Cmd {
	out := Cmd{Name: c.name, Keys: make([]string, len(c.keys)), Args: make([]string, len(c.args))}
	for i, t := range c.keys {
		out.Keys[i] = t.expand(v)
	}
	for i, t := range c.args {
		out.Args[i] = t.expand(v)
	}
	return out
}

func (t seqToken) expand(v map[string]string) string {
	if len(t) == 1 && t[0].ph == "" {
		return t[0].lit
	}
	var b strings.Builder
	for _, p := range t {
		if p.ph == "" {
			b.WriteString(p.lit)
		} else {
			b.WriteString(v[p.ph])
		}
	}
	return b.String()
}

package audit

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Defaults of Options, and of the flags of `rlbench audit`.
const (
	// DefaultCount is the COUNT hint of each SCAN when Options.Count is 0,
	// and so roughly the number of keys each SCAN walks and each pipeline
	// carries.
	DefaultCount = 1000
	// DefaultRate is the command's --rate: 10,000 keys walked per second.
	// It is conservative: each second the server answers at most about 10
	// SCANs and 10,000 PTTLs, well under 1% of one core, while a keyspace
	// of a million keys takes under two minutes.
	DefaultRate = 10000
	// DefaultSample is the command's --sample: how many immortal keys it
	// describes.
	DefaultSample = 10
	// MaxCount bounds Options.Count: a larger hint makes each SCAN block
	// the server for longer, which is what the audit must not do.
	MaxCount = 100000
	// MaxSample bounds Options.Sample.
	MaxSample = 10000
)

// Errors returned, wrapped, by Scan for Options that cannot work. Each is
// found before any command is sent.
var (
	// ErrMatchAndPrefix: Options.Match and Options.Prefix are exclusive.
	ErrMatchAndPrefix = errors.New("match and prefix are exclusive: give one")
	// ErrInvalidCount: Options.Count is outside 0..MaxCount.
	ErrInvalidCount = fmt.Errorf("count must be between 1 and %d", MaxCount)
	// ErrInvalidRate: Options.Rate is negative, NaN or infinite.
	ErrInvalidRate = errors.New("rate must be a finite number of keys per second >= 0 (0: no cap)")
	// ErrInvalidMaxTTL: Options.MaxTTL is negative.
	ErrInvalidMaxTTL = errors.New("max TTL must be >= 0 (0: no check)")
	// ErrInvalidLimit: Options.Limit is negative.
	ErrInvalidLimit = errors.New("limit must be >= 0 (0: no check)")
	// ErrInvalidSample: Options.Sample is outside 0..MaxSample.
	ErrInvalidSample = fmt.Errorf("sample must be between 0 and %d", MaxSample)
	// ErrInvalidFixTTL: Options.FixTTL is negative or not whole seconds.
	ErrInvalidFixTTL = errors.New("fix TTL must be a whole number of seconds >= 1 (0: no fix)")
	// ErrDryRunWithoutFix: Options.DryRun without Options.FixTTL.
	ErrDryRunWithoutFix = errors.New("dry run needs a fix TTL")
	// ErrUnlinkConflict: Options.Unlink deletes each key as it is examined,
	// so nothing is left to read a value from, sample or fix.
	ErrUnlinkConflict = errors.New("unlink excludes limit, sample and fix TTL")
	// ErrUnlinkNeedsPrefix: Options.Unlink deletes only the keys under a
	// Prefix, never those a Match glob (or no filter) names.
	ErrUnlinkNeedsPrefix = errors.New("unlink needs a prefix: it never deletes by a glob, or every key")
	// ErrNoNodes: Scan was given no node.
	ErrNoNodes = errors.New("no node to audit")
	// ErrInvalidType: Options.Type is neither one of Types nor a module
	// type's name as TYPE reports it.
	ErrInvalidType = fmt.Errorf("type must be one of %s, or a module type's name as TYPE reports it (9 characters of A-Z a-z 0-9 - _, e.g. ReJSON-RL)", strings.Join(Types, ", "))
)

// Types are the types of the server's own values, as TYPE reports them.
var Types = []string{"string", "list", "set", "zset", "hash", "stream"}

// validType reports whether t is one of Types, or could be a module
// type's name: a module registers its type under exactly 9 characters of
// A-Z, a-z, 0-9, - and _ (RedisModule_CreateDataType), which none of the
// server's own types has. A module type the server does not have matches
// no key: the empty audit says so.
func validType(t string) bool {
	if slices.Contains(Types, t) {
		return true
	}
	if len(t) != 9 {
		return false
	}
	for _, c := range []byte(t) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Options say what Scan examines, how gently, and what it does beyond
// counting. The zero value examines every key of every node, as fast as the
// server answers, and only reads.
type Options struct {
	// Match is the SCAN MATCH glob; "" means every key. Conflicts with
	// Prefix.
	Match string
	// Prefix, when set, examines only the keys that start with it: SCAN
	// MATCH MatchPattern(Prefix), and each key returned is checked with
	// strings.HasPrefix, so a glob character in the prefix cannot widen
	// it. Conflicts with Match.
	Prefix string
	// Count is the COUNT hint of each SCAN; 0 means DefaultCount.
	Count int64
	// Type, when set, examines only keys of that type, with SCAN ... TYPE
	// (Redis >= 6.0): one of Types, or a module type's name spelled as
	// TYPE reports it (ErrInvalidType otherwise).
	Type string
	// Types also reads each key's TYPE, pipelined with its PTTL, and counts
	// keys and immortal keys per type (Findings.Types).
	Types bool
	// Fields audits hash fields with TTLs of their own (Redis >= 7.4): it
	// reads each key's TYPE with its PTTL, then each hash's fields (HSCAN
	// ... NOVALUES) and their PTTLs (HPTTL), and counts them
	// (Findings.Fields and the figures beside it). A hash with no key TTL
	// is then immortal only when one of its fields has no TTL either;
	// otherwise it expires field by field (Findings.ExpiringByFields).
	// With Unlink, the keys of a batch are deleted after their fields are
	// read.
	Fields bool
	// Rate is the most keys walked per second, over all nodes together: a
	// SCAN page counts as its Count, or as the keys it returned when more
	// (matched or not), and with Fields a field read counts as a key. It
	// is a ceiling (see pacer). 0 means no cap. The command's default is
	// DefaultRate.
	Rate float64
	// MaxTTL is the longest TTL a key should have (the limiter's window);
	// a key whose PTTL exceeds it counts in Findings.TTLOverMax. 0 means no
	// check.
	MaxTTL time.Duration
	// Limit, when > 0, reads the value of each immortal key: a string
	// holding an integer >= Limit is a counter whose user is locked out for
	// good (Findings.LockedOut). Reading a value updates the key's LRU
	// clock, as any GET does.
	Limit int64
	// Sample is how many immortal keys (and as many locked-out ones) Scan
	// describes: type, value of a string, OBJECT IDLETIME. 0 means none.
	Sample int
	// FixTTL, when > 0, gives each immortal key this TTL, in one script
	// per key (EVAL: TYPE, PTTL, EXPIRE) that sets it only if the key
	// still has the type the audit read with its PTTL (Type when set) and
	// no TTL: a key that gained a TTL in the meantime keeps it
	// (Findings.FixSkipped); one that changed type or is gone is never
	// given one (Findings.Changed). Whole seconds. This is the only write
	// the default audit can make.
	FixTTL time.Duration
	// WindowStamp, when set, reads the window of each immortal key from
	// its name, as a limiter that stamps its keys wrote it: the last run
	// of digits is the window's start (StampUnix, StampUnixMS,
	// StampUnixNS) or its index (StampIndex), of windows Window long. A
	// key whose window has ended by the audit's clock (the client's) is
	// stale (StaleFindings.Stale): a lost EXPIRE that leaks memory, not a
	// user locked out; LockedOut never counts it. One of Stamps
	// (ErrInvalidWindowStamp otherwise); needs Window.
	WindowStamp string
	// Window is the length of WindowStamp's windows, whole seconds >= 1;
	// only with WindowStamp (ErrInvalidWindow otherwise).
	Window time.Duration
	// StaleMemory, with WindowStamp, reads MEMORY USAGE of up to this many
	// stale keys, the first the audit finds, and scales their mean to
	// every stale key (StaleFindings.StaleMemoryBytes, an estimate). 0
	// means none; at most MaxSample.
	StaleMemory int
	// DryRun, with FixTTL, counts the keys FixTTL would be sent for
	// (Findings.WouldFix) and sends no EXPIRE.
	DryRun bool
	// Unlink deletes each examined key with UNLINK, in a pipeline after the
	// one that reads its PTTL: an audit and a clean-up in one pass (the
	// runner's). A key gone before its PTTL is read is not sent. Conflicts
	// with Limit, Sample and FixTTL.
	Unlink bool
	// UseDel makes Unlink send DEL instead: a server before Redis 4.0 has
	// no UNLINK.
	UseDel bool
	// Dedup counts a key SCAN returns more than once (which SCAN may do
	// while the keyspace is resized) once. It remembers every key: a few
	// bits for a key with a number in it (prefix{123}, user:123), some tens
	// of bytes for any other, so memory grows with the keyspace; meant for
	// the runner's own keys.
	Dedup bool
	// Sizes reads each node's DBSIZE before the scan, for NodeReport.DBSize
	// and the ETA of Progress; setting Progress implies it.
	Sizes bool
	// Progress, if set, is called after each batch with the figures so far,
	// from the goroutine that called Scan.
	Progress func(Progress)
}

// Validate checks o as Scan does before any command, and returns an error
// wrapping one of the Err values of this package.
func (o Options) Validate() error {
	_, err := o.validate()
	return err
}

// validate checks o, and returns it with its defaults filled in.
func (o Options) validate() (Options, error) {
	switch {
	case o.Match != "" && o.Prefix != "":
		return o, ErrMatchAndPrefix
	case o.Count < 0 || o.Count > MaxCount:
		return o, fmt.Errorf("%w, got %d", ErrInvalidCount, o.Count)
	case !(o.Rate >= 0) || o.Rate > 1e12:
		return o, fmt.Errorf("%w, got %g", ErrInvalidRate, o.Rate)
	case o.MaxTTL < 0:
		return o, fmt.Errorf("%w, got %s", ErrInvalidMaxTTL, o.MaxTTL)
	case o.Limit < 0:
		return o, fmt.Errorf("%w, got %d", ErrInvalidLimit, o.Limit)
	case o.Sample < 0 || o.Sample > MaxSample:
		return o, fmt.Errorf("%w, got %d", ErrInvalidSample, o.Sample)
	case o.FixTTL < 0 || o.FixTTL%time.Second != 0:
		return o, fmt.Errorf("%w, got %s", ErrInvalidFixTTL, o.FixTTL)
	case o.DryRun && o.FixTTL == 0:
		return o, ErrDryRunWithoutFix
	case o.Unlink && (o.Limit > 0 || o.Sample > 0 || o.FixTTL > 0):
		return o, ErrUnlinkConflict
	case o.Type != "" && !validType(o.Type):
		return o, fmt.Errorf("%w, got %q", ErrInvalidType, o.Type)
	case o.Unlink && o.Prefix == "":
		// A glob, or nothing, could match keys that are not the run's.
		return o, ErrUnlinkNeedsPrefix
	}
	if err := o.validateStamp(); err != nil {
		return o, err
	}
	if o.Count == 0 {
		o.Count = DefaultCount
	}
	return o, nil
}

// match is the SCAN MATCH pattern of o ("" for none).
func (o Options) match() string {
	if o.Prefix != "" {
		return MatchPattern(o.Prefix)
	}
	if o.Match == "*" {
		return ""
	}
	return o.Match
}

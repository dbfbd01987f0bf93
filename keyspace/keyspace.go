// Package keyspace names every key rlbench writes or recognises on a
// server, and nothing else does: a run's id and its default prefix, the
// prefix of each target of a run of several, a cell's prefix and its
// counters, the warm-up's prefix, the pre-flight's probe key, the run's
// claim on its prefix (and the claim's value), the records of the server
// objects a run makes, and, for rlbench cleanup, whether a key under a
// prefix is one of a run's (RunKeys), told from the same constants that
// build them. It imports nothing of rlbench's.
//
// The keys of one run, under its prefix (RunPrefix, or the --prefix given),
// and under the prefix of each of its targets (the run's, or TargetPrefix's
// t<N>: after it when the run has several):
//
//	<prefix>rlbench-claim                             ClaimKey: the run's claim on its prefix
//	<prefix>preflight                                 PreflightKey: the pre-flight's probe
//	<target prefix>rlbench-object:<kind>:<name>       ObjectKey: the record of an object the run made
//	<target prefix><strategy>:<client>:{<i>}          Cell, then Key: a cell's counter i
//	<target prefix>warmup:<strategy>:<client>:{<i>}   WarmupCell, then Key: its warm-up's
//
// A strategy may append to a counter's name (the sliding log's ":seq", a
// window stamp); those suffixes are the strategy's own (package
// strategies), and RunKeys recognises their shape.
package keyspace

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// sep separates the parts of a key name.
const sep = ":"

// The braces of a counter's hash tag (Key): everything one decision
// touches is in one cluster slot.
const (
	tagOpen  = "{"
	tagClose = "}"
)

// DefaultPrefix starts a load run's prefix when none is given
// (RunPrefix), and is rlbench acl's default prefix.
const DefaultPrefix = "rlbench:"

// VerifyDefaultPrefix starts rlbench verify's prefix when none is given
// (NewVerifyPrefix).
const VerifyDefaultPrefix = "rlbench-verify:"

// NewRunID returns a fresh run id: "<UTC time>-<8 random hex digits>",
// e.g. "20261129T194000-1a2b3c4d". Two runs never share one.
func NewRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// RunPrefix is the prefix of the load run runID when none is given:
// "rlbench:<run id>:".
func RunPrefix(runID string) string { return DefaultPrefix + runID + sep }

// NewVerifyPrefix returns a fresh prefix for one rlbench verify:
// "rlbench-verify:<run id>:" (NewRunID).
func NewVerifyPrefix() string { return VerifyDefaultPrefix + NewRunID() + sep }

// TargetPrefix is the prefix of the n-th target (from 1) of a run of
// several targets under the run's prefix: two labels may name one
// server, and cells never share keys.
func TargetPrefix(runPrefix string, n int) string {
	return runPrefix + "t" + strconv.Itoa(n) + sep
}

// Cell is the key prefix of one strategy x client cell under runPrefix
// (the run's prefix on the cell's target): the strategy and client names
// after it. Cells never share keys.
func Cell(runPrefix, strategy, client string) string {
	return runPrefix + strategy + sep + client + sep
}

// warmup is the part of the prefix of a cell's warm-up keys.
const warmup = "warmup" + sep

// Warmup is the prefix under which the warm-up keys are beside those
// under prefix: a cell's warm-up is WarmupCell.
func Warmup(prefix string) string { return prefix + warmup }

// WarmupCell is the key prefix of the warm-up of the cell strategy x
// client under runPrefix: Cell under Warmup(runPrefix).
func WarmupCell(runPrefix, strategy, client string) string {
	return Cell(Warmup(runPrefix), strategy, client)
}

// Key returns the name of counter i under a cell's prefix: prefix{i}.
func Key(cellPrefix string, i int) string { return string(AppendKey(nil, cellPrefix, i)) }

// AppendKey appends Key(cellPrefix, i) to b.
func AppendKey(b []byte, cellPrefix string, i int) []byte {
	b = append(b, cellPrefix...)
	b = append(b, tagOpen...)
	b = strconv.AppendInt(b, int64(i), 10)
	return append(b, tagClose...)
}

// maxKeyDigits bounds the digits KeyIndex reads, so that the index fits
// an int.
const maxKeyDigits = 18

// KeyIndex returns i for the key name Key(cellPrefix, i), and false for a
// key of another shape (another prefix, no hash tag, a suffix after it).
// It allocates nothing.
func KeyIndex(cellPrefix, key string) (int, bool) {
	if len(key) < len(cellPrefix)+3 || key[:len(cellPrefix)] != cellPrefix || key[len(cellPrefix)] != tagOpen[0] || key[len(key)-1] != tagClose[0] {
		return 0, false
	}
	digits := key[len(cellPrefix)+1 : len(key)-1]
	if len(digits) > maxKeyDigits {
		return 0, false
	}
	n := 0
	for _, ch := range []byte(digits) {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		n = n*10 + int(ch-'0')
	}
	return n, true
}

// Preflight ends the pre-flight's probe key (PreflightKey).
const Preflight = "preflight"

// PreflightKey is the key under prefix that the pre-flight writes and
// deletes (that the target takes writes), and on whose node it asks what
// the server supports.
func PreflightKey(prefix string) string { return prefix + Preflight }

// ClaimName ends the key by which a load run claims its prefix
// (ClaimKey). The audits leave out every such key whose value is a run's
// claim (IsClaimValue): they neither count another run's claim as a key
// nor fix or delete it. A key of that name that holds anything else (a
// tenant's counter) is audited as any other.
const ClaimName = "rlbench-claim"

// ClaimKey is the key by which a run claims prefix: one key, on the one
// node that serves it on a cluster.
func ClaimKey(prefix string) string { return prefix + ClaimName }

// IsClaimKey reports whether key is named like a run's claim on a
// prefix (ClaimKey); its value tells whether it is one (IsClaimValue).
func IsClaimKey(key string) bool { return strings.HasSuffix(key, ClaimName) }

// ClaimPrefix is the prefix that the claim key claims: key less
// ClaimName.
func ClaimPrefix(key string) string { return strings.TrimSuffix(key, ClaimName) }

// ClaimValue is what the run runID writes in its claim: its run id first,
// then what finds it (process pid on host) and since when.
func ClaimValue(runID string, pid int, host string, since time.Time) string {
	return fmt.Sprintf("run %s (pid %d on %s, since %s)", runID, pid, host, since.UTC().Format(time.RFC3339Nano))
}

// ClaimRunID is the run id at the start of a claim's value (ClaimValue),
// "" when there is none.
func ClaimRunID(value string) string {
	var id string
	fmt.Sscanf(value, "run %s", &id)
	return id
}

// claimValue is the shape of a run's claim's value (ClaimValue).
var claimValue = regexp.MustCompile(`^run (\S+) \(pid [0-9]+ on .*, since \S+\)$`)

// MaxClaimValue is the most bytes a claim's value has: a longer value is
// no claim, and an audit reads no more of it than one byte beyond.
const MaxClaimValue = 1024

// IsClaimValue reports whether v, the value of a key named like a claim
// (IsClaimKey), is a run's claim: "run RUN-ID (pid PID on HOST, since
// TIME)" (ClaimValue).
func IsClaimValue(v string) bool { return len(v) <= MaxClaimValue && claimValue.MatchString(v) }

// ObjectName starts the last part of the key by which a run records,
// under its prefix on a target, a server object other than a key that it
// makes (ObjectKey): the record is written before the object is made and
// deleted once the object is, so that a run killed with SIGKILL leaves a
// record of each object it leaves, which rlbench cleanup deletes. A
// record has no TTL by design: one that expired would hide the object.
const ObjectName = "rlbench-object" + sep

// The kinds of objects a run records (ObjectKey).
const (
	// ObjectACLUser is a temporary ACL user (package usercode): its
	// record holds nothing.
	ObjectACLUser = "acl-user"
	// ObjectLibrary is a library of Redis Functions that the run's client
	// loaded: its record holds the SHA-1 of its code.
	ObjectLibrary = "library"
)

// ObjectKey is the key that records the object kind name of the run whose
// prefix is prefix: prefix, ObjectName, the kind, ':' and the name.
func ObjectKey(prefix, kind, name string) string {
	return prefix + ObjectName + kind + sep + name
}

// objectPattern matches ObjectKey's last part, the kind and the name
// (which holds no space and no ':') in groups.
var objectPattern = regexp.QuoteMeta(ObjectName) + `(` + regexp.QuoteMeta(ObjectACLUser) + `|` + regexp.QuoteMeta(ObjectLibrary) + `)` + regexp.QuoteMeta(sep) + `([^\s` + sep + `]+)`

// objectKey matches the end of a record's key (ObjectKey).
var objectKey = regexp.MustCompile(objectPattern + `$`)

// IsObjectKey reports whether key has the shape of a record of an object
// (ObjectKey).
func IsObjectKey(key string) bool { return objectKey.MatchString(key) }

// ParseObjectKey returns the kind and the name of the object that key
// records (ObjectKey), and false when key has not the shape of a record.
func ParseObjectKey(key string) (kind, name string, ok bool) {
	m := objectKey.FindStringSubmatch(key)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// RunKeyShape describes the keys a run leaves under its prefix, for
// messages: a cell's key is Cell, then Key's {N}.
const RunKeyShape = "STRATEGY:CLIENT:{N} after the run's prefix"

// The shapes RunKeys recognises of what the builders do not name.
const (
	// strategyName is a strategy's registered name, a built-in one's or
	// a user strategy's.
	strategyName = `[A-Za-z0-9][A-Za-z0-9_.-]*`
	// strategySuffix is what a strategy appends to a counter's name, after
	// ':', '_', '/' or '.': the sliding log's :seq, the window stamps of
	// the deployed models and of sequences (envoy's _START, kong's
	// :START_MS:PERIOD, mennanov's /START_NS, django's :HASH),
	// spring-gateway's .tokens and .timestamp.
	strategySuffix = `[:_/.][A-Za-z0-9_.:/-]*`
)

// RunKeys tells the keys a run leaves under its prefix from others', for
// rlbench cleanup. Its zero value recognises none; NewRunKeys makes one.
type RunKeys struct {
	end *regexp.Regexp
}

// NewRunKeys returns the RunKeys of the runs whose cells use the clients
// named clients (clients.Names).
func NewRunKeys(clients []string) RunKeys {
	quoted := make([]string, len(clients))
	for i, c := range clients {
		quoted[i] = regexp.QuoteMeta(c)
	}
	counter := strategyName + regexp.QuoteMeta(sep) + `(?:` + strings.Join(quoted, "|") + `)` + regexp.QuoteMeta(sep) +
		regexp.QuoteMeta(tagOpen) + `[0-9]+` + regexp.QuoteMeta(tagClose) + `(?:` + strategySuffix + `)?`
	return RunKeys{end: regexp.MustCompile(`(?:^|` + regexp.QuoteMeta(sep) + `)(?:` + counter +
		`|` + regexp.QuoteMeta(Preflight) + `|` + regexp.QuoteMeta(ClaimName) + `|` + objectPattern + `)$`)}
}

// Contains reports whether key, under prefix, has the shape of one of a
// run's keys: its end is a cell's counter Key(Cell(...), N) with what the
// strategy appends (strategySuffix), the pre-flight's probe
// (PreflightKey), the run's claim (ClaimKey) or the record of an object
// (ObjectKey). What comes before it is the rest of the run's prefix, when
// the one given is shorter (a run's own prefix, its target's t<N>:, the
// warm-up's warmup:).
func (r RunKeys) Contains(prefix, key string) bool {
	if r.end == nil {
		return false
	}
	return r.end.MatchString(strings.TrimPrefix(key, prefix))
}

// Package audit finds the keys that would outlive a rate-limit window: no
// TTL at all (immortal), or a TTL longer than the window. Scan is the one
// engine: it walks a keyspace with SCAN, reads each key's PTTL in pipelined
// batches, and counts, keeping nothing per key, at a rate the caller caps;
// it can also read the values of immortal counters (users locked out for
// good), describe a sample of them, give them a TTL (a script that checks
// the key's type and TTL and sets it, as one), or
// delete every key it examines. `rlbench audit` is Scan over a keyspace
// rlbench did not write; the runner audits, then deletes, its own keys.
//
// It talks to Redis through go-redis as an independent observer, whichever
// client the run itself used. By default it sends only read commands
// (INFO, DBSIZE, SCAN, PTTL, TYPE, GETRANGE (a value, and the value of a
// key named like a run's claim, to tell one: keyspace.IsClaimValue), OBJECT IDLETIME and REFCOUNT; HSCAN and HPTTL for
// the field audit; MEMORY USAGE for the stale keys of Options.WindowStamp). It reads each node's INFO before its first SCAN and
// after every page: a server that restarted or failed over in between
// leaves the node incomplete (ErrServerChanged). Under a prefix, each
// key returned by SCAN is checked with strings.HasPrefix, so neither a glob
// in the prefix nor a bug in the MATCH pattern can make it count or delete a
// key outside the prefix.
//
// With Options.Fields it also audits hash fields with TTLs of their own
// (Redis 7.4): TYPE joins each key's PTTL in the batch pipeline, and the
// hashes' fields are read with HSCAN ... NOVALUES and HPTTL, counted beside
// the keys (FieldFindings).
package audit

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/results"
)

// ErrEmptyPrefix is returned, wrapped, by Run and Cleanup for an empty
// prefix, which would cover the whole database.
var ErrEmptyPrefix = errors.New("empty key prefix: it would cover the whole database")

// Result counts the keys under a prefix, as the runner reports them:
// results.Audit, the group of the report's run it fills. Keys includes
// every other count; TTLOverWindow counts the keys whose PTTL, in
// milliseconds, exceeds the window; Vanished the keys SCAN returned that
// had expired or been deleted before their PTTL was read (PTTL -2).
type Result = results.Audit

// Result returns the runner's figures of f (TTLOverMax as TTLOverWindow,
// FieldTTLOverMax as FieldTTLOverWindow, Stale with Options.WindowStamp).
func (f Findings) Result() Result {
	r := Result{Keys: f.Keys, Immortal: f.Immortal, TTLOverWindow: f.TTLOverMax, Vanished: f.Vanished,
		Fields: f.Fields, ImmortalFields: f.ImmortalFields, FieldTTLOverWindow: f.FieldTTLOverMax, HashesExpired: f.HashesExpired}
	if f.StaleFindings != nil {
		stale := f.Stale
		r.Stale = &stale
	}
	return r
}

// NodeResult is the Result of one node of a cluster.
type NodeResult struct {
	// Addr is the node's host:port, or "" when the node's client does not
	// say (only a *redis.Client does).
	Addr string `json:"addr"`
	Result
}

// runOptions are the Options of the runner's audit of prefix, window in
// whole seconds.
func runOptions(prefix string, window int64) Options {
	return Options{Prefix: prefix, MaxTTL: time.Duration(window) * time.Second, Dedup: true}
}

// Run SCANs the keys under prefix (MATCH MatchPattern(prefix), COUNT 1000),
// reads the PTTL of each batch in one pipeline, and counts them. window is
// the rate-limit window in whole seconds (the runner's is >= 1; a window <= 0
// counts no key as over it). A key SCAN returns more than once
// (which SCAN allows while the keyspace is resized) is counted once.
//
// On error Run returns the counts so far with the error.
//
// Run is Scan of one node with Options{Prefix, MaxTTL: window, Dedup}: a
// shorthand for verify and the tests.
func Run(ctx context.Context, rdb redis.Cmdable, prefix string, window int64) (Result, error) {
	if prefix == "" {
		return Result{}, fmt.Errorf("audit: run: %w", ErrEmptyPrefix)
	}
	rep, err := scan(ctx, []Node{rdb}, runOptions(prefix, window), false)
	if err != nil {
		return rep.Result(), fmt.Errorf("audit: run: %w", err)
	}
	return rep.Result(), nil
}

// NodeResults returns the runner's figures of each node Scan reached, in
// order.
func (r Report) NodeResults() []NodeResult {
	per := make([]NodeResult, len(r.PerNode))
	for i, n := range r.PerNode {
		per[i] = NodeResult{Addr: n.Addr, Result: n.Result()}
	}
	return per
}

// Cleanup deletes every key under prefix with UNLINK, one UNLINK per key
// pipelined per SCAN batch (SCAN and HasPrefix guard as in Run), and
// returns how many keys it deleted, as counted by UNLINK's replies. On
// error it returns the count so far with the error.
//
// Cleanup is Scan of one node with Options{Prefix, Unlink}: a shorthand
// for verify, bench-peers and the tests.
func Cleanup(ctx context.Context, rdb redis.Cmdable, prefix string) (int64, error) {
	if prefix == "" {
		return 0, fmt.Errorf("audit: cleanup: %w", ErrEmptyPrefix)
	}
	rep, err := scan(ctx, []Node{rdb}, Options{Prefix: prefix, Unlink: true}, false)
	if err != nil {
		return rep.Deleted, fmt.Errorf("audit: cleanup: %w", err)
	}
	return rep.Deleted, nil
}

// MatchPattern returns the SCAN MATCH pattern for the keys under prefix:
// prefix with each of * ? [ ] \ escaped by a backslash, followed by "*".
func MatchPattern(prefix string) string {
	var b strings.Builder
	b.Grow(len(prefix) + 8)
	for i := 0; i < len(prefix); i++ {
		switch c := prefix[i]; c {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('*')
	return b.String()
}

// keySet remembers the keys seen so far. A key with a number in it, such as
// rlbench's prefix{123} or a keyspace's ratelimit:user:123, is split at its
// last run of digits into a shape (what is around the number) and the
// number, kept in a compressed bitmap per shape: a few bits per key, so that
// auditing millions of keys of a few shapes takes a few MiB. Any other key,
// and any key once maxShapes shapes are kept (keys whose last number is not
// the one that varies, such as user:123:v2, make a shape each), is
// remembered by its 64-bit hash, a few tens of bytes per key whatever its
// length; two of n such keys collide with probability about n²/2⁶⁵ (under
// 10⁻⁷ for 10⁶ keys), which would undercount Keys by one. A key always
// takes the same path: shapes are only added, and none after the cap.
type keySet struct {
	seed   maphash.Seed
	hashes map[uint64]struct{}
	shapes map[string]*roaring.Bitmap
	buf    []byte // the shape of the key being added
}

// maxShapes bounds the bitmaps of a keySet: beyond it, a bitmap per shape
// would cost more than the hashes it saves.
const maxShapes = 1024

func newKeySet() *keySet {
	return &keySet{seed: maphash.MakeSeed(), hashes: map[uint64]struct{}{}, shapes: map[string]*roaring.Bitmap{}}
}

// add records key and reports whether it was new.
func (s *keySet) add(key string) bool {
	if n, ok := s.shape(key); ok {
		bm := s.shapes[string(s.buf)]
		if bm == nil && len(s.shapes) < maxShapes {
			bm = roaring.New()
			s.shapes[string(s.buf)] = bm
		}
		if bm != nil {
			return bm.CheckedAdd(n)
		}
	}
	h := maphash.String(s.seed, key)
	if _, ok := s.hashes[h]; ok {
		return false
	}
	s.hashes[h] = struct{}{}
	return true
}

// shape splits key at its last run of digits: it leaves in s.buf the text
// before the run (after its length, so that no two splits share a shape)
// and the text after it, and returns the number. ok is false when the key
// has no digits, or a run that does not name its number one way (a leading
// zero) or is longer than 9 digits.
func (s *keySet) shape(key string) (n uint32, ok bool) {
	end := len(key)
	for end > 0 && !isDigit(key[end-1]) {
		end--
	}
	start := end
	for start > 0 && isDigit(key[start-1]) {
		start--
	}
	digits := key[start:end]
	if len(digits) == 0 || len(digits) > 9 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	for _, c := range []byte(digits) {
		n = n*10 + uint32(c-'0')
	}
	s.buf = binary.AppendUvarint(s.buf[:0], uint64(start))
	s.buf = append(append(s.buf, key[:start]...), key[end:]...)
	return n, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// NewRunID returns a fresh run id (keyspace.NewRunID).
//
// Deprecated: use keyspace.NewRunID.
func NewRunID() string { return keyspace.NewRunID() }

// Package audit checks the keys a run left behind, at the end of the run: how
// many there are under the run's key prefix, and how many of them would
// outlive the rate-limit window (no TTL at all, or a TTL longer than the
// window). Cleanup deletes them.
//
// It talks to Redis through go-redis as an independent observer, whichever
// client the run itself used. It only ever SCANs, reads PTTL and UNLINKs keys
// under the prefix: each key returned by SCAN is checked with
// strings.HasPrefix, so neither a glob in the prefix nor a bug in the MATCH
// pattern can make it count or delete a key outside the prefix.
package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrEmptyPrefix is returned, wrapped, by Run and Cleanup for an empty
// prefix, which would cover the whole database.
var ErrEmptyPrefix = errors.New("empty key prefix: it would cover the whole database")

// scanCount is the COUNT hint of each SCAN, and so roughly the batch size of
// each PTTL pipeline and each UNLINK.
const scanCount = 1000

// Result counts the keys under a prefix. Keys includes every other count.
type Result struct {
	// Keys is the number of distinct keys SCAN returned under the prefix.
	Keys int64 `json:"keys"`
	// Immortal is the number of keys with no TTL (PTTL -1): they would live forever.
	Immortal int64 `json:"immortal"`
	// TTLOverWindow is the number of keys whose PTTL, in milliseconds,
	// exceeds the window (> window*1000).
	TTLOverWindow int64 `json:"ttl_over_window"`
	// Vanished is the number of keys SCAN returned that had expired or been
	// deleted before their PTTL was read (PTTL -2).
	Vanished int64 `json:"vanished"`
}

// Run SCANs the keys under prefix (MATCH MatchPattern(prefix), COUNT 1000),
// reads the PTTL of each batch in one pipeline, and counts them. window is
// the rate-limit window in whole seconds. A key SCAN returns more than once
// (which SCAN allows while the keyspace is resized) is counted once.
//
// On error Run returns the counts so far with the error.
func Run(ctx context.Context, rdb redis.Cmdable, prefix string, window int64) (Result, error) {
	if prefix == "" {
		return Result{}, fmt.Errorf("audit: run: %w", ErrEmptyPrefix)
	}
	res, err := run(ctx, rdb, prefix, window, newKeySet())
	if err != nil {
		return res, fmt.Errorf("audit: run: %w", err)
	}
	return res, nil
}

// NodeResult is the Result of one node of a cluster.
type NodeResult struct {
	// Addr is the node's host:port, or "" when the node's client does not
	// say (only a *redis.Client does).
	Addr string `json:"addr"`
	Result
}

// RunNodes is Run over the masters of a Redis Cluster, one client per
// master: SCAN walks one node's keyspace only, so each master is scanned in
// turn (nodes must be the masters; a replica would count its master's keys
// again). It returns the sum, and the Result of each node in the order of
// nodes. On error it returns the counts so far with the error, which names
// the node.
func RunNodes(ctx context.Context, nodes []*redis.Client, prefix string, window int64) (Result, []NodeResult, error) {
	var total Result
	if prefix == "" {
		return total, nil, fmt.Errorf("audit: run: %w", ErrEmptyPrefix)
	}
	seen := newKeySet()
	per := make([]NodeResult, 0, len(nodes))
	for _, node := range nodes {
		res, err := run(ctx, node, prefix, window, seen)
		addr := node.Options().Addr
		per = append(per, NodeResult{Addr: addr, Result: res})
		total.add(res)
		if err != nil {
			return total, per, fmt.Errorf("audit: run: node %s: %w", addr, err)
		}
	}
	return total, per, nil
}

// add adds r's counts to res.
func (res *Result) add(r Result) {
	res.Keys += r.Keys
	res.Immortal += r.Immortal
	res.TTLOverWindow += r.TTLOverWindow
	res.Vanished += r.Vanished
}

// run is Run without the prefix check, skipping keys already in seen.
func run(ctx context.Context, rdb redis.Cmdable, prefix string, window int64, seen *keySet) (Result, error) {
	var res Result
	windowTTL := time.Duration(window) * time.Second
	err := scanPrefix(ctx, rdb, prefix, func(keys []string) error {
		batch := keys[:0]
		for _, key := range keys {
			if seen.add(key) {
				batch = append(batch, key)
			}
		}
		if len(batch) == 0 {
			return nil
		}
		pipe := rdb.Pipeline()
		ttls := make([]*redis.DurationCmd, len(batch))
		for i, key := range batch {
			ttls[i] = pipe.PTTL(ctx, key)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("pttl: %w", err)
		}
		for _, cmd := range ttls {
			res.Keys++
			// go-redis keeps PTTL's -1 and -2 replies as raw Durations.
			switch ttl := cmd.Val(); {
			case ttl == -1:
				res.Immortal++
			case ttl == -2:
				res.Vanished++
			case ttl > windowTTL:
				res.TTLOverWindow++
			}
		}
		return nil
	})
	return res, err
}

// Cleanup deletes every key under prefix with UNLINK, one UNLINK per SCAN
// batch (SCAN and HasPrefix guard as in Run), and returns how many keys it
// deleted, as counted by UNLINK's replies. On error it returns the count so
// far with the error.
func Cleanup(ctx context.Context, rdb redis.Cmdable, prefix string) (int64, error) {
	if prefix == "" {
		return 0, fmt.Errorf("audit: cleanup: %w", ErrEmptyPrefix)
	}
	var deleted int64
	err := scanPrefix(ctx, rdb, prefix, func(keys []string) error {
		n, err := rdb.Unlink(ctx, keys...).Result()
		if err != nil {
			return fmt.Errorf("unlink: %w", err)
		}
		deleted += n
		return nil
	})
	if err != nil {
		return deleted, fmt.Errorf("audit: cleanup: %w", err)
	}
	return deleted, nil
}

// CleanupNodes is Cleanup over the masters of a Redis Cluster, one client
// per master, as in RunNodes. The keys of one SCAN batch lie in many slots,
// which one UNLINK may not span (CROSSSLOT), so each key gets its own UNLINK,
// pipelined per batch. It returns the total deleted.
func CleanupNodes(ctx context.Context, nodes []*redis.Client, prefix string) (int64, error) {
	if prefix == "" {
		return 0, fmt.Errorf("audit: cleanup: %w", ErrEmptyPrefix)
	}
	var deleted int64
	for _, node := range nodes {
		err := scanPrefix(ctx, node, prefix, func(keys []string) error {
			pipe := node.Pipeline()
			unlinks := make([]*redis.IntCmd, len(keys))
			for i, key := range keys {
				unlinks[i] = pipe.Unlink(ctx, key)
			}
			_, err := pipe.Exec(ctx)
			for _, cmd := range unlinks {
				deleted += cmd.Val()
			}
			if err != nil {
				return fmt.Errorf("unlink: %w", err)
			}
			return nil
		})
		if err != nil {
			return deleted, fmt.Errorf("audit: cleanup: node %s: %w", node.Options().Addr, err)
		}
	}
	return deleted, nil
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

// scanPrefix SCANs the whole keyspace with MatchPattern(prefix) and calls fn
// with each non-empty batch of keys that really start with prefix.
func scanPrefix(ctx context.Context, rdb redis.Cmdable, prefix string, fn func(keys []string) error) error {
	match := MatchPattern(prefix)
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, match, scanCount).Result()
		if err != nil {
			return fmt.Errorf("scan: %w", err)
		}
		inside := keys[:0]
		for _, key := range keys {
			if strings.HasPrefix(key, prefix) {
				inside = append(inside, key)
			}
		}
		if len(inside) > 0 {
			if err := fn(inside); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// keySet remembers the keys seen so far by their 64-bit hashes, which keeps
// memory to a few tens of bytes per key whatever the key length. Two of n
// distinct keys collide with probability about n²/2⁶⁵ (under 10⁻⁷ for 10⁶
// keys), which would undercount Keys by one.
type keySet struct {
	seed   maphash.Seed
	hashes map[uint64]struct{}
}

func newKeySet() *keySet {
	return &keySet{seed: maphash.MakeSeed(), hashes: make(map[uint64]struct{})}
}

// add records key and reports whether it was new.
func (s *keySet) add(key string) bool {
	h := maphash.String(s.seed, key)
	if _, ok := s.hashes[h]; ok {
		return false
	}
	s.hashes[h] = struct{}{}
	return true
}

// NewPrefix returns a fresh key prefix for one run of tool:
// "<tool>:<UTC time>-<8 random hex digits>:", e.g.
// "rlbench:20261129T194000-1a2b3c4d:". Two runs never share one.
func NewPrefix(tool string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return tool + ":" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:]) + ":"
}

package workload

import "github.com/rlbench/rlbench/keyspace"

// KeyNames returns the n counter names of a run under prefix: KeyName of
// 0 to n-1.
func KeyNames(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = KeyName(prefix, i)
	}
	return keys
}

// KeyName returns the name of counter i under prefix, a cell's prefix
// (keyspace.Cell): prefix{i} (keyspace.Key). The {hash-tag} puts
// everything one decision touches in one cluster slot.
func KeyName(prefix string, i int) string { return keyspace.Key(prefix, i) }

// KeyTable returns the table of a run's first key names that its
// KeyNamers share: KeyNames of the first min(n, KeyTableMax).
func KeyTable(prefix string, n int) []string {
	return KeyNames(prefix, min(n, KeyTableMax))
}

// KeyNamer gives one goroutine the names of a run's keys: from the run's
// shared table (KeyTable) for the first KeyTableMax, built in the
// goroutine's own buffer beyond it, so that memory does not grow with the
// key count. A KeyNamer is not safe for concurrent use.
type KeyNamer struct {
	prefix string
	table  []string
	buf    []byte
}

// NewKeyNamer returns a KeyNamer of the keys under prefix; table is the
// run's KeyTable(prefix, keys), shared by all its KeyNamers.
func NewKeyNamer(prefix string, table []string) KeyNamer {
	return KeyNamer{prefix: prefix, table: table}
}

// Name returns KeyName(prefix, i).
func (n *KeyNamer) Name(i int) string {
	if i < len(n.table) {
		return n.table[i]
	}
	n.buf = keyspace.AppendKey(n.buf[:0], n.prefix, i)
	// A copy, not the buffer itself: a client may still hold the name
	// after Decide returns (rueidis writes a command whose caller's
	// context ended later, from its queue).
	return string(n.buf)
}

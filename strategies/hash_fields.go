package strategies

import (
	"math/rand/v2"
	"strconv"
)

// FieldName returns the name of field i of a key's hash under a hash-field
// strategy: "f0", "f1", ... (one per endpoint).
func FieldName(i int) string { return "f" + strconv.Itoa(i) }

// fieldSet is the fields a hash-field strategy spreads a key's requests
// over, named once when the strategy is built.
type fieldSet []string

// newFieldSet names n fields.
func newFieldSet(n int) fieldSet {
	fs := make(fieldSet, n)
	for i := range fs {
		fs[i] = FieldName(i)
	}
	return fs
}

// pick returns the index of the field of the next decision: uniform over
// the set, from the runtime's per-thread random source, so that concurrent
// decisions share no lock.
func (fs fieldSet) pick() int {
	if len(fs) == 1 {
		return 0
	}
	return rand.IntN(len(fs))
}

package topology

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/excerpt"
	"github.com/rlbench/rlbench/keyspace"
)

// ACLUserPrefix starts the name of every temporary ACL user a run makes.
const ACLUserPrefix = "rlbench-run-"

// CodeDigest is what the record of a library holds: the SHA-1 of its
// code, in hex.
func CodeDigest(code string) string {
	sum := sha1.Sum([]byte(code))
	return hex.EncodeToString(sum[:])
}

// RecordObject records, before the run makes it, the object kind name
// (value: what the record holds) of the run whose prefix on t is prefix,
// in keyspace.ObjectKey; ForgetObject deletes the record once the object
// is deleted, so that a run killed with SIGKILL leaves a record of each
// object it leaves, which rlbench cleanup deletes (cleanObjects): a
// temporary ACL user (keyspace.ObjectACLUser, whose record holds nothing)
// only when its name starts with ACLUserPrefix and every key pattern it
// has lies under the prefix; a library of Redis Functions
// (keyspace.ObjectLibrary, whose record holds the SHA-1 of its code, CodeDigest)
// only where it holds that code.
func (t *Target) RecordObject(ctx context.Context, prefix, kind, name, value string) error {
	key := keyspace.ObjectKey(prefix, kind, name)
	if err := t.Admin.Set(ctx, key, value, 0).Err(); err != nil {
		return fmt.Errorf("set %s (the record of the %s, for rlbench cleanup): %w", key, kind, err)
	}
	return nil
}

// ForgetObject deletes the record of an object the run has deleted (or
// never made).
func (t *Target) ForgetObject(ctx context.Context, prefix, kind, name string) error {
	key := keyspace.ObjectKey(prefix, kind, name)
	if err := t.Admin.Del(ctx, key).Err(); err != nil {
		return fmt.Errorf("del %s: %w", key, err)
	}
	return nil
}

// LeftObject is an object a killed run left, which rlbench cleanup found
// by its record under the prefix.
type LeftObject struct {
	// Kind is keyspace.ObjectACLUser or ObjectLibrary; Name the user's or the
	// library's; Record the key that records it.
	Kind, Name, Record string
	// Node is the master that holds it.
	Node string
	// Deleted is set once cleanup deleted it; Kept says why it did not
	// (not the run's, or the deletion failed), "" otherwise.
	Deleted bool
	Kept    string
}

// String says what became of o, for cleanup's output.
func (o LeftObject) String() string {
	what := fmt.Sprintf("%s %q on %s", o.Kind, o.Name, o.Node)
	switch {
	case o.Deleted:
		return what + ": deleted"
	case o.Kept != "":
		return what + ": kept: " + o.Kept
	}
	return what
}

// findObjects returns the objects recorded under prefix on every master
// of t that still exist there, each checked as the run's (objectOf): a
// record whose object is gone gives nothing.
func (t *Target) findObjects(ctx context.Context, prefix string) ([]LeftObject, error) {
	nodes, err := t.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Spec.Label, err)
	}
	var records []string
	match := audit.MatchPattern(prefix) + keyspace.ObjectName + "*"
	for _, n := range nodes {
		if err := scanNode(ctx, n, match, prefix, func(key string) { records = append(records, key) }); err != nil {
			return nil, fmt.Errorf("%s: scan %s: %w", t.Spec.Label, n.Options().Addr, err)
		}
	}
	var out []LeftObject
	for _, record := range records {
		kind, name, ok := keyspace.ParseObjectKey(record[len(prefix):])
		if !ok {
			continue
		}
		value, err := t.Admin.Get(ctx, record).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("%s: get %s: %w", t.Spec.Label, record, err)
		}
		for _, n := range nodes {
			o := LeftObject{Kind: kind, Name: name, Record: record, Node: n.Options().Addr}
			found, kept, err := objectOf(ctx, n, o, prefix, value)
			if err != nil {
				return out, fmt.Errorf("%s: %s: %w", t.Spec.Label, o, err)
			}
			if found {
				o.Kept = kept
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// objectOf looks for o on n: whether it is there, and why it is not the
// run's to delete ("" when it is): a user must be named ACLUserPrefix...
// and hold only key patterns under prefix (ACL LIST); a library must hold
// the code whose digest its record holds (FUNCTION LIST WITHCODE).
func objectOf(ctx context.Context, n *redis.Client, o LeftObject, prefix, digest string) (found bool, kept string, err error) {
	if o.Kind == keyspace.ObjectLibrary {
		libs, err := n.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: o.Name, WithCode: true}).Result()
		if err != nil {
			return false, "", fmt.Errorf("function list: %w", err)
		}
		for _, l := range libs {
			if l.Name != o.Name {
				continue
			}
			if CodeDigest(l.Code) != digest {
				return true, "its code is not the one the run loaded (another's library of that name)", nil
			}
			return true, "", nil
		}
		return false, "", nil
	}
	lines, err := n.Do(ctx, "ACL", "LIST").StringSlice()
	if err != nil {
		return false, "", fmt.Errorf("acl list: %w", err)
	}
	for _, line := range lines {
		words := strings.Fields(line)
		if len(words) < 2 || words[0] != "user" || words[1] != o.Name {
			continue
		}
		if !strings.HasPrefix(o.Name, ACLUserPrefix) {
			return true, "its name does not start with " + ACLUserPrefix, nil
		}
		if why := foreignKeys(words[2:], prefix); why != "" {
			return true, why, nil
		}
		return true, "", nil
	}
	return false, "", nil
}

// foreignKeys says which key rule of an ACL user (the words of its ACL
// LIST line after its name) reaches beyond prefix, or that it has a
// selector, or "" when none does and there is at least one.
func foreignKeys(rules []string, prefix string) string {
	under := strings.TrimSuffix(audit.MatchPattern(prefix), "*")
	patterns := 0
	for _, r := range rules {
		if r == "allkeys" {
			return "it may touch every key (allkeys)"
		}
		if strings.HasPrefix(r, "(") {
			// A selector (Redis 7), whose key patterns are its own: a
			// run never gives its user one.
			return "it has a selector, which a run's user never has"
		}
		i := strings.Index(r, "~")
		if i < 0 || !(i == 0 || r[0] == '%') {
			continue
		}
		patterns++
		if !strings.HasPrefix(r[i+1:], under) {
			return fmt.Sprintf("its key pattern %s reaches beyond the prefix", excerpt.Text(r))
		}
	}
	if patterns == 0 {
		return "it has no key pattern under the prefix"
	}
	return ""
}

// cleanObjects deletes each of objs that is the run's (Kept ""): ACL
// DELUSER, FUNCTION DELETE, on its node.
func (t *Target) cleanObjects(ctx context.Context, objs []LeftObject) error {
	nodes, err := t.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", t.Spec.Label, err)
	}
	var errs []error
	for i := range objs {
		o := &objs[i]
		if o.Kept != "" {
			continue
		}
		for _, n := range nodes {
			if n.Options().Addr != o.Node {
				continue
			}
			if o.Kind == keyspace.ObjectLibrary {
				err = n.FunctionDelete(ctx, o.Name).Err()
			} else {
				err = n.Do(ctx, "ACL", "DELUSER", o.Name).Err()
			}
			if err != nil {
				o.Kept = "the deletion failed: " + err.Error()
				errs = append(errs, fmt.Errorf("%s: %s: %w", t.Spec.Label, o, err))
				continue
			}
			o.Deleted = true
		}
	}
	return errors.Join(errs...)
}

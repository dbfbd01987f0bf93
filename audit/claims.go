package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/keyspace"
)

// Claim is a load run's claim on a prefix, found on a server: the key
// (keyspace.ClaimKey) and its value, the run's (keyspace.IsClaimValue).
// A claim there is a live run's: a killed run's expires within 30 s.
type Claim struct {
	// Key is the claim's key; Value names the run that holds it.
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Prefix is the prefix the claim holds.
func (c Claim) Prefix() string { return keyspace.ClaimPrefix(c.Key) }

// Covers reports whether key lies under the claim's prefix.
func (c Claim) Covers(key string) bool { return strings.HasPrefix(key, c.Prefix()) }

// FindClaims returns the runs' claims on nodes whose prefix starts with
// under ("" for every claim): SCAN MATCH MatchPattern(under)+keyspace.ClaimName,
// COUNT DefaultCount, then GETRANGE of each key found, which must hold a
// claim's value (a key of another type, or one the user may not read, is
// none). wait, when not nil, is called before each SCAN with the
// keys it will walk (the audit's pace). It reads only.
func FindClaims(ctx context.Context, nodes []Node, under string, wait func(ctx context.Context, keys int) error) ([]Claim, error) {
	match := "*" + keyspace.ClaimName
	if under != "" {
		match = MatchPattern(under) + keyspace.ClaimName
	}
	var claims []Claim
	seen := map[string]bool{}
	for _, n := range nodes {
		var cursor uint64
		for {
			if wait != nil {
				if err := wait(ctx, DefaultCount); err != nil {
					return claims, err
				}
			}
			keys, next, err := n.Scan(ctx, cursor, match, DefaultCount).Result()
			if err != nil {
				return claims, fmt.Errorf("%s: scan match %s: %w", addrOf(n), match, err)
			}
			found, err := claimsAmong(ctx, n, keys, under)
			if err != nil {
				return claims, fmt.Errorf("%s: %w", addrOf(n), err)
			}
			for _, c := range found {
				if !seen[c.Key] {
					seen[c.Key] = true
					claims = append(claims, c)
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return claims, nil
}

// claimsAmong reads the keys of n among keys that lie under under and end
// like a claim (keyspace.IsClaimKey), and returns those that hold a run's claim.
func claimsAmong(ctx context.Context, n Node, keys []string, under string) ([]Claim, error) {
	pipe := n.Pipeline()
	var names []string
	var values []*redis.StringCmd
	for _, k := range keys {
		if strings.HasPrefix(k, under) && keyspace.IsClaimKey(k) {
			names = append(names, k)
			values = append(values, pipe.GetRange(ctx, k, 0, keyspace.MaxClaimValue))
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	_, _ = pipe.Exec(ctx)
	var claims []Claim
	for i, cmd := range values {
		v, err := cmd.Result()
		switch {
		case err != nil && !strings.HasPrefix(err.Error(), "WRONGTYPE") && !strings.HasPrefix(err.Error(), "NOPERM"):
			// Another type is no claim; a key the user may not read
			// is none of the keys it may write either.
			return nil, fmt.Errorf("getrange %s: %w", names[i], err)
		case err == nil && keyspace.IsClaimValue(v):
			claims = append(claims, Claim{Key: names[i], Value: v})
		}
	}
	return claims, nil
}

// findLive finds, before a fix (Options.FixTTL), the live runs' claims on
// every node, at the audit's pace, into a.live and rep.Claims: the keys
// under them are those runs', mid-measurement, and the fix leaves them
// out.
func (a *auditor) findLive(ctx context.Context, nodes []Node, rep *Report) error {
	if a.o.FixTTL == 0 {
		return nil
	}
	var err error
	if a.live, err = FindClaims(ctx, nodes, "", a.pace.wait); err != nil {
		rep.Error = err.Error()
		return fmt.Errorf("the live runs' claims, before the fix: %w", err)
	}
	rep.Claims = a.live
	return nil
}

// underClaim reports whether key lies under a live run's claim (a.live).
func (a *auditor) underClaim(key string) bool {
	for _, c := range a.live {
		if c.Covers(key) {
			return true
		}
	}
	return false
}

// leaveOutClaims reads the value of each key of a.claims (GETRANGE, the
// first keyspace.MaxClaimValue bytes) and adds to a.keys those that are not a
// run's claim (keyspace.IsClaimValue): a tenant's key that only ends like one is
// audited. A key of another type (WRONGTYPE) is not a claim.
func (a *auditor) leaveOutClaims(ctx context.Context, n Node, nr *NodeReport) error {
	if len(a.claims) == 0 {
		return nil
	}
	values := make([]*redis.StringCmd, len(a.claims))
	cmds, err := a.read(ctx, n, &a.lat[1], func(pipe redis.Pipeliner) {
		for i, key := range a.claims {
			values[i] = pipe.GetRange(ctx, key, 0, keyspace.MaxClaimValue)
		}
	})
	if err != nil {
		for _, c := range cmds {
			if cerr := c.Err(); cerr != nil && !strings.HasPrefix(cerr.Error(), "WRONGTYPE") {
				return fmt.Errorf("%s: %w", cmdName(c), cerr)
			}
		}
	}
	for i, key := range a.claims {
		if v, err := values[i].Result(); err != nil || !keyspace.IsClaimValue(v) {
			a.take(nr, key)
		}
	}
	return nil
}

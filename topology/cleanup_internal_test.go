package topology

import "testing"

// TestLooksLikeRunKey checks the shape of a run's keys under the prefix
// given to rlbench cleanup.
func TestLooksLikeRunKey(t *testing.T) {
	t.Parallel()
	const p = "rlbench:20261201T000000-0a1b2c3d:"
	for _, tc := range []struct {
		name, prefix, key string
		want              bool
	}{
		{"a cell's key", p, p + "lua:go-redis:{42}", true},
		{"the sliding log's second key", p, p + "sliding_log:rueidis:{7}:seq", true},
		{"a user strategy", p, p + "my.script-1:go-redis:{0}", true},
		{"the pre-flight's probe", p, p + "preflight", true},
		{"the claim", p, p + "rlbench-claim", true},
		{"the record of an ACL user", p, p + "rlbench-object:acl-user:rlbench-run-0a1b", true},
		{"the record of a library", p, p + "rlbench-object:library:mylib", true},
		{"a record of another kind", p, p + "rlbench-object:channel:x", false},
		{"envoy-ratelimit's stamped key", p, p + "envoy-ratelimit:go-redis:{5}_1764547200", true},
		{"kong's stamped key", p, p + "kong:rueidis:{5}:1764547200000:minute", true},
		{"rack-attack's window index", p, p + "rack-attack:go-redis:{5}:29409120", true},
		{"mennanov's stamped key", p, p + "mennanov:go-redis:{5}/1764547200000000000", true},
		{"django-ratelimit's hashed key", p, p + "django-ratelimit:go-redis:{5}:9f86d081884c7d65", true},
		{"spring-gateway's tokens", p, p + "spring-gateway:go-redis:{12}.tokens", true},
		{"spring-gateway's timestamp", p, p + "spring-gateway:rueidis:{12}.timestamp", true},
		{"a stamped sequence key", p, p + "mine:rueidis:{5}:1764547200", true},
		{"a tenant's key after {N}", p, p + "lua:go-redis:{5} extra", false},
		{"a shorter prefix", "rlbench:", p + "lua:go-redis:{42}", true},
		{"an unknown client", p, p + "lua:jedis:{42}", false},
		{"no {N}", p, p + "lua:go-redis:42", false},
		{"a tenant's key", "r", "rate:user:42", false},
		{"a tenant's hash-tagged key", "r", "ratelimit:user:{42}", false},
		{"the prefix alone", p, p, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := looksLikeRunKey(tc.prefix, tc.key); got != tc.want {
				t.Errorf("looksLikeRunKey(%q, %q) = %t; want %t", tc.prefix, tc.key, got, tc.want)
			}
		})
	}
}

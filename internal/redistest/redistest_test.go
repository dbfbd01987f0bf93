package redistest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/redistest"
)

func TestStartAndClient(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := t.Context()
	key := redistest.Prefix(t) + "k"
	if err := rdb.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
	if got, err := rdb.Get(ctx, key).Result(); got != "v" || err != nil {
		t.Errorf("GET %s = (%q, %v); want (v, nil)", key, got, err)
	}
}

func TestPrefix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		want string
	}{
		{name: "plain", want: "rlbench-test:TestPrefix_plain:"},
		{name: "keeps_underscore-and-dash_09", want: "rlbench-test:TestPrefix_keeps_underscore-and-dash_09:"},
		{name: "glob*?[chars]:and\\slash", want: "rlbench-test:TestPrefix_glob___chars__and_slash:"},
		{name: "unicode é {tag}", want: "rlbench-test:TestPrefix_unicode____tag_:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := redistest.Prefix(t); got != tc.want {
				t.Errorf("Prefix(%q) = %q; want %q", t.Name(), got, tc.want)
			}
		})
	}
}

// TestStartMissingBinaryFails runs itself in a child process with
// RLBENCH_REDIS_SERVER pointing nowhere and checks that the child fails loudly
// (not skips) with instructions.
func TestStartMissingBinaryFails(t *testing.T) {
	if os.Getenv("REDISTEST_CHILD") == "1" {
		redistest.Start(t)
		return
	}
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-such-redis-server")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestStartMissingBinaryFails$", "-test.v")
	cmd.Env = append(os.Environ(), "REDISTEST_CHILD=1", redistest.BinaryEnv+"="+missing)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("child with %s=%s passed; want it to fail:\n%s", redistest.BinaryEnv, missing, out)
	}
	for _, want := range []string{"--- FAIL", "scripts/test.sh", "apt-get install redis-server", missing} {
		if !strings.Contains(string(out), want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Errorf("child skipped; want a failure:\n%s", out)
	}
}

// TestKeysUnder checks that KeysUnder returns the keys that start with its
// prefix, sorted, and takes a prefix's glob characters as themselves.
func TestKeysUnder(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t, redistest.Start(t))
	for _, k := range []string{"p:b", "p:a", "p*x", "q:c"} {
		if err := rdb.Set(t.Context(), k, 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{prefix: "p:", want: []string{"p:a", "p:b"}},
		{prefix: "p*", want: []string{"p*x"}},
		{prefix: "", want: []string{"p*x", "p:a", "p:b", "q:c"}},
		{prefix: "r", want: nil},
	} {
		if got := redistest.KeysUnder(t, rdb, tc.prefix); !slices.Equal(got, tc.want) {
			t.Errorf("KeysUnder(%q) = %q; want %q", tc.prefix, got, tc.want)
		}
	}
}

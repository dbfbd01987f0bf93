package verify

import (
	"testing"

	"github.com/rlbench/rlbench/strategies"
)

// TestRowUnsupported checks that a strategy the server's version cannot run
// fills its row with unsupported and the reason, without connecting.
func TestRowUnsupported(t *testing.T) {
	t.Parallel()
	info, err := strategies.Lookup("multi-nx")
	if err != nil {
		t.Fatal(err)
	}
	r := &row{
		cfg:    Config{}.withDefaults(),
		info:   info,
		client: "go-redis",
		server: Server{Addr: "127.0.0.1:1", Name: "redis", Version: "6.2.16", RedisVersion: "6.2.16", Managed: true},
		cells:  make([]Cell, len(allChecks)),
	}
	r.run(t.Context(), false)
	r.run(t.Context(), true)
	const note = "multi-nx needs Redis >= 7.0.0; server is redis 6.2.16"
	for i, c := range r.cells {
		if c.Check != allChecks[i].Name || c.Outcome != Unsupported || c.Note != note {
			t.Errorf("cell %d = %+v; want {Check:%s Outcome:unsupported Note:%s}", i, c, allChecks[i].Name, note)
		}
	}
}

package clients_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/strategies"
)

// TestFunctionLoadRefusesForeignLibrary loads a user's library named
// rlbench, then has each client load rlbench's: both refuse with
// ErrForeignLibrary and leave the user's library as it was; with the
// user's library gone, both load rlbench's, and loading it again (same
// code) is allowed.
func TestFunctionLoadRefusesForeignLibrary(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	const foreign = "#!lua name=" + strategies.FunctionLibrary + "\n" +
		"redis.register_function('users_own', function(keys, args) return 42 end)\n"
	if err := rdb.FunctionLoad(ctx, foreign).Err(); err != nil {
		t.Fatalf("FUNCTION LOAD of the user's library: %v", err)
	}
	s, err := strategies.New("function", strategies.Config{Limit: 3, Window: 10})
	if err != nil {
		t.Fatal(err)
	}
	p := s.(strategies.Preparer)
	for _, cname := range clients.Names {
		c, err := clients.New(cname, clients.Options{Addr: srv.Addr()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := p.Prepare(ctx, c); !errors.Is(err, strategies.ErrForeignLibrary) {
			t.Errorf("%s: Prepare over a foreign library = %v; want ErrForeignLibrary", cname, err)
		}
		libs, err := rdb.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: strategies.FunctionLibrary, WithCode: true}).Result()
		if err != nil || len(libs) != 1 || libs[0].Code != foreign {
			t.Errorf("%s: after Prepare, FUNCTION LIST = %+v, %v; want the user's library untouched", cname, libs, err)
		}
	}
	if err := rdb.FunctionDelete(ctx, strategies.FunctionLibrary).Err(); err != nil {
		t.Fatal(err)
	}
	for _, cname := range clients.Names {
		c, err := clients.New(cname, clients.Options{Addr: srv.Addr()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := p.Prepare(ctx, c); err != nil {
			t.Errorf("%s: Prepare with no library, or rlbench's own = %v; want nil", cname, err)
		}
	}
}

package clients_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/strategies"
)

// testLibrary echoes its call back: the number of keys, the number of
// arguments, then each argument as an integer.
const testLibrary = `#!lua name=clients_test
redis.register_function('clients_test_echo', function(keys, args)
  local r = {#keys, #args}
  for _, a in ipairs(args) do
    r[#r + 1] = tonumber(a)
  end
  return r
end)
`

// TestFunctions checks FunctionLoad and FCallInts on every client against
// a real server: a library loads (and loads again, replacing itself), a
// function receives its keys and arguments and returns integers, and the
// server's error replies come back as strategies.ReplyError.
func TestFunctions(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, cname := range clients.Names {
		t.Run(cname, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c, err := clients.New(cname, clients.Options{Addr: srv.Addr()})
			if err != nil {
				t.Fatalf("New(%q) error: %v", cname, err)
			}
			defer c.Close()

			for i := range 2 { // the second load replaces the first
				if err := c.FunctionLoad(ctx, testLibrary); err != nil {
					t.Fatalf("FunctionLoad #%d error: %v", i+1, err)
				}
			}
			prefix := redistest.Prefix(t)
			tests := []struct {
				name string
				keys []string
				args []string
				want []int64
			}{
				{"no keys or args", nil, nil, []int64{0, 0}},
				{"keys and args", []string{prefix + "{a}", prefix + "{a}:b"}, []string{"7", "-3"}, []int64{2, 2, 7, -3}},
			}
			for _, tc := range tests {
				got, err := c.FCallInts(ctx, "clients_test_echo", tc.keys, strategies.NewArgs(tc.args...))
				if err != nil || !slices.Equal(got, tc.want) {
					t.Errorf("%s: FCallInts(echo, %q, %q) = %v, %v; want %v", tc.name, tc.keys, tc.args, got, err, tc.want)
				}
			}

			var re strategies.ReplyError
			_, err = c.FCallInts(ctx, "clients_test_missing", nil, strategies.Args{})
			if !errors.As(err, &re) || re.Prefix() != "ERR" {
				t.Errorf("FCallInts(missing) error = %v; want a ReplyError with prefix ERR", err)
			}
			err = c.FunctionLoad(ctx, "#!lua name=clients_test_bad\nthis is not lua")
			if !errors.As(err, &re) || re.Prefix() != "ERR" {
				t.Errorf("FunctionLoad(bad code) error = %v; want a ReplyError with prefix ERR", err)
			}
		})
	}
}

// TestReplyErrors checks that both clients return the server's error reply
// as sent, as a strategies.ReplyError: the same message and the same Prefix
// whichever client received it (rueidis drops a leading "ERR " that the
// adapter puts back).
func TestReplyErrors(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	ctx := context.Background()
	prefix := redistest.Prefix(t)
	hash, text := prefix+"hash", prefix+"text"
	if err := rdb.HSet(ctx, hash, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, text, "abc", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func(c clients.Conn) error
		want string
	}{
		{
			name: "INCR on a hash",
			call: func(c clients.Conn) error { _, err := c.Incr(ctx, hash); return err },
			want: "WRONGTYPE Operation against a key holding the wrong kind of value",
		},
		{
			name: "INCR on a non-integer",
			call: func(c clients.Conn) error { _, err := c.Incr(ctx, text); return err },
			want: "ERR value is not an integer or out of range",
		},
		{
			name: "FCALL of a missing function",
			call: func(c clients.Conn) error {
				_, err := c.FCallInts(ctx, "clients_test_missing", nil, strategies.Args{})
				return err
			},
			want: "ERR Function not found",
		},
		{
			name: "script error reply",
			call: func(c clients.Conn) error {
				_, err := c.EvalInts(ctx, strategies.NewScript("return redis.error_reply('NOPERM test')"), nil, strategies.Args{})
				return err
			},
			want: "NOPERM test",
		},
	}
	for _, cname := range clients.Names {
		c, err := clients.New(cname, clients.Options{Addr: srv.Addr()})
		if err != nil {
			t.Fatalf("New(%q) error: %v", cname, err)
		}
		defer c.Close()
		for _, tc := range tests {
			err := tc.call(c)
			var re strategies.ReplyError
			if !errors.As(err, &re) || string(re) != tc.want {
				t.Errorf("%s: %s error = %#v; want ReplyError(%q)", cname, tc.name, err, tc.want)
			}
		}
	}
}

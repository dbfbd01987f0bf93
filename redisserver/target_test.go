package redisserver

import (
	"errors"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/porttest"
)

// TestOpen checks each of Open's three ways to a server, and who closes
// what.
func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	started, err := Open(ctx, TargetOptions{})
	if err != nil {
		t.Fatalf("Open(private) error: %v", err)
	}
	if started.Private == nil || started.Addr != started.Private.Addr() || started.Info.Version == "" {
		t.Errorf("Open(private) = %+v; want a private server with its address and version", started)
	}

	given, err := Open(ctx, TargetOptions{Server: started.Private})
	if err != nil || given.Private != started.Private {
		t.Fatalf("Open(Server) = %+v, %v; want the given server", given, err)
	}
	if err := given.Close(); err != nil {
		t.Fatal(err)
	}
	at, err := Open(ctx, TargetOptions{Addr: started.Addr})
	if err != nil || at.Private != nil || at.Info != started.Info {
		t.Fatalf("Open(Addr) = %+v, %v; want the server at the address, not private", at, err)
	}
	// Closing a target Open did not start leaves the server running.
	if _, err := Probe(ctx, started.Addr, "", 0); err != nil {
		t.Errorf("Probe after closing a given target = %v; want the server still up", err)
	}

	if err := started.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Probe(ctx, started.Addr, "", 0); err == nil {
		t.Errorf("Probe after closing the started target succeeded; want the server stopped")
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	addr := porttest.Refused(t)
	if _, err := Open(t.Context(), TargetOptions{Addr: addr}); err == nil || !strings.Contains(err.Error(), "leave out --addr") {
		t.Errorf("Open(closed port) error = %v; want one that says what to do", err)
	}
	_, err := Open(t.Context(), TargetOptions{Start: Options{Binary: "/nonexistent/redis-server"}})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("Open(missing binary) error = %v; want ErrNotFound", err)
	}
}

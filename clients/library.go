package clients

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/rlbench/rlbench/strategies"
)

// Library is what a client did with one library of Redis Functions that
// FunctionLoad was given.
type Library struct {
	// Name is the library's name, from its "#!lua name=" line.
	Name string
	// Loaded is true when the client loaded it (FUNCTION LOAD) on at least
	// one master where it was absent; false when every master held it,
	// with the same code, already: it is someone else's, left as it was.
	Loaded bool
	// Reloads counts the loads after the client's first FunctionLoad of
	// it, each when the library had vanished meanwhile: a FUNCTION FLUSH
	// or FUNCTION DELETE by another client, or a restart without
	// persistence. A reload makes it Loaded.
	Reloads int64
	// Deleted is true once DeleteLibraries removed it (FUNCTION DELETE)
	// from every master that held it with its code.
	Deleted bool
}

// functionNode is one master as an adapter reaches it, for the library
// bookkeeping shared by both adapters.
type functionNode interface {
	// addr is the node's address for errors; "" for a single server.
	addr() string
	// libraryCode returns the code of the library name on the node (FUNCTION
	// LIST LIBRARYNAME name WITHCODE); "" when it is not loaded.
	libraryCode(ctx context.Context, name string) (string, error)
	// load sends FUNCTION LOAD code, which fails if a library of its name
	// is there.
	load(ctx context.Context, code string) error
	// delete sends FUNCTION DELETE name.
	delete(ctx context.Context, name string) error
}

// libraries is an adapter's record of the libraries it was given. Its
// zero value is empty and ready; its lock also keeps the workers that find
// a library gone at once from each loading it.
type libraries struct {
	mu   sync.Mutex
	libs []*library
	// beforeLoad is Options.BeforeLoad.
	beforeLoad func(ctx context.Context, name, code string) error
}

type library struct {
	Library
	code string
}

// load loads code on every node where its library is absent, refusing
// (strategies.ErrForeignLibrary, before any load on that node) one that
// holds a library of that name with other code, and records what it did.
func (l *libraries) load(ctx context.Context, code string, nodes []functionNode) error {
	name := strategies.LibraryName(code)
	l.mu.Lock()
	defer l.mu.Unlock()
	loaded := false
	var err error
	for _, n := range nodes {
		var did bool
		did, err = loadOn(ctx, n, name, code, l.beforeLoad)
		if err != nil {
			if n.addr() != "" {
				err = fmt.Errorf("%s: %w", n.addr(), err)
			}
			break
		}
		loaded = loaded || did
	}
	if err != nil && !loaded {
		return err
	}
	// Loaded on some nodes at least (a cluster whose later master
	// failed): recorded, so that DeleteLibraries deletes it there too.
	lib := l.find(name)
	if lib == nil {
		lib = &library{Library: Library{Name: name}, code: code}
		l.libs = append(l.libs, lib)
	} else if loaded {
		lib.Reloads++
	}
	lib.code = code
	if loaded {
		lib.Loaded, lib.Deleted = true, false
	}
	return err
}

// find returns the record of the library name, nil when there is none.
func (l *libraries) find(name string) *library {
	for _, lib := range l.libs {
		if lib.Name == name {
			return lib
		}
	}
	return nil
}

// loadOn loads code on n unless the library name is there with the same
// code, calling before first (Options.BeforeLoad): whether it loaded it. A library of that name loaded by another
// client between the FUNCTION LIST and the FUNCTION LOAD is looked at
// again, never replaced.
func loadOn(ctx context.Context, n functionNode, name, code string, before func(ctx context.Context, name, code string) error) (bool, error) {
	for range 2 {
		got, err := n.libraryCode(ctx, name)
		if err != nil {
			return false, fmt.Errorf("function list: %w", err)
		}
		if got != "" {
			return false, strategies.CheckLibrary(name, code, got)
		}
		if before != nil {
			if err := before(ctx, name, code); err != nil {
				return false, err
			}
		}
		err = n.load(ctx, code)
		switch {
		case err == nil:
			return true, nil
		case isReplyPrefix(err, "READONLY"):
			// A master that has become a replica since: it gets the
			// library by replication.
			return false, nil
		case !strings.Contains(err.Error(), "already exists"):
			return false, err
		}
	}
	return false, fmt.Errorf("function load: library %q came and went twice", name)
}

// deleteLoaded deletes each library the client loaded from every node that
// holds it with its code (one that holds other code is not the client's to
// delete), and returns every library FunctionLoad was given. It calls
// nodes only when there is a library to delete.
func (l *libraries) deleteLoaded(ctx context.Context, nodes func(context.Context) ([]functionNode, error)) ([]Library, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	out := make([]Library, 0, len(l.libs))
	var masters []functionNode
	for _, lib := range l.libs {
		if lib.Loaded && !lib.Deleted {
			var err error
			if masters == nil {
				masters, err = nodes(ctx)
			}
			if err == nil {
				err = deleteFrom(ctx, masters, lib.Name, lib.code)
			}
			lib.Deleted = err == nil
			errs = append(errs, err)
		}
		out = append(out, lib.Library)
	}
	return out, errors.Join(errs...)
}

// deleteFrom deletes the library name from every node of nodes that holds
// it with code.
func deleteFrom(ctx context.Context, nodes []functionNode, name, code string) error {
	var errs []error
	for _, n := range nodes {
		got, err := n.libraryCode(ctx, name)
		if err == nil && got == code {
			err = n.delete(ctx, name)
		}
		if err != nil && !strings.Contains(err.Error(), "Library not found") {
			where := "function delete " + name
			if n.addr() != "" {
				where = n.addr() + ": " + where
			}
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
	}
	return errors.Join(errs...)
}

// isReplyPrefix reports whether err is a server reply that starts with
// prefix.
func isReplyPrefix(err error, prefix string) bool {
	re, ok := errors.AsType[strategies.ReplyError](err)
	return ok && strings.HasPrefix(string(re), prefix)
}

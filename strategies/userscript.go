package strategies

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/rlbench/rlbench/excerpt"
	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// A user strategy is a Lua script (--script NAME=FILE) or a Redis Functions
// library (--function NAME=FILE) registered at run time, unchanged. The
// contract:
//
//   - KEYS[1] is the counter key. It carries the cell's {N} hash tag, so
//     keys derived from it by appending stay in its cluster slot, and under
//     the cell's prefix.
//   - ARGV[1] is the limit (--limit), ARGV[2] the window in whole seconds
//     (--window).
//   - The reply is an array of integers: the first is 1 (allowed) or 0
//     (rejected), an optional second is the count the decision was based on.
//     A bare integer reply is the count alone (as python-limits' and
//     Kong's scripts return): the request is allowed when it is at most
//     the limit.
//
// A header line declares what the script claims, e.g.
//
//	-- rlbench: atomic heals fixed-window
//
// and becomes its Info, which says what rlbench verify and the load run
// expect. Claims do not choose the checks: a script that claims nothing
// is checked as a fixed-window counter, the strictest reading (every
// check and figure that can run on one), unless it claims sliding (its
// window moves with traffic by design: a sliding log, a token bucket,
// GCRA). A leak, an over-admission or a window that traffic extends is a
// failure whatever the script claims. A script is run with
// EVALSHA and the EVAL fallback; a function with FCALL NAME after FUNCTION
// LOAD of its library on every master.

// ClaimsHeader starts the line of a user strategy that declares its claims.
const ClaimsHeader = "-- rlbench:"

// Claims lists the words a claims header accepts.
var Claims = []string{"atomic", "heals", "fixed-window", "sliding"}

// checkClaims refuses claims that contradict each other: heals and
// fixed-window are claims about a fixed-window counter, sliding says the
// strategy keeps none. It returns the reason, or "".
func checkClaims(claims map[string]bool) string {
	switch {
	case claims["heals"] && !claims["fixed-window"]:
		return "heals is a claim about a fixed-window counter; claim fixed-window too"
	case claims["sliding"] && claims["fixed-window"]:
		return "sliding and fixed-window contradict each other: claim the one the window does"
	}
	return ""
}

// checkedAsFixedWindow reports whether a user strategy with claims, whose
// keys carry stamp (see Info.Stamp), is checked as a fixed-window counter
// (Info.FixedWindow): when it claims to be one, and when it claims nothing
// of its window and its key carries none.
func checkedAsFixedWindow(claims map[string]bool, stamp string) bool {
	return claims["fixed-window"] || (!claims["sliding"] && stamp == "")
}

// Sentinel errors of user strategies.
var (
	// ErrBadUserStrategy is returned for a NAME=FILE that cannot be
	// registered: a malformed spec, an unreadable file, a bad header.
	ErrBadUserStrategy = errors.New("bad user strategy")
	// ErrBadReply is returned by a user strategy's decision whose reply
	// breaks the contract.
	ErrBadReply = errors.New("reply breaks the contract: want an array {1|0, count?} or an integer count")
)

// userName is what a user strategy's name may be.
var userName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// RegisterScript registers the Lua script of spec, "NAME=FILE", as
// strategy NAME into r. Registering the same name and file again is
// allowed (it must read the same).
func (r *Registry) RegisterScript(spec string) error { return r.registerUser(spec, false) }

// RegisterFunction registers the Redis Functions library of spec,
// "NAME=FILE", as strategy NAME into r: it calls the library's function
// NAME.
func (r *Registry) RegisterFunction(spec string) error { return r.registerUser(spec, true) }

func (r *Registry) registerUser(spec string, function bool) error {
	name, file, ok := strings.Cut(spec, "=")
	if !ok || name == "" || file == "" {
		return fmt.Errorf("%w: %q: want NAME=FILE.lua", ErrBadUserStrategy, spec)
	}
	if !userName.MatchString(name) {
		return fmt.Errorf("%w: %q: a name is letters, digits, '_', '.' and '-'", ErrBadUserStrategy, name)
	}
	src, err := readUserFile(file)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadUserStrategy, file, err)
	}
	info, err := userInfo(name, file, string(src), function)
	if err != nil {
		return err
	}
	if old, err := r.Lookup(name); err == nil && old.Source == file && old.Commands == info.Commands && sameSource(old, info) {
		return nil
	}
	return r.add(info)
}

// MaxUserFileBytes is the largest file of user code (--script,
// --function) rlbench reads, 1 MiB: a limiter's script is a few KiB, and
// the cap keeps a wrong path (a log, an image) from filling the memory,
// as the report reader's cap does (results.MaxReportBytes).
const MaxUserFileBytes = 1 << 20

// ErrNotRegularFile is returned, with ErrBadUserStrategy, for a file of
// user code that is not a regular file: a directory, a device (/dev/zero),
// a FIFO, a socket.
var ErrNotRegularFile = errors.New("not a regular file")

// ErrUserFileTooLarge is returned, with ErrBadUserStrategy, for a file of
// user code larger than MaxUserFileBytes.
var ErrUserFileTooLarge = fmt.Errorf("larger than the %d KiB a file of user code may be", MaxUserFileBytes>>10)

// readUserFile reads a file of user code: a regular file only, of
// MaxUserFileBytes at most. It opens without blocking (O_NONBLOCK: a FIFO
// with no writer would otherwise hold the open, deaf to signals) and looks
// at what it opened before it reads: a device such as /dev/zero never ends.
func readUserFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%s): give the path of a .lua file", ErrNotRegularFile, fileKind(st.Mode()))
	}
	if st.Size() > MaxUserFileBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrUserFileTooLarge, st.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxUserFileBytes+1)) // it may grow as it is read
	if err != nil {
		return nil, err
	}
	if len(data) > MaxUserFileBytes {
		return nil, fmt.Errorf("%w: it grew past it as it was read", ErrUserFileTooLarge)
	}
	return data, nil
}

// fileKind names what a file that is not regular is.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// userInfo builds the Info of a user strategy from its source.
func userInfo(name, file, src string, function bool) (Info, error) {
	chunk, err := checkSyntax(file, src)
	if err != nil {
		return Info{}, err
	}
	calls, err := confineCheck(file, chunk, function)
	if err != nil {
		return Info{}, err
	}
	if err := checkShebang(file, src, function); err != nil {
		return Info{}, err
	}
	claims, err := parseClaims(file, src)
	if err != nil {
		return Info{}, err
	}
	u := &user{name: name, file: file, src: src}
	info := Info{
		Name:        name,
		Atomic:      claims["atomic"],
		Heals:       claims["heals"],
		FixedWindow: checkedAsFixedWindow(claims, ""),
		Keys:        "K, and keys made from K by appending",
		Source:      file,
		Calls:       calls,
	}
	if function {
		lib := LibraryName(src)
		if lib == "" {
			return Info{}, fmt.Errorf("%w: %s: a Functions library starts with #!lua name=LIBRARY", ErrBadUserStrategy, file)
		}
		u.function = true
		info.Summary = fmt.Sprintf("user function %s of library %s (%s); claims: %s", name, lib, file, claimText(claims))
		info.Commands = fmt.Sprintf("FCALL %s (FUNCTION LOAD of %s before the run where it is absent, FUNCTION DELETE after it)", name, file)
		info.MinRedis = "7.0.0"
	} else {
		u.script = NewScript(src)
		info.Summary = fmt.Sprintf("user script %s; claims: %s", file, claimText(claims))
		info.Commands = fmt.Sprintf("EVALSHA (EVAL on NOSCRIPT) of %s", file)
		info.EVALSHA = true
		info.MinRedis = "2.6.0"
	}
	info.New = func(c Config) Strategy {
		s := *u
		s.args = NewArgs(strconv.FormatInt(c.Limit, 10), strconv.FormatInt(c.Window, 10))
		s.limit = c.Limit
		if s.function {
			return &userFunction{&s}
		}
		return &s
	}
	return info, nil
}

// checkSyntax parses src as Lua (gopher-lua's parser, of Lua 5.1, which
// Redis runs), so that a script that does not compile is refused with the
// other bad input, before the run touches Redis, naming its line. A first
// line "#!..." (a Functions library's, or a script's flags) is Redis's, not
// Lua's: it is left out, the line numbers kept. What compiles here may
// still fail at Redis (a call Redis does not have, or Lua 5.2's goto);
// that shows at the first decision. One thing Redis takes is refused here:
// a hexadecimal float (0x1p4), which Redis's Lua reads through the C
// library's strtod. It returns the parsed chunk.
func checkSyntax(file, src string) ([]ast.Stmt, error) {
	if strings.HasPrefix(src, "#!") {
		_, rest, _ := strings.Cut(src, "\n")
		src = "\n" + rest
	}
	// Lua 5.1 takes a form feed or a vertical tab as a space; gopher-lua
	// does not. In a string either is a character, as a space is.
	src = strings.NewReplacer("\f", " ", "\v", " ").Replace(src)
	chunk, err := parse.Parse(strings.NewReader(src), file)
	var pe *parse.Error
	switch {
	case err == nil:
		return chunk, nil
	case errors.As(err, &pe) && pe.Pos.Line == parse.EOF:
		return nil, fmt.Errorf("%w: %s does not compile as Lua: %s at the end of the file", ErrBadUserStrategy, file, pe.Message)
	case errors.As(err, &pe):
		return nil, fmt.Errorf("%w: %s:%d does not compile as Lua: %s near '%s'", ErrBadUserStrategy, file, pe.Pos.Line, pe.Message, pe.Token)
	}
	return nil, fmt.Errorf("%w: %s does not compile as Lua: %s", ErrBadUserStrategy, file, strings.TrimSpace(err.Error()))
}

// sameSource reports whether two Infos of user strategies run the same code.
func sameSource(a, b Info) bool {
	sa, sb := a.New(Config{}), b.New(Config{})
	ua, ok1 := userOf(sa)
	ub, ok2 := userOf(sb)
	return ok1 && ok2 && ua.src == ub.src && ua.function == ub.function
}

func userOf(s Strategy) (*user, bool) {
	switch u := s.(type) {
	case *user:
		return u, true
	case *userFunction:
		return u.user, true
	}
	return nil, false
}

// parseClaims reads the claims header among the comment lines that open
// src (a Functions library's #! line may come first).
func parseClaims(file, src string) (map[string]bool, error) {
	claims := map[string]bool{}
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#!") || line == "" {
			continue
		}
		if !strings.HasPrefix(line, "--") {
			break
		}
		rest, ok := strings.CutPrefix(line, ClaimsHeader)
		if !ok {
			continue
		}
		for _, w := range strings.Fields(rest) {
			if !slices.Contains(Claims, w) {
				return nil, fmt.Errorf("%w: %s: unknown claim %q in %q (accepted: %s)", ErrBadUserStrategy, file, w, line, strings.Join(Claims, ", "))
			}
			claims[w] = true
		}
	}
	if why := checkClaims(claims); why != "" {
		return nil, fmt.Errorf("%w: %s: %s", ErrBadUserStrategy, file, why)
	}
	return claims, nil
}

// claimText lists the claims made, or "none".
func claimText(claims map[string]bool) string {
	var out []string
	for _, c := range Claims {
		if claims[c] {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

// user is a user script; userFunction wraps it for a Functions library.
type user struct {
	name, file, src string
	function        bool
	script          *Script
	args            Args  // ARGV: limit, window seconds
	limit           int64 // a bare count is allowed when at most this
}

func (s *user) Name() string { return s.name }

func (s *user) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	keys := [1]string{key}
	r, err := c.EvalInts(ctx, s.script, keys[:], s.args)
	if n, ok := errors.AsType[IntegerReply](err); ok {
		return s.count(int64(n)), nil
	}
	if err != nil {
		return Decision{}, s.fail("evalsha", err)
	}
	return s.decision(r)
}

// count is the decision of a bare integer reply: the count, allowed when
// it is at most the limit.
func (s *user) count(n int64) Decision { return Decision{Allowed: n <= s.limit, Count: n} }

// fail names the strategy, its file and the operation; an error that is
// not the server's (nor a crash or an interrupt) is likely a reply of
// another shape, and gets the contract.
func (s *user) fail(op string, err error) error {
	_, reply := errors.AsType[ReplyError](err)
	if reply || errors.Is(err, ErrCrashed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s (%s): %s: %w", s.name, s.file, op, err)
	}
	return fmt.Errorf("%s (%s): %s: %w: %w", s.name, s.file, op, ErrBadReply, err)
}

// decision checks the reply against the contract.
func (s *user) decision(r []int64) (Decision, error) {
	if len(r) < 1 || len(r) > 2 || (r[0] != 0 && r[0] != 1) {
		return Decision{}, fmt.Errorf("%s (%s): %w, got %s", s.name, s.file, ErrBadReply, excerpt.Ints(r))
	}
	d := Decision{Allowed: r[0] == 1}
	if len(r) == 2 {
		d.Count = r[1]
	}
	return d, nil
}

// userFunction calls the function NAME of a user's Functions library.
type userFunction struct{ *user }

var _ Preparer = (*userFunction)(nil)

// Prepare loads the library on every master (see Client.FunctionLoad: a
// library of the same name with other code is refused, not replaced).
func (s *userFunction) Prepare(ctx context.Context, c Client) error {
	if err := c.FunctionLoad(ctx, s.src); err != nil {
		return fmt.Errorf("%s (%s): function load: %w", s.name, s.file, err)
	}
	return nil
}

// Decide calls FCALL NAME; a library lost since Prepare is loaded again,
// once, as the function strategy does.
func (s *userFunction) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	keys := [1]string{key}
	r, err := c.FCallInts(ctx, s.name, keys[:], s.args)
	if isFunctionNotFound(err) {
		if err := s.Prepare(ctx, c); err != nil {
			return Decision{}, err
		}
		r, err = c.FCallInts(ctx, s.name, keys[:], s.args)
	}
	if n, ok := errors.AsType[IntegerReply](err); ok {
		return s.count(int64(n)), nil
	}
	if err != nil {
		return Decision{}, s.fail("fcall", err)
	}
	return s.decision(r)
}

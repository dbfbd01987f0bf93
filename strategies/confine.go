package strategies

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/yuin/gopher-lua/ast"
)

// ErrUnconfined is returned, with ErrBadUserStrategy, for a user strategy
// whose source could reach beyond its own keys: a command outside
// scriptCommands or named at run time, a key not derived from KEYS, a use
// of redis other than a direct call, or a way around this check.
var ErrUnconfined = errors.New("refused")

// What a local name holds, for the check of keys.
const (
	plainValue = iota // anything
	keyValue          // a key derived from KEYS: KEYS[i], or one with something appended
	keysTable         // KEYS itself, or a library callback's first parameter
)

// confiner walks a user strategy's chunk and refuses what could reach
// beyond the script's keys (the rules are in confineCheck's comment).
type confiner struct {
	file    string
	library bool // a Functions library: redis.register_function is allowed
	scopes  []map[string]int
	// callbacks are the library's registered functions, whose first
	// parameter is its keys; callbackNames are those registered by name,
	// bound is what each name was bound to (the first pass finds both).
	callbacks     map[*ast.FunctionExpr]bool
	callbackNames map[string]bool
	bound         map[string][]*ast.FunctionExpr
	// registering are the names given to register_function as its
	// callback, the only reads of a callback's name allowed; boundTwice
	// counts the functions of a callback's name bound to several.
	registering map[*ast.IdentExpr]bool
	boundTwice  map[string]int
	calls       []string // the commands called, by ACL name, each once
	err         error    // the first refusal
}

// confineCheck checks a parsed user strategy: every redis.call and
// redis.pcall names its command as a string literal from scriptCommands,
// and each key argument is derived from KEYS (KEYS[i], a local that holds
// one and is never given anything else, or either with something
// appended; in a library, the registered function's first parameter
// stands for KEYS); redis (and server, Valkey's name for it) is used only
// in such calls, in calls of its helpers (redisHelpers) and to read its
// LOG_ constants; KEYS is only read (KEYS[i], #KEYS, unpack(KEYS),
// ipairs(KEYS)); the script assigns only its own locals (and their
// fields), never a global nor a field of one; a standard table (string,
// table, cjson...: standardTables) is only read a field of by name, never
// held, passed or changed; and nothing that compiles code, reaches the
// globals or a metatable (forbidden) is used. What outlives a script on
// the server (a global, a standard table's field, a metatable, cjson's
// settings) is what another tenant's script would run, with its keys and
// rights: none of it can be changed. It returns the commands called, by
// their ACL names, or the first refusal, naming the file and the line.
func confineCheck(file string, chunk []ast.Stmt, function bool) ([]string, error) {
	c := &confiner{file: file, library: function, callbacks: map[*ast.FunctionExpr]bool{},
		callbackNames: map[string]bool{}, bound: map[string][]*ast.FunctionExpr{},
		registering: map[*ast.IdentExpr]bool{}, boundTwice: map[string]int{}}
	if function {
		// A first pass finds the registered callbacks; what it refuses,
		// the second pass refuses again.
		c.block(chunk)
		for name := range c.callbackNames {
			for _, f := range c.bound[name] {
				c.callbacks[f] = true
			}
			if n := len(c.bound[name]); n > 1 {
				c.boundTwice[name] = n
			}
		}
		c.err, c.calls, c.scopes = nil, nil, nil
	}
	c.block(chunk)
	return c.calls, c.err
}

// refuse records the first refusal.
func (c *confiner) refuse(line int, format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%w: %s:%d: %w: %s", ErrBadUserStrategy, c.file, line, ErrUnconfined, fmt.Sprintf(format, args...))
	}
}

// lookup returns what local name holds, and false for a global.
func (c *confiner) lookup(name string) (int, bool) {
	for i := len(c.scopes) - 1; i >= 0; i-- {
		if v, ok := c.scopes[i][name]; ok {
			return v, true
		}
	}
	return 0, false
}

func (c *confiner) declare(name string, v int) { c.scopes[len(c.scopes)-1][name] = v }

// isGlobal reports whether e is the global name.
func (c *confiner) isGlobal(e ast.Expr, name string) bool {
	id, ok := e.(*ast.IdentExpr)
	if !ok || id.Value != name {
		return false
	}
	_, local := c.lookup(name)
	return !local
}

// isKeysTable reports whether e is KEYS (or a callback's keys parameter).
func (c *confiner) isKeysTable(e ast.Expr) bool {
	id, ok := e.(*ast.IdentExpr)
	if !ok {
		return false
	}
	v, local := c.lookup(id.Value)
	return (local && v == keysTable) || (!local && id.Value == "KEYS")
}

// isKey reports whether e is a key derived from KEYS.
func (c *confiner) isKey(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.AttrGetExpr:
		return c.isKeysTable(e.Object)
	case *ast.StringConcatOpExpr:
		return c.isKey(e.Lhs)
	case *ast.IdentExpr:
		v, local := c.lookup(e.Value)
		return local && v == keyValue
	}
	return false
}

func (c *confiner) block(stmts []ast.Stmt) {
	c.scopes = append(c.scopes, map[string]int{})
	for _, s := range stmts {
		c.stmt(s)
	}
	c.scopes = c.scopes[:len(c.scopes)-1]
}

func (c *confiner) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		c.exprs(s.Rhs)
		for i, lhs := range s.Lhs {
			c.assign(lhs, valueAt(s.Rhs, i), s.Line())
		}
	case *ast.LocalAssignStmt:
		c.exprs(s.Exprs)
		for i, name := range s.Names {
			v, kind := valueAt(s.Exprs, i), plainValue
			if v != nil && c.isKey(v) {
				kind = keyValue
			}
			if f, ok := v.(*ast.FunctionExpr); ok {
				c.bound[name] = append(c.bound[name], f)
			}
			c.declare(name, kind)
		}
	case *ast.FuncCallStmt:
		c.expr(s.Expr)
	case *ast.DoBlockStmt:
		c.block(s.Stmts)
	case *ast.WhileStmt:
		c.expr(s.Condition)
		c.block(s.Stmts)
	case *ast.RepeatStmt:
		c.block(append(slices.Clip(s.Stmts), &ast.FuncCallStmt{Expr: s.Condition}))
	case *ast.IfStmt:
		c.expr(s.Condition)
		c.block(s.Then)
		c.block(s.Else)
	case *ast.NumberForStmt:
		c.exprs([]ast.Expr{s.Init, s.Limit, s.Step})
		c.loop([]string{s.Name}, s.Stmts)
	case *ast.GenericForStmt:
		c.exprs(s.Exprs)
		c.loop(s.Names, s.Stmts)
	case *ast.FuncDefStmt:
		c.funcDef(s)
	case *ast.ReturnStmt:
		c.exprs(s.Exprs)
	}
}

// valueAt is the value the i-th name of an assignment gets, nil when none
// (or one of a call's several results).
func valueAt(exprs []ast.Expr, i int) ast.Expr {
	if i < len(exprs) {
		return exprs[i]
	}
	return nil
}

func (c *confiner) loop(names []string, body []ast.Stmt) {
	c.scopes = append(c.scopes, map[string]int{})
	for _, n := range names {
		c.declare(n, plainValue)
	}
	c.block(body)
	c.scopes = c.scopes[:len(c.scopes)-1]
}

// funcDef checks function NAME(...) ... end: an assignment of a function.
func (c *confiner) funcDef(s *ast.FuncDefStmt) {
	if s.Name.Receiver != nil { // function a:m(): a field of a
		c.assign(&ast.AttrGetExpr{Object: s.Name.Receiver, Key: &ast.StringExpr{Value: s.Name.Method}}, s.Func, s.Line())
		c.function(s.Func, true)
		return
	}
	if id, ok := s.Name.Func.(*ast.IdentExpr); ok {
		c.bound[id.Value] = append(c.bound[id.Value], s.Func)
	}
	c.assign(s.Name.Func, s.Func, s.Line())
	c.function(s.Func, false)
}

// assign checks an assignment of v (nil: none, or a call's further result)
// to target.
func (c *confiner) assign(target, v ast.Expr, line int) {
	switch t := target.(type) {
	case *ast.IdentExpr:
		kind, local := c.lookup(t.Value)
		switch {
		case local && kind == keysTable:
			c.refuse(line, "assigns %s, which holds the keys: a key must come from the keys the script is given", t.Value)
		case local && kind == keyValue && (v == nil || !c.isKey(v)):
			c.refuse(line, "assigns %s, which holds a key from KEYS, a value not derived from KEYS", t.Value)
		case !local:
			c.refuse(line, "assigns the global %s: a script assigns only its own locals (local %s = ..., local function %s): a global outlives the script, and every tenant's scripts read it",
				t.Value, t.Value, t.Value)
		}
		if f, ok := v.(*ast.FunctionExpr); ok {
			c.bound[t.Value] = append(c.bound[t.Value], f)
		}
	case *ast.AttrGetExpr:
		if c.isKeysTable(t.Object) {
			c.refuse(line, "changes KEYS: a key must come from the keys the script is given")
			return
		}
		if g := c.globalRoot(t); g != "" {
			c.refuse(line, "assigns %s, a field of the global %s: a script assigns only its own locals and their fields: a global's fields outlive the script, and every tenant's scripts read them",
				fieldText(t), g)
			return
		}
		c.expr(t.Object)
		c.expr(t.Key)
	default:
		c.expr(target)
	}
}

func (c *confiner) exprs(es []ast.Expr) {
	for _, e := range es {
		if e != nil {
			c.expr(e)
		}
	}
}

func (c *confiner) expr(e ast.Expr) {
	switch e := e.(type) {
	case *ast.IdentExpr:
		c.ident(e)
	case *ast.AttrGetExpr:
		switch {
		case c.isKeysTable(e.Object): // KEYS[i]
			c.expr(e.Key)
		case c.redisTable(e.Object) != "":
			if k, ok := e.Key.(*ast.StringExpr); !ok || !slices.Contains(redisConstants, k.Value) {
				c.refuse(e.Line(), "uses %s%s other than in a call redis.call('COMMAND', ...): a command must be named where it is sent", c.redisTable(e.Object), attrText(e.Key))
			}
		case c.standardTable(e.Object) != "":
			c.standardField(e)
		default:
			c.expr(e.Object)
			c.expr(e.Key)
		}
	case *ast.TableExpr:
		for _, f := range e.Fields {
			c.exprs([]ast.Expr{f.Key, f.Value})
		}
	case *ast.FuncCallExpr:
		c.call(e)
	case *ast.LogicalOpExpr:
		c.exprs([]ast.Expr{e.Lhs, e.Rhs})
	case *ast.RelationalOpExpr:
		c.exprs([]ast.Expr{e.Lhs, e.Rhs})
	case *ast.StringConcatOpExpr:
		c.exprs([]ast.Expr{e.Lhs, e.Rhs})
	case *ast.ArithmeticOpExpr:
		c.exprs([]ast.Expr{e.Lhs, e.Rhs})
	case *ast.UnaryMinusOpExpr:
		c.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		c.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		if !c.isKeysTable(e.Expr) { // #KEYS
			c.expr(e.Expr)
		}
	case *ast.FunctionExpr:
		c.function(e, false)
	}
}

// attrText shows the field of redis used: ".x", or "[...]" when computed.
func attrText(key ast.Expr) string {
	if k, ok := key.(*ast.StringExpr); ok {
		return "." + k.Value
	}
	return "[...]"
}

// ident checks a name read as a value.
func (c *confiner) ident(e *ast.IdentExpr) {
	kind, local := c.lookup(e.Value)
	switch {
	case c.library && c.callbackNames[e.Value] && !c.registering[e]:
		// Its first parameter is trusted to hold keys: called by the
		// script, it could be given any table.
		c.refuse(e.Line(), "uses %s, a function redis.register_function registers, other than to register it: its first parameter is trusted to hold the keys the server gives it, so only the server may call it",
			e.Value)
	case local && kind == keysTable, !local && e.Value == "KEYS":
		c.refuse(e.Line(), "uses %s other than to read it (%s[i], #%s, unpack(%s), ipairs(%s)): a key must come from the keys the script is given",
			e.Value, e.Value, e.Value, e.Value, e.Value)
	case local:
	case e.Value == "redis" || e.Value == "server":
		c.refuse(e.Line(), "uses %s other than in a call redis.call('COMMAND', ...): a command must be named where it is sent", e.Value)
	case slices.Contains(standardTables, e.Value):
		c.refuse(e.Line(), "uses the standard table %s other than to read a field of it (%s.name): a script may not hold, pass or change it, since every tenant's scripts share it",
			e.Value, e.Value)
	case forbidden[e.Value] != "":
		c.refuse(e.Line(), "uses %s: %s", e.Value, forbidden[e.Value])
	case !slices.Contains(baseGlobals, e.Value):
		c.refuse(e.Line(), "reads the global %s, which is neither a local of the script nor one of %s, KEYS, redis and the standard tables",
			e.Value, strings.Join(baseGlobals, ", "))
	}
}

// function checks a function's body, its parameters declared; a library's
// registered callback's first parameter holds its keys.
func (c *confiner) function(f *ast.FunctionExpr, method bool) {
	c.scopes = append(c.scopes, map[string]int{})
	if method {
		c.declare("self", plainValue)
	}
	for i, p := range f.ParList.Names {
		kind := plainValue
		if i == 0 && c.callbacks[f] {
			kind = keysTable
		}
		c.declare(p, kind)
	}
	c.block(f.Stmts)
	c.scopes = c.scopes[:len(c.scopes)-1]
}

// call checks a function call.
func (c *confiner) call(e *ast.FuncCallExpr) {
	if e.Receiver != nil { // x:m(...)
		if name := c.redisTable(e.Receiver); name != "" {
			c.refuse(e.Line(), "calls %s:%s(...): write redis.call('COMMAND', ...)", name, e.Method)
		}
		c.expr(e.Receiver)
		c.exprs(e.Args)
		return
	}
	if a, ok := e.Func.(*ast.AttrGetExpr); ok && c.redisTable(a.Object) != "" {
		c.redisCall(e, c.redisTable(a.Object), a.Key)
		return
	}
	if len(e.Args) == 1 && c.isKeysTable(e.Args[0]) && c.readsTable(e.Func) {
		return // unpack(KEYS), ipairs(KEYS)
	}
	c.expr(e.Func)
	c.exprs(e.Args)
}

// readsTable reports whether f is a function that only reads the table it
// is given: unpack, table.unpack, ipairs, pairs. They are trusted by
// name, as globals: the script cannot have redefined them, since it
// assigns no global and no field of a standard table (assign), and a
// local of that name is not the global. (On a server that does not
// protect its globals, another tenant's script could have: that exposes
// every script on the server, not only this one, and the temporary ACL
// user still confines what this one sends.)
func (c *confiner) readsTable(f ast.Expr) bool {
	for _, name := range []string{"unpack", "ipairs", "pairs"} {
		if c.isGlobal(f, name) {
			return true
		}
	}
	a, ok := f.(*ast.AttrGetExpr)
	if !ok {
		return false
	}
	k, ok := a.Key.(*ast.StringExpr)
	return ok && k.Value == "unpack" && c.isGlobal(a.Object, "table")
}

// redisCall checks redis.NAME(...) (or server.NAME, Valkey's alias,
// table naming which).
func (c *confiner) redisCall(e *ast.FuncCallExpr, table string, key ast.Expr) {
	k, ok := key.(*ast.StringExpr)
	switch {
	case !ok:
		c.refuse(e.Line(), "calls %s[...]: write redis.call('COMMAND', ...)", table)
	case k.Value == "call" || k.Value == "pcall":
		c.command(e, table+"."+k.Value)
	case k.Value == "register_function" && c.library:
		c.register(e)
		c.exprs(e.Args)
	case k.Value == "register_function":
		c.refuse(e.Line(), "calls redis.register_function outside a Functions library (--function)")
	case slices.Contains(redisHelpers, k.Value):
		c.exprs(e.Args)
	default:
		c.refuse(e.Line(), "calls %s.%s: a user strategy may call redis.call, redis.pcall and redis.%s", table, k.Value, strings.Join(redisHelpers, ", redis."))
	}
}

// command checks redis.call('COMMAND', ...) and redis.pcall.
func (c *confiner) command(e *ast.FuncCallExpr, fn string) {
	if len(e.Args) == 0 {
		c.refuse(e.Line(), "%s() names no command", fn)
		return
	}
	lit, ok := e.Args[0].(*ast.StringExpr)
	if !ok {
		c.refuse(e.Line(), "%s names its command at run time: name it as a string literal, %s('INCR', KEYS[1])", fn, fn)
		c.exprs(e.Args)
		return
	}
	name := strings.ToLower(lit.Value)
	sc, allowed := scriptCommands[name]
	if !allowed {
		why := refusedWhy[name]
		if why == "" {
			why = "a user strategy may call " + scriptCommandList()
		}
		c.refuse(e.Line(), "%s('%s'): %s is refused: %s", fn, lit.Value, strings.ToUpper(name), why)
		return
	}
	if !slices.Contains(c.calls, name) {
		c.calls = append(c.calls, name)
	}
	for i, arg := range e.Args[1:] {
		c.expr(arg)
		isKeyArg := sc.keys == keyAll || (sc.keys == keyFirst && i == 0) || (sc.keys == keyPairs && i%2 == 0)
		last := i == len(e.Args)-2
		switch {
		case sc.keys == keyAll && last && c.unpacksKeys(arg):
		case last && sc.keys != keyFirst && multiValued(arg):
			// Its values would fill the key positions after it.
			c.refuse(arg.Line(), "%s('%s', ...): its last argument may give several values, which would be keys: give each key, derived from KEYS", fn, lit.Value)
		case isKeyArg && !c.isKey(arg):
			c.refuse(arg.Line(), "%s('%s', ...): its key must be derived from KEYS (KEYS[1], or KEYS[1] .. ':suffix'), not computed otherwise", fn, lit.Value)
		}
	}
}

// multiValued reports whether e, the last argument of a call, may give
// several values: a call (not in parentheses) or "...".
func multiValued(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.FuncCallExpr:
		return !e.AdjustRet
	case *ast.Comma3Expr:
		return !e.AdjustRet
	}
	return false
}

// unpacksKeys reports whether e is unpack(KEYS).
func (c *confiner) unpacksKeys(e ast.Expr) bool {
	call, ok := e.(*ast.FuncCallExpr)
	return ok && call.Receiver == nil && len(call.Args) == 1 && c.isKeysTable(call.Args[0]) &&
		!c.isGlobal(call.Func, "ipairs") && !c.isGlobal(call.Func, "pairs") && c.readsTable(call.Func)
}

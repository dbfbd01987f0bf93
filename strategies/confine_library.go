package strategies

import "github.com/yuin/gopher-lua/ast"

// A library's registered functions (--function): the server calls each
// with its keys, so the check trusts a callback's first parameter to
// hold them; nothing else may call a callback (ident), or it could give
// it any table.

// register notes a library's registered callback: register_function(NAME,
// F) or register_function{function_name=NAME, callback=F}.
func (c *confiner) register(e *ast.FuncCallExpr) {
	var cb ast.Expr
	switch {
	case len(e.Args) >= 2:
		cb = e.Args[1]
	case len(e.Args) == 1:
		t, ok := e.Args[0].(*ast.TableExpr)
		if !ok {
			c.refuse(e.Line(), "calls redis.register_function with a table built elsewhere: write it in the call, {function_name = NAME, callback = F}, so that its flags can be read")
			return
		}
		for _, f := range t.Fields {
			k, ok := f.Key.(*ast.StringExpr)
			switch {
			case !ok:
				// The server reads the fields by their names' values: a
				// computed one may be flags.
				c.refuse(e.Line(), "calls redis.register_function with a field named at run time (or none): name each, {function_name = NAME, callback = F, flags = {...}}")
				return
			case k.Value == "callback":
				cb = f.Value
			case k.Value == "flags":
				c.functionFlags(f.Value)
			}
		}
	}
	switch cb := cb.(type) {
	case *ast.FunctionExpr:
		c.callbacks[cb] = true
	case *ast.IdentExpr:
		c.callbackNames[cb.Value] = true
		c.registering[cb] = true
		if n := c.boundTwice[cb.Value]; n > 0 {
			c.refuse(e.Line(), "registers %s, a name bound to %d functions: bind a registered function to its name once (every function of that name is trusted to be given keys)", cb.Value, n)
		}
	}
}

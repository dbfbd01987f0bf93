package strategies

import (
	"slices"

	"github.com/yuin/gopher-lua/ast"
)

// What the check reads as a global: the redis table (by either name),
// the standard tables, and what a field expression starts from.

// redisTable returns the name e reads the redis table by as a global:
// "redis", or "server", Valkey's alias of it; "" for anything else.
func (c *confiner) redisTable(e ast.Expr) string {
	for _, name := range []string{"redis", "server"} {
		if c.isGlobal(e, name) {
			return name
		}
	}
	return ""
}

// standardTable returns the name of the standard table e reads as a
// global ("string", "table", "cjson"...), or "".
func (c *confiner) standardTable(e ast.Expr) string {
	if id, ok := e.(*ast.IdentExpr); ok && slices.Contains(standardTables, id.Value) && c.isGlobal(e, id.Value) {
		return id.Value
	}
	return ""
}

// globalRoot returns the global that a field expression (a.b.c, a[k])
// starts from, or "" when it starts from a local or a value.
func (c *confiner) globalRoot(e ast.Expr) string {
	for {
		a, ok := e.(*ast.AttrGetExpr)
		if !ok {
			break
		}
		e = a.Object
	}
	if id, ok := e.(*ast.IdentExpr); ok && c.isGlobal(e, id.Value) {
		return id.Value
	}
	return ""
}

// standardField checks a read of a standard table's field, lib.name: by
// a literal name, not one of those that change the table's settings for
// every tenant (refusedFields).
func (c *confiner) standardField(e *ast.AttrGetExpr) {
	lib := c.standardTable(e.Object)
	k, ok := e.Key.(*ast.StringExpr)
	switch {
	case !ok:
		c.expr(e.Key)
		c.refuse(e.Line(), "reads %s[...]: name the field, %s.name", lib, lib)
	case refusedFields[lib+"."+k.Value] != "":
		c.refuse(e.Line(), "uses %s.%s: %s", lib, k.Value, refusedFields[lib+"."+k.Value])
	}
}

// fieldText shows a field assigned: "string.len", "t[...]".
func fieldText(e *ast.AttrGetExpr) string {
	object := "(...)"
	switch o := e.Object.(type) {
	case *ast.IdentExpr:
		object = o.Value
	case *ast.AttrGetExpr:
		object = fieldText(o)
	}
	return object + attrText(e.Key)
}

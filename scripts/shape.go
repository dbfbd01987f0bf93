//go:build ignore

// shape prints what issue 11 bounds, for anyone to rerun:
//
//	go run scripts/shape.go
//
// the non-test Go files over 500 lines, and the functions over 80 lines
// (outside tests; a function that is one table literal is listed too, and
// marked), longest first.
package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"sort"
	"strings"
)

func main() {
	out, err := exec.Command("git", "ls-files", "*.go").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "shape: git ls-files:", err)
		os.Exit(2)
	}
	type item struct {
		n    int
		what string
	}
	var files, funcs []item
	fset := token.NewFileSet()
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		path := sc.Text()
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "shape:", err)
			os.Exit(2)
		}
		if n := fset.Position(f.End()).Line; n > 500 {
			files = append(files, item{n, path})
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n <= 80 {
				continue
			}
			what := path + ": " + fd.Name.Name
			if len(fd.Body.List) == 1 {
				if r, ok := fd.Body.List[0].(*ast.ReturnStmt); ok && len(r.Results) == 1 {
					if _, ok := r.Results[0].(*ast.CompositeLit); ok {
						what += " (a table literal)"
					}
				}
			}
			funcs = append(funcs, item{n, what})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].n > files[j].n })
	sort.Slice(funcs, func(i, j int) bool { return funcs[i].n > funcs[j].n })
	fmt.Printf("non-test files over 500 lines: %d\n", len(files))
	for _, f := range files {
		fmt.Printf("  %5d %s\n", f.n, f.what)
	}
	fmt.Printf("functions over 80 lines (non-test): %d\n", len(funcs))
	for _, f := range funcs {
		fmt.Printf("  %5d %s\n", f.n, f.what)
	}
}

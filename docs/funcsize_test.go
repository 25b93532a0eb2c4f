package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"strings"
	"testing"
)

// The most lines a function body and the most parameters a function of
// production code may have: past them a reader cannot hold the function in
// view, and the stages it runs want names of their own.
const (
	maxFuncLines  = 100
	maxFuncParams = 8
)

// longFuncs lists every function (declared or literal) of src over the
// bounds, as "file:line name: why".
func longFuncs(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		var typ *ast.FuncType
		var body *ast.BlockStmt
		what := "a function literal"
		switch fn := n.(type) {
		case *ast.FuncDecl:
			typ, body, what = fn.Type, fn.Body, fn.Name.Name
		case *ast.FuncLit:
			typ, body = fn.Type, fn.Body
		default:
			return true
		}
		if body == nil {
			return true
		}
		lines := fset.Position(body.End()).Line - fset.Position(body.Pos()).Line + 1
		params := 0
		for _, field := range typ.Params.List {
			params += max(1, len(field.Names))
		}
		at := fset.Position(n.Pos())
		if lines > maxFuncLines {
			found = append(found, fmt.Sprintf("%s:%d %s: %d lines (at most %d)", at.Filename, at.Line, what, lines, maxFuncLines))
		}
		if params > maxFuncParams {
			found = append(found, fmt.Sprintf("%s:%d %s: %d parameters (at most %d)", at.Filename, at.Line, what, params, maxFuncParams))
		}
		return true
	})
	return found, nil
}

// TestProductionFunctionsAreShort fails naming each function of the
// repository's production Go code (not tests, not the vendored asynq, not
// the test support under internal/testing) over the bounds.
func TestProductionFunctionsAreShort(t *testing.T) {
	cmd := exec.Command("git", "ls-files", "*.go")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	fset := token.NewFileSet()
	read := 0
	for _, name := range strings.Fields(string(out)) {
		if strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "third_party/") || strings.HasPrefix(name, "internal/testing/") {
			continue
		}
		found, err := longFuncs(fset, "../"+name, nil)
		if err != nil {
			t.Fatal(err)
		}
		read++
		for _, f := range found {
			t.Error(strings.TrimPrefix(f, "../"))
		}
	}
	if read < 100 {
		t.Fatalf("read %d production files: the file list is wrong", read)
	}
}

// TestLongFuncsCatchesBoth checks the bounds on a planted function of each
// kind and on one just within them.
func TestLongFuncsCatchesBoth(t *testing.T) {
	body := strings.Repeat("\t_ = 0\n", maxFuncLines-2)
	src := "package p\n" +
		"func within(a, b, c, d, e, f, g, h int) {\n" + body + "}\n" +
		"func tooLong() {\n" + body + "\t_ = 0\n}\n" +
		"var manyParams = func(a, b, c, d, e, f, g, h, i int) {}\n"
	found, err := longFuncs(token.NewFileSet(), "p.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 || !strings.Contains(found[0], "tooLong: 101 lines") || !strings.Contains(found[1], "a function literal: 9 parameters") {
		t.Fatalf("found %q, want tooLong at 101 lines and the literal at 9 parameters", found)
	}
}

package kavach_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the most lines a function outside tests may have, from
// its func keyword to its closing brace: past that a reader cannot hold
// it in one screen, and it is doing several things that want names.
const maxFuncLines = 100

// longTables are functions allowed past maxFuncLines, by file and name
// ("dir/file.go:Func", "dir/file.go:Type.Method"), each with the reason.
// A function whose body is one return of a composite literal is a table
// and needs no line here. Keep this short: a long function is split, not
// listed.
var longTables = map[string]string{}

// TestFunctionLength fails naming every function of the module, outside
// tests and generated files, that is longer than maxFuncLines, unless it
// is a table (see longTables). It also fails on a line of longTables that
// names no long function any more, so that the list does not go stale.
func TestFunctionLength(t *testing.T) {
	found := map[string]bool{}
	err := eachSource(func(path string, src []byte) error {
		long, err := longFuncs(path, src)
		if err != nil {
			return err
		}
		for _, f := range long {
			id := filepath.ToSlash(path) + ":" + f.name
			if _, ok := longTables[id]; ok {
				found[id] = true
				continue
			}
			t.Errorf("%s:%d: %s is %d lines (from func to its closing brace); split it into functions of at most %d lines, or list it in longTables with a reason if it is a table",
				filepath.ToSlash(path), f.line, f.name, f.lines, maxFuncLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for id := range longTables {
		if !found[id] {
			t.Errorf("longTables lists %s, which is no function over %d lines: remove its line", id, maxFuncLines)
		}
	}
}

// eachSource calls fn with every Go file of the module outside tests
// (skipDir), its path and its bytes.
func eachSource(fn func(path string, src []byte) error) error {
	return filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && skipDir(path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return fn(path, src)
	})
}

// skipDir: folders whose Go files are not the module's code: hidden
// ones, testdata, vendor, and another module's.
func skipDir(path, name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil
}

// longFunc is a function over maxFuncLines.
type longFunc struct {
	name  string // "Func" or "Type.Method"
	line  int    // of its func keyword
	lines int
}

// longFuncs are the functions of a Go file over maxFuncLines, less
// tables (a body that is one return of a composite literal); none for a
// generated file.
func longFuncs(path string, src []byte) ([]longFunc, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if ast.IsGenerated(f) {
		return nil, nil
	}
	var out []longFunc
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil || isTable(fd.Body) {
			continue
		}
		first := fset.Position(fd.Type.Func).Line
		if n := fset.Position(fd.Body.Rbrace).Line - first + 1; n > maxFuncLines {
			out = append(out, longFunc{name: funcName(fd), line: first, lines: n})
		}
	}
	return out, nil
}

// isTable: the body is a single return of one composite literal (a
// list or map written out), or of its address, with no function literal
// in it (a struct holding a long closure is code, not a table).
func isTable(body *ast.BlockStmt) bool {
	if len(body.List) != 1 {
		return false
	}
	ret, ok := body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return false
	}
	e := ret.Results[0]
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	if _, ok := e.(*ast.CompositeLit); !ok {
		return false
	}
	code := false
	ast.Inspect(e, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			code = true
		}
		return !code
	})
	return !code
}

// funcName is "Func", or "Type.Method" for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr:
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

// TestLongFuncs checks the measure TestFunctionLength uses, both ways: a
// function of exactly maxFuncLines passes and one line more is named; a
// table of any length passes, and so does a long generated file; a
// method is named with its type.
func TestLongFuncs(t *testing.T) {
	// body is a function with the header head, n lines from func to brace.
	body := func(head string, n int) string {
		return head + " {\n" + strings.Repeat("\t_ = 0\n", n-2) + "}\n"
	}
	table := "func table() []int {\n\treturn []int{\n" + strings.Repeat("\t\t1,\n", 200) + "\t}\n}\n"
	ptrTable := "func ptrTable() *T {\n\treturn &T{\n" + strings.Repeat("\t\tA: 1,\n", 200) + "\t}\n}\n"
	notTable := "func notTable() []int {\n\tx := 1\n\treturn []int{\n" + strings.Repeat("\t\tx,\n", 200) + "\t}\n}\n"
	closure := "func closure() *T {\n\treturn &T{F: func() {\n" + strings.Repeat("\t\t_ = 0\n", 200) + "\t}}\n}\n"
	src := "package p\n\n" + body("func fits()", maxFuncLines) + body("func over()", maxFuncLines+1) +
		body("func (r *T) Method()", maxFuncLines+5) + body("func (g G[K]) Generic()", maxFuncLines+1) + table + ptrTable + notTable + closure
	got, err := longFuncs("p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range got {
		names = append(names, fmt.Sprintf("%s:%d", f.name, f.lines))
	}
	want := []string{fmt.Sprintf("over:%d", maxFuncLines+1), fmt.Sprintf("T.Method:%d", maxFuncLines+5),
		fmt.Sprintf("G.Generic:%d", maxFuncLines+1), "notTable:205", "closure:204"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("longFuncs = %v, want %v", names, want)
	}
	generated := "// Code generated by hand for this test. DO NOT EDIT.\n\n" + src
	if got, err := longFuncs("gen.go", []byte(generated)); err != nil || len(got) != 0 {
		t.Errorf("longFuncs of a generated file = %v, %v; want none", got, err)
	}
	if _, err := longFuncs("bad.go", []byte("package p\nfunc {")); err == nil {
		t.Error("longFuncs of a file that does not parse: no error")
	}
}

// maxFileLines is the most lines a Go file outside tests may have: past
// that its name cannot say what it holds (split it by responsibility, one
// noun per file).
const maxFileLines = 1000

// maxCLILines is the most lines cmd/kavach's files outside tests may have
// together: the CLI holds flags, output and exit codes; what it computes
// belongs to the package it serves.
const maxCLILines = 1500

// TestFileLength fails naming every Go file of the module, outside tests
// and generated files, over maxFileLines, and cmd/kavach when its files
// outside tests are over maxCLILines together.
func TestFileLength(t *testing.T) {
	cli := 0
	err := eachSource(func(path string, src []byte) error {
		n, err := fileLines(path, src)
		if err != nil {
			return err
		}
		if n > maxFileLines {
			t.Errorf("%s is %d lines; split it by responsibility into files of at most %d whose names say what they hold", filepath.ToSlash(path), n, maxFileLines)
		}
		if filepath.ToSlash(filepath.Dir(path)) == "cmd/kavach" {
			cli += n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cli > maxCLILines {
		t.Errorf("cmd/kavach is %d lines outside tests, over %d: move what is not flags, output or exit codes to the package it serves", cli, maxCLILines)
	}
}

// fileLines is how many lines a Go file has; 0 for a generated file.
func fileLines(path string, src []byte) (int, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	if ast.IsGenerated(f) {
		return 0, nil
	}
	return strings.Count(string(src), "\n"), nil
}

// TestFileLines checks the measure TestFileLength uses: lines counted as
// wc -l counts them, and a generated file not counted.
func TestFileLines(t *testing.T) {
	src := "package p\n\n" + strings.Repeat("var _ = 0\n", maxFileLines)
	if n, err := fileLines("p.go", []byte(src)); err != nil || n != maxFileLines+2 {
		t.Errorf("fileLines = %d, %v; want %d", n, err, maxFileLines+2)
	}
	if n, err := fileLines("gen.go", []byte("// Code generated by hand for this test. DO NOT EDIT.\n\n"+src)); err != nil || n != 0 {
		t.Errorf("fileLines of a generated file = %d, %v; want 0", n, err)
	}
}

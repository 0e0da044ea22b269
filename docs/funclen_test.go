package docs

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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxFuncLines is the most lines a function of cairn's production code
// may have (docs/architecture.md, "Readable steps").
const maxFuncLines = 150

// longFunctions returns, for each function of the production code below
// root (every Go file but tests and what the go command skips) of limit
// lines or more, "path:line Recv.Name (N lines)".
func longFunctions(root string, limit int) ([]string, error) {
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || otherModule(path, root)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start, end := fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
			if n := end - start + 1; n >= limit {
				out = append(out, fmt.Sprintf("%s:%d %s (%d lines)", filepath.ToSlash(rel), start, funcName(fd), n))
			}
		}
		return nil
	})
	return out, err
}

// funcName is "Name", or "Recv.Name" for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// No function of production code reaches maxFuncLines: a longer one is
// split into named steps, each doing one thing.
func TestNoLongFunctions(t *testing.T) {
	long, err := longFunctions("..", maxFuncLines)
	require.NoError(t, err)
	assert.Empty(t, long, "functions of %d lines or more: split each into named steps", maxFuncLines)
}

// The check finds a long function and a long method, and leaves tests and
// testdata alone.
func TestLongFunctionsFindsThem(t *testing.T) {
	root := t.TempDir()
	body := strings.Repeat("\t_ = 1\n", maxFuncLines-2)
	files := map[string]string{
		"a/a.go":               "package a\n\nfunc Long() {\n" + body + "}\n\nfunc short() {}\n",
		"a/b.go":               "package a\n\ntype T struct{}\n\nfunc (t *T) Run() {\n" + body + "}\n",
		"a/a_test.go":          "package a\n\nfunc TestLong() {\n" + body + "}\n",
		"a/testdata/x/main.go": "package main\n\nfunc main() {\n" + body + "}\n",
		"b/ok.go":              "package b\n\nfunc Fits() {\n" + body[len("\t_ = 1\n"):] + "}\n",
	}
	for f, src := range files {
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, f), []byte(src), 0o644))
	}
	long, err := longFunctions(root, maxFuncLines)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		fmt.Sprintf("a/a.go:3 Long (%d lines)", maxFuncLines),
		fmt.Sprintf("a/b.go:5 T.Run (%d lines)", maxFuncLines),
	}, long)
}

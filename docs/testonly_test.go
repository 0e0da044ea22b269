package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testOnly are functions that only tests call: they live in the packages'
// _test.go files (export_test.go, test helpers), not in what cairn ships.
var testOnly = map[string][]string{
	"engine/cas":    {"ParseDigest"},
	"storage/wal":   {"Repair"},
	"gpu":           {"NewNVML", "Probe", "TreeRSS"},
	"engine/runlog": {"NodeLog"},
	"engine":        {"BatchMakespan"},
}

// No function that only tests call is declared outside the test files.
func TestTestOnlyFunctionsStayInTests(t *testing.T) {
	for dir, names := range testOnly {
		files, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, dir)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			for _, d := range file.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
					for _, n := range names {
						assert.NotEqual(t, n, fd.Name.Name, "%s declares %s.%s, which only tests call: it belongs in a _test.go file", filepath.ToSlash(f), dir, n)
					}
				}
			}
		}
	}
}

package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unvetted returns the Go files below root that `go vet ./...` and
// `go build ./...` never see: those under a folder named testdata, or one
// whose name begins with "." or "_" (the go command skips such folders).
func unvetted(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == ".git" || otherModule(path, root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		for _, dir := range strings.Split(filepath.ToSlash(filepath.Dir(rel)), "/") {
			if dir == "testdata" || (dir != "." && (strings.HasPrefix(dir, ".") || strings.HasPrefix(dir, "_"))) {
				out = append(out, filepath.ToSlash(rel))
				break
			}
		}
		return nil
	})
	return out, err
}

// Every Go file of the repository is in a package `go vet ./...` sees: the
// simulated programs live under sim/, not under a testdata folder.
func TestEveryGoFileIsVetted(t *testing.T) {
	files, err := unvetted("..")
	require.NoError(t, err)
	assert.Empty(t, files, "Go files that go vet ./... skips (move them out of testdata/, or out of a folder named .* or _*)")
}

// The check finds a program under testdata.
func TestUnvettedFindsTestdataPrograms(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"a/testdata/prog/main.go", "_old/x.go", "b/ok.go", "b/testdata/input.json"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, f), []byte("package main\n"), 0o644))
	}
	files, err := unvetted(root)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a/testdata/prog/main.go", "_old/x.go"}, files)
}

// otherModule reports whether dir, below the module's root, holds a module
// of its own (a go.mod): the go command's ./... leaves it out, and so do
// the checks of cairn's code (third_party/ holds such copies of other
// projects' modules, with their own tests: make test-third-party).
func otherModule(dir, root string) bool {
	if filepath.Clean(dir) == filepath.Clean(root) {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every test serve.md names as its proof exists in the end-to-end tests.
func TestServeDocNamesTestsThatExist(t *testing.T) {
	doc, err := os.ReadFile("serve.md")
	require.NoError(t, err)
	var src strings.Builder
	for _, dir := range []string{"../e2e/serve", "../e2e/llamacpp"} {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		require.NoError(t, err)
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			src.Write(b)
		}
	}
	names := regexp.MustCompile("`(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, names)
	for _, m := range names {
		assert.Contains(t, src.String(), "func "+m[1]+"(t *testing.T)", "docs/serve.md names %s", m[1])
	}
}

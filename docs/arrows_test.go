package docs

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/cairn-run/cairn/"

// Every package of the module is in architecture.md's table of layers,
// and imports (outside its tests) only packages of lower layers.
func TestPackageArrows(t *testing.T) {
	doc := readDoc(t, "architecture.md")
	layer := map[string]int{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9/_-]+)` \\| ([0-9]+) \\|").FindAllStringSubmatch(doc, -1) {
		n, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		layer[m[1]] = n
	}
	require.NotEmpty(t, layer)

	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").Output()
	require.NoError(t, err)
	testOnly := regexp.MustCompile("Packages with tests only \\(([^)]*)\\)")
	m := testOnly.FindStringSubmatch(strings.ReplaceAll(doc, "\n", " "))
	require.NotNil(t, m, "the page names the packages with tests only")
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		from, ok := layer[pkg]
		if !ok {
			assert.Contains(t, m[1], "`"+pkg+"`", "%s is not in the table of docs/architecture.md", pkg)
			continue
		}
		for _, imp := range f[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			to, ok := layer[dep]
			if !assert.True(t, ok, "%s imports %s, which the table does not list", pkg, dep) {
				continue
			}
			assert.Less(t, to, from, "%s (layer %d) imports %s (layer %d): imports run to lower layers only", pkg, from, dep, to)
		}
	}
}

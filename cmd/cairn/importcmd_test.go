package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestImportCommandWritesItemResults(t *testing.T) {
	src, err := os.ReadFile("../../stages/modelcache/testdata/arith.eval")
	require.NoError(t, err)
	root := cliWorkspace(t, map[string]string{"logs/arith.eval": string(src), "bad.jsonl": "{\"x\": 1}\n"})
	r := runCLI(t, "--chdir", root, "import", "inspect", "logs/arith.eval", "--out", "items.jsonl")
	require.Equal(t, 0, r.code, r.stderr)
	b, err := os.ReadFile(filepath.Join(root, "items.jsonl"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 12)
	require.True(t, strings.HasPrefix(lines[0], `{"id":"arith-00","score":1,`), lines[0])

	r = runCLI(t, "--chdir", root, "import", "lm-eval", "bad.jsonl", "--out", "x.jsonl")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "bad.jsonl: line 1 has no doc_id")
	require.NoFileExists(t, filepath.Join(root, "x.jsonl"))
	r = runCLI(t, "--chdir", root, "import", "helm", "bad.jsonl")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "the formats are lm-eval and inspect")
}

// An error once a command runs (here --out cannot be written: a file
// stands where its folder goes, as a full disk or a read-only folder
// would refuse it) is not the command line's: exit 1, no usage hint.
// Wrong arguments stay exit 2, with the hint.
func TestRunErrorIsNotUsageError(t *testing.T) {
	src, err := os.ReadFile("../../stages/modelcache/testdata/arith.eval")
	require.NoError(t, err)
	root := cliWorkspace(t, map[string]string{"logs/arith.eval": string(src), "file": "x"})
	r := runCLI(t, "--chdir", root, "import", "inspect", "logs/arith.eval", "--out", "file/items.jsonl")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "Error: cannot write "+filepath.Join(root, "file/items.jsonl"))
	require.NotContains(t, r.stderr, "for usage")

	r = runCLI(t, "--chdir", root, "import", "inspect")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "Run 'cairn import --help' for usage.")
}

// An lm-eval --filter that the file has no samples for is named, with the
// filters the file has, whether it has one filter or several (with one, it
// said "no samples", as if the file were empty).
func TestImportUnknownFilterNamesTheFilters(t *testing.T) {
	line := func(doc int, filter string) string {
		return `{"doc_id": ` + string(rune('0'+doc)) + `, "doc": {}, "target": "2", "resps": [["2"]], "filtered_resps": ["2"], "filter": "` + filter + `", "metrics": ["exact_match"], "exact_match": 1.0}` + "\n"
	}
	root := cliWorkspace(t, map[string]string{
		"one.jsonl": line(0, "none"),
		"two.jsonl": line(0, "none") + line(0, "strict"),
	})
	for _, c := range []struct{ file, filters string }{
		{"one.jsonl", `"none"`},
		{"two.jsonl", `"none", "strict"`},
	} {
		r := runCLI(t, "--chdir", root, "import", "lm-eval", c.file, "--filter", "nope", "--out", "x.jsonl")
		require.Equal(t, 2, r.code, r.stderr)
		require.Contains(t, r.stderr, c.file+`: no samples for filter "nope" (its filters: `+c.filters+`): give one of them to --filter`)
		require.NoFileExists(t, filepath.Join(root, "x.jsonl"))
	}
	r := runCLI(t, "--chdir", root, "import", "lm-eval", "one.jsonl", "--filter", "none", "--out", "x.jsonl")
	require.Equal(t, 0, r.code, r.stderr)
}

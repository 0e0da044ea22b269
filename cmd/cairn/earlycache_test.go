package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const earlyCachePipeline = "pipeline \"p\" {\n  description = \"caf\u0065\u0301\"\n}\nstage \"command\" \"a\" {\n  run     = [\"sh\", \"-c\", \"echo a > a.txt\"]\n  outputs = [\"a.txt\"]\n}\n"

// damageIndexRecord flips a byte of the first node record in the cache's
// index: opening the cache then warns that it is damaged.
func damageIndexRecord(t *testing.T, root string) {
	t.Helper()
	index := filepath.Join(root, ".cairn", "index.log")
	b, err := os.ReadFile(index)
	require.NoError(t, err)
	i := strings.Index(string(b), `"kind":"command"`)
	require.Positive(t, i)
	b[i+10] ^= 1
	require.NoError(t, os.WriteFile(index, b, 0o644))
}

// An existing cache opens while the pipeline loads; what opening it warns
// of still comes after what the pipeline's files warn of, as when it
// opened after the load.
func TestCacheWarningsFollowThePipelinesWarnings(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": earlyCachePipeline})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	damageIndexRecord(t, root)
	for _, cmd := range []string{"plan", "apply"} {
		r = runCLI(t, "--chdir", root, cmd, "p.hcl")
		require.Equal(t, exitOK, r.code, r.stderr)
		pipeline := strings.Index(r.stderr, "Text not in Unicode NFC")
		cache := strings.Index(r.stderr, "warning: cache: the index record at byte")
		require.NotEqual(t, -1, pipeline, "%s: %s", cmd, r.stderr)
		require.NotEqual(t, -1, cache, "%s: %s", cmd, r.stderr)
		assert.Less(t, pipeline, cache, "%s: %s", cmd, r.stderr)
	}
}

// A pipeline that does not load leaves the cache opened for it closed:
// no file of it stays open, and the next command finds the cache as the
// failed one found it, and says what opening it warned of.
func TestPipelineThatDoesNotLoadClosesTheCache(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": earlyCachePipeline})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	damageIndexRecord(t, root)
	require.NoError(t, os.WriteFile(filepath.Join(root, "bad.hcl"), []byte("pipeline \"p\" {\nstage \"command\" {\n"), 0o644))
	before := openFiles(t)
	for range 3 {
		r = runCLI(t, "--chdir", root, "plan", "bad.hcl")
		require.Equal(t, exitBadInput, r.code, r.stderr)
		pipeline := strings.Index(r.stderr, "bad.hcl:")
		cache := strings.Index(r.stderr, "warning: cache: the index record at byte")
		require.NotEqual(t, -1, pipeline, r.stderr)
		require.NotEqual(t, -1, cache, r.stderr)
		assert.Less(t, pipeline, cache, r.stderr)
	}
	assert.Equal(t, before, openFiles(t), "files left open by the plans that failed")
	r = runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "1 ran")
}

// openFiles lists the files this process holds open, by name.
func openFiles(t *testing.T) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	var names []string
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.Contains(target, ".cairn") {
			names = append(names, target)
		}
	}
	return names
}

package stages

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The out folder check of a job compares a sealed job.json with the job;
// a fresh out folder has none, and its check reads none of the job's
// sealed files (a grid's plan checks every job).
func TestJobCheckWorkspaceFreshFolder(t *testing.T) {
	root := t.TempDir()
	n := seedJobNode()
	s, diags := decodeJob(n)
	require.False(t, diags.HasErrors())
	for _, paths := range s.files {
		for _, p := range paths {
			full := filepath.Join(root, p)
			if p[len(p)-1] == '/' {
				require.NoError(t, os.MkdirAll(full, 0o755))
				full = filepath.Join(full, "file.txt")
			}
			require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
			require.NoError(t, os.WriteFile(full, make([]byte, 64<<10), 0o644))
		}
	}
	assert.Empty(t, Job{}.CheckWorkspace(n, root), "a fresh out folder")
	decode := testing.AllocsPerRun(20, func() { decodeJob(n) })
	check := testing.AllocsPerRun(20, func() { Job{}.CheckWorkspace(n, root) })
	t.Logf("decode: %.0f allocations, check of a fresh folder: %.0f", decode, check)
	assert.LessOrEqual(t, check, decode+5, "the check of a fresh out folder digested the sealed files")

	// A folder sealed for another job is refused.
	other := s.id
	other.Seed = 2
	require.NoError(t, os.MkdirAll(filepath.Join(root, s.out), 0o755))
	b, err := json.MarshalIndent(other, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, s.out, "job.json"), b, 0o644))
	d := Job{}.CheckWorkspace(n, root)
	require.True(t, d.HasErrors())
	assert.Contains(t, d.Error(), "holds another job")
	assert.Contains(t, d.Error(), "seed: the out folder's job is 2, this job is 1")

	// An attribute that failed to evaluate (it is missing from the node's
	// arguments) is not a zero to compare with the seal: no refusal
	// before the evaluation's own error.
	other = s.id
	require.NoError(t, os.WriteFile(filepath.Join(root, s.out, "job.json"), mustJSON(t, other), 0o644))
	failed := seedJobNode()
	delete(failed.Args, "budget")
	assert.Empty(t, Job{}.CheckWorkspace(failed, root), "budget did not evaluate")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	return b
}

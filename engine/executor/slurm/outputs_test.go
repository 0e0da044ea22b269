package slurm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/executor"
)

// A job that ended while cairn was down left its output; the apply that
// re-attaches marks it (executor.OutputMark) before it looks at the job.
// An edit made in between that kept the file's inode and size is seen in
// the time the file had under the mark (Spec.Marked); without the edit, or
// where that time says nothing (the file carried the mark already, or no
// time was given), the file is the job's.
func TestChangedOutputSeesAnEditUnderCairnsMark(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "v.txt")
	require.NoError(t, os.WriteFile(p, []byte("42\n"), 0o666))
	jobLeft := time.Unix(1_700_000_000, 123456789)
	require.NoError(t, os.Chtimes(p, jobLeft, jobLeft))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	ex := &ExitStatus{Outputs: map[string]fileSig{p: sigOf(fi)}, OutputRoots: []string{p}}
	assert.Empty(t, changedOutput(ex, dir, nil), "the file as the job left it")

	// The same size, edited at a later time, then marked by cairn.
	edited := jobLeft.Add(3 * time.Second)
	require.NoError(t, os.WriteFile(p, []byte("77\n"), 0o666))
	require.NoError(t, os.Chtimes(p, edited, executor.OutputMark))
	for _, c := range []struct {
		name    string
		marked  map[string]int64
		changed bool
	}{
		{"the time under the mark is the edit's", map[string]int64{p: edited.UnixNano()}, true},
		{"the time under the mark is the job's", map[string]int64{p: jobLeft.UnixNano()}, false},
		{"the file carried the mark already", map[string]int64{p: executor.OutputMark.UnixNano()}, false},
		{"no time under the mark", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg := changedOutput(ex, dir, c.marked)
			if c.changed {
				assert.Contains(t, msg, "its output v.txt changed after the job ended")
			} else {
				assert.Empty(t, msg)
			}
		})
	}

	// A job that did not write its output left cairn's mark on it: a mark
	// put there again is the same file, whatever time it had before.
	require.NoError(t, os.Chtimes(p, edited, executor.OutputMark))
	fi, err = os.Stat(p)
	require.NoError(t, err)
	ex.Outputs[p] = sigOf(fi)
	assert.Empty(t, changedOutput(ex, dir, map[string]int64{p: executor.OutputMark.UnixNano()}))
}

package crashtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// journalFull makes the journal records after the nth fail as on a full
// disk (engine/failpoint).
func journalFull(n string) []string { return []string{"CAIRN_TEST_JOURNAL_FULL_AFTER=" + n} }

// TestOnInterruptFailStartNotJournaled: a node of a stage with
// on_interrupt = "fail" whose started record cannot be made durable (the
// run folder's disk is full) is not started at all: started unrecorded, a
// kill of cairn would let the next apply rerun it silently. It fails with
// class infrastructure, naming the journal; the next apply runs it.
func TestOnInterruptFailStartNotJournaled(t *testing.T) {
	w := newWS(t, `
pipeline "jfull" {}
stage "command" "precious" {
  on_interrupt = "fail"
  run          = ["sh", "-c", "echo x >> precious.log; echo done > p.txt"]
  outputs      = ["p.txt"]
}
`)
	// run_start and planned are written; the started record is not.
	res := w.run(journalFull("2"), "apply")
	require.Equal(t, 1, res.code, res.String())
	assert.False(t, w.exists("precious.log"), "the node ran with no started record")
	assert.Contains(t, res.stdout+res.stderr, "infrastructure")
	assert.Contains(t, res.stdout+res.stderr, "its start could not be recorded in the run's journal "+w.cache+"/runs/")
	assert.Contains(t, res.stdout+res.stderr, "no space left on device")

	res = w.apply()
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "1 ran")
	assert.Equal(t, 1, w.countLines("precious.log"))
}

// TestJournalWriteFailureExits1: an apply whose journal records cannot
// all be written says so, naming the journal, and does not exit 0: its
// results are in the cache, but the run's history is not all recorded.
func TestJournalWriteFailureExits1(t *testing.T) {
	w := newWS(t, `
pipeline "jfull" {}
stage "command" "n" {
  for_each = toset(["a", "b", "c"])
  run      = ["sh", "-c", "echo ${each.key} > ${each.key}.txt"]
  outputs  = ["${each.key}.txt"]
}
`)
	// run_start and the three planned records are written, then nothing.
	res := w.run(journalFull("4"), "apply", "--parallelism", "1")
	require.Equal(t, 1, res.code, res.String())
	assert.Contains(t, res.stdout, "3 ran")
	assert.Contains(t, res.stdout+res.stderr, "warning: cannot write the run's journal "+w.cache+"/runs/")
	assert.Contains(t, res.stderr, "no space left on device")
	assert.Contains(t, res.stderr, "Error: the run's journal "+w.cache+"/runs/")
	assert.Contains(t, res.stderr, "is incomplete")

	// The results are in the cache all the same.
	res = w.apply()
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "0 ran, 3 cached")
}

// TestJournalWriteFailureAdvisesByCause: a journal write that fails
// mid-run is reported with its cause, and the advice fits that cause: room
// on the disk for a full disk or quota, the mount or the permissions for
// a read-only file system or a refused write, and the error itself for
// any other.
func TestJournalWriteFailureAdvisesByCause(t *testing.T) {
	const pipeline = `
pipeline "jcause" {}
stage "command" "n" {
  for_each = toset(["a", "b"])
  run      = ["sh", "-c", "echo ${each.key} > ${each.key}.txt"]
  outputs  = ["${each.key}.txt"]
}
`
	for _, c := range []struct{ errno, cause, advice string }{
		{"ENOSPC", "no space left on device", "make room on that disk"},
		{"EDQUOT", "disk quota exceeded", "make room on that disk (or in your quota there)"},
		{"EROFS", "read-only file system", "its file system is mounted read-only: mount it read-write, or give another --cache"},
		{"EACCES", "permission denied", "cairn may not write there: check the run folder's owner, group and permissions"},
		{"EPERM", "operation not permitted", "cairn may not write there: check the run folder's owner, group and permissions"},
		{"EIO", "input/output error", "fix what made the write fail (input/output error)"},
	} {
		t.Run(c.errno, func(t *testing.T) {
			w := newWS(t, pipeline)
			// run_start and the two planned records are written, then nothing.
			res := w.run(append(journalFull("3"), "CAIRN_TEST_JOURNAL_ERRNO="+c.errno), "apply", "--parallelism", "1")
			require.Equal(t, 1, res.code, res.String())
			assert.Contains(t, res.stdout, "2 ran")
			assert.Contains(t, res.stderr, "is incomplete ("+c.cause+"): the results of the nodes that ran are in the cache", res.String())
			assert.Contains(t, res.stderr, "may show it interrupted); "+c.advice, res.String())
			if c.errno != "ENOSPC" && c.errno != "EDQUOT" {
				assert.NotContains(t, res.String(), "make room")
			}
		})
	}
}

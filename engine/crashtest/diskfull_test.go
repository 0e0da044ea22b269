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

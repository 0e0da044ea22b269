package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
)

// notNeededEval is an evaluation of no items whose needed is a variable:
// needed is out of its key.
const notNeededEval = `
pipeline "n" {}
variable "needed" {
  type    = bool
  default = true
}
stage "evaluate" "val" {
  worker = ["sh", "worker.sh"]
  items  = []
  model  = "m"
  scores = "out/scores.jsonl"
  needed = var.needed
}
`

// A record made while an evaluation was not needed (nothing done, a null
// result) does not answer for it once it is needed: plan says it runs,
// and why, and apply runs it. A record made while it was needed answers
// whether it is needed or not.
func TestNotNeededRecordDoesNotAnswerWhenNeeded(t *testing.T) {
	w := newWorkspace(t, notNeededEval)
	w.Write("worker.sh", "exit 0\n")
	r := w.apply(ApplyOptions{}, "needed=false")
	require.Equal(t, 1, r.res.Ran, r.out)
	_, err := os.Stat(filepath.Join(w.Root, "out/scores.jsonl"))
	require.ErrorIs(t, err, os.ErrNotExist, "not needed: no scores")

	p := w.Plan(plan.Options{}, "needed=true")
	pn := p.Nodes[0]
	assert.Equal(t, plan.ActRun, pn.Action)
	assert.Equal(t, []string{"its cached result was recorded when it was not needed (nothing was done then): it runs now that it is needed"}, pn.Reasons)
	var out strings.Builder
	require.NoError(t, p.Render(&out))
	assert.Contains(t, out.String(), "~ stage.val  run: its cached result", "it ran before: a rerun, not new")
	pn = w.Plan(plan.Options{}, "needed=false").Nodes[0]
	assert.Equal(t, plan.ActCached, pn.Action, "still not needed: the record answers")

	r = w.apply(ApplyOptions{}, "needed=true")
	assert.Equal(t, 1, r.res.Ran, r.out)
	assert.Equal(t, 0, r.res.Cached, r.out)
	_, err = os.Stat(filepath.Join(w.Root, "out/scores.jsonl"))
	require.NoError(t, err, "needed: the scores are written")

	// Made when needed, the record answers once it is not needed.
	r = w.apply(ApplyOptions{}, "needed=false")
	assert.Equal(t, 1, r.res.Cached, r.out)
	r = w.apply(ApplyOptions{}, "needed=true")
	assert.Equal(t, 1, r.res.Cached, r.out)
}

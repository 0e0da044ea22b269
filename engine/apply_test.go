package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const twoStage = `
pipeline "t" {}
variable "names" {
  type    = list(string)
  default = ["a", "b", "c"]
}
stage "command" "make" {
  for_each = toset(var.names)
  run      = ["sh", "-c", "mkdir -p out && echo ${each.key} > out/${each.key}.txt && echo run >> runs.log"]
  outputs  = ["out/${each.key}.txt"]
}
stage "command" "sum" {
  after   = [stage.make]
  run     = ["sh", "-c", "cat out/*.txt > out/all.txt && echo run >> runs.log"]
  outputs = ["out/all.txt"]
}
`

func TestApplyThenCached(t *testing.T) {
	w := newWorkspace(t, twoStage)
	r := w.apply(ApplyOptions{})
	assert.Equal(t, 4, r.res.Ran, r.out)
	assert.Equal(t, "a\nb\nc\n", w.Read("out/all.txt"))
	r = w.apply(ApplyOptions{})
	assert.Equal(t, 0, r.res.Ran, r.out)
	assert.Equal(t, 4, r.res.Cached, r.out)
	require.Equal(t, "run\nrun\nrun\nrun\n", w.Read("runs.log"))
}

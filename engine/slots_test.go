package engine

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --parallelism bounds the node processes running at once, also now that a
// node's CPU slot goes to the next node as soon as its process has ended
// (while cairn stores its outputs), and a stage's concurrency bounds its
// own. Each process marks itself running in a folder, counts the marks,
// and removes its mark before it ends: a count over the bound means more
// processes ran at once than allowed.
func TestParallelismBoundsRunningProcesses(t *testing.T) {
	const pipeline = `
pipeline "slots" {}
locals {
  keys = [for i in range(24) : format("k%02d", i)]
}
stage "command" "many" {
  for_each = toset(local.keys)
  shell    = true
  run      = "mkdir -p running/many out && touch running/many/${each.key} && ls running/many | wc -l >> counts.many && sleep 0.02 && rm running/many/${each.key} && echo ${each.key} > out/${each.key}"
  outputs  = ["out/${each.key}"]
}
stage "command" "few" {
  for_each    = toset(local.keys)
  concurrency = 1
  shell       = true
  run         = "mkdir -p running/few out && touch running/few/${each.key} && ls running/few | wc -l >> counts.few && sleep 0.01 && rm running/few/${each.key} && echo ${each.key} > out/few-${each.key}"
  outputs     = ["out/few-${each.key}"]
}
`
	for _, par := range []int{1, 3} {
		w := newWorkspace(t, pipeline)
		r := w.apply(ApplyOptions{Parallelism: par})
		require.Equal(t, 48, r.res.Ran, r.out)
		for stage, bound := range map[string]int{"many": par, "few": 1} {
			counts := strings.Fields(w.read("counts." + stage))
			require.Len(t, counts, 24)
			for _, c := range counts {
				n, err := strconv.Atoi(c)
				require.NoError(t, err)
				assert.LessOrEqual(t, n, bound, "stage %s, --parallelism %d: %d processes at once", stage, par, n)
			}
		}
	}
}

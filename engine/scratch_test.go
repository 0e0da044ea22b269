package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each node finds CAIRN_OUT_DIR an empty folder of its own; what a node
// leaves there stays in the run's out/ folder, and a node that leaves
// nothing leaves no folder (its folder goes to a later node).
const scratchPipeline = `
pipeline "scratch" {}
stage "command" "s" {
  for_each = toset(["a", "b", "c", "d", "e", "f", "g", "h"])
  shell    = true
  run      = <<-EOT
    set -e
    test -d "$CAIRN_OUT_DIR"
    if [ -n "$(ls -A "$CAIRN_OUT_DIR")" ]; then echo "scratch not empty" >&2; exit 3; fi
    mkdir -p out
    echo "$CAIRN_OUT_DIR" > out/${each.key}
    case ${each.key} in a|d|h) echo ${each.key} > "$CAIRN_OUT_DIR/note";; esac
    touch "$CAIRN_OUT_DIR/tmp.$$" && rm "$CAIRN_OUT_DIR/tmp.$$"
  EOT
  outputs  = ["out/${each.key}"]
}
`

func TestScratchFolders(t *testing.T) {
	for _, par := range []int{1, 3} {
		w := newWorkspace(t, scratchPipeline)
		r := w.apply(ApplyOptions{Parallelism: par})
		require.Equal(t, 8, r.res.Ran, r.out)
		run := filepath.Join(w.cache, "runs", r.res.RunID)
		seen := map[string]bool{}
		for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			d := strings.TrimSpace(w.read("out/" + k))
			assert.Equal(t, filepath.Join(run, "out"), filepath.Dir(d), "the scratch folder is in the run's out folder")
			assert.False(t, seen[d], "two nodes shared %s", d)
			seen[d] = true
			note, err := os.ReadFile(filepath.Join(d, "note"))
			switch k {
			case "a", "d", "h":
				require.NoError(t, err, "node %s's scratch folder was kept", k)
				assert.Equal(t, k+"\n", string(note))
			default:
				_, err := os.Stat(d)
				assert.True(t, os.IsNotExist(err), "node %s left nothing: no folder (par %d)", k, par)
			}
		}
		left, err := os.ReadDir(filepath.Join(run, "out"))
		require.NoError(t, err)
		assert.Len(t, left, 3, "only the kept folders remain: %v", left)
	}
}

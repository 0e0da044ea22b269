package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// twoStages is a pipeline of two stages, a and b, each writing out.txt and
// a file in out/, whose outputs are outA and outB (HCL list elements, at
// line 4 and 8 of the file).
func twoStages(outA, outB string) string {
	return fmt.Sprintf(`pipeline "d" {}
stage "command" "a" {
  run     = ["sh", "-c", "mkdir -p out && echo a > out/a.txt && echo a > out.txt"]
  outputs = [%s]
}
stage "command" "b" {
  run     = ["sh", "-c", "mkdir -p out && echo b > out/b.txt && echo b > out.txt"]
  outputs = [%s]
}
`, outA, outB)
}

// Two nodes that declare one path for writing are refused by validate,
// plan and apply alike, before anything runs: the error names both nodes,
// both places in the pipeline file, and what to do.
func TestTwoWritersOfOnePathRefused(t *testing.T) {
	for _, c := range []struct {
		name, pipeline string
		// want are in the error, each place written as P:LINE:COL.
		want []string
	}{{
		name:     "the same file in two stages",
		pipeline: twoStages(`"out.txt"`, `"out.txt"`),
		want:     []string{"Error: Two nodes write one path", "stage.a (outputs, P:4:14) and stage.b (outputs, P:8:14) both write out.txt"},
	}, {
		name: "the instances of a for_each stage share one output",
		pipeline: `pipeline "d" {}
stage "command" "gen" {
  for_each = toset(["x", "y"])
  run      = ["sh", "-c", "echo ${each.key} > out.txt"]
  outputs  = ["out.txt"]
}
`,
		want: []string{"Error: Two nodes write one path", `stage.gen["x"] and stage.gen["y"] both write out.txt (outputs, P:5:15)`, `"out/${each.key}.txt"`},
	}, {
		name:     "a file inside another node's output folder",
		pipeline: twoStages(`"out"`, `"out/b.txt"`),
		want:     []string{"Error: Output inside another node's output", "stage.b writes out/b.txt (outputs, P:8:14), inside out, a folder stage.a writes (outputs, P:4:14)"},
	}, {
		name:     "./out.txt and out.txt are one path",
		pipeline: twoStages(`"./out.txt"`, `"out/b.txt", "out.txt"`),
		want:     []string{"Error: Two nodes write one path", "stage.a (outputs, P:4:14) and stage.b (outputs, P:8:27) both write out.txt"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			root := cliWorkspace(t, map[string]string{"p.hcl": c.pipeline})
			pipe := filepath.Join(root, "p.hcl")
			for _, cmd := range []string{"validate", "plan", "apply"} {
				r := runCLI(t, "--chdir", root, cmd, "p.hcl")
				require.Equal(t, exitBadInput, r.code, "%s:\n%s%s", cmd, r.stdout, r.stderr)
				// The text is wrapped at spaces: compare it unwrapped.
				got := strings.Join(strings.Fields(r.stderr), " ")
				for _, w := range c.want {
					require.Contains(t, got, strings.ReplaceAll(w, "P:", pipe+":"), cmd)
				}
				require.Contains(t, got, "Give each node a path of its own", cmd)
				require.Contains(t, got, "read it through inputs", cmd)
				require.Contains(t, got, "1 error(s) in the pipeline; nothing was run", cmd)
				require.NotContains(t, r.stdout, "started", cmd)
				// Nothing ran: neither writes anything.
				for _, f := range []string{"out.txt", "out"} {
					_, err := os.Lstat(filepath.Join(root, f))
					require.ErrorIs(t, err, os.ErrNotExist, "%s wrote %s", cmd, f)
				}
			}
		})
	}
}

// A node that lists one path twice in its outputs writes it alone: it is
// planned, run and cached as it always was.
func TestOneNodeListingAPathTwiceRuns(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `pipeline "d" {}
stage "command" "a" {
  run     = ["sh", "-c", "mkdir -p out && echo a > out/a.txt && echo '{\"n\": 1}' > out/r.json"]
  outputs = ["out/a.txt", "./out/a.txt", "out"]
  result  = "out/r.json"
}
`})
	r := runCLI(t, "--chdir", root, "validate", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runCLI(t, "--chdir", root, "plan", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "+ stage.a  run: new")
	r = runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	b, err := os.ReadFile(filepath.Join(root, "out", "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "a\n", string(b))
	r = runCLI(t, "--chdir", root, "plan", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "= stage.a  cached")
}

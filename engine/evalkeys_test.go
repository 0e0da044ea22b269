package engine

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/sim/simmodel"
)

// What an evaluation's worker reads keys its items: what it imports from
// a folder in inputs, a folder named in its arguments, a bundle's linked
// files, a file another stage writes. Each test changes one, applies
// again, and reads the scores the worker gives now, never those stored
// for what was there before.

// evalKeysWorkspace is a workspace with pipeline, in which ENDPOINT is the
// endpoint of a simulated task model serving m1, and a dataset of two
// items.
func evalKeysWorkspace(t *testing.T, pipeline string) *workspace {
	t.Helper()
	if _, err := os.Stat("/usr/bin/env"); err != nil {
		t.Skip("no /usr/bin/env")
	}
	srv, err := simmodel.Start(simmodel.Config{Models: []string{"m1"}}, "")
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	w := newWorkspace(t, strings.ReplaceAll(pipeline, "ENDPOINT", srv.URL))
	w.Write("items.jsonl", "{\"id\":\"a\",\"q\":\"1+1\"}\n{\"id\":\"b\",\"q\":\"2+2\"}\n")
	return w
}

// promptWorker scores 1 every item when the text it reads (from the file
// that its arguments after --prompt name, or system.txt in the folder
// after --prompt-dir, or bundle/system.txt) is "good", else 0.
const promptWorker = `import json, sys
args, path = sys.argv[1:], "bundle/system.txt"
for i, a in enumerate(args):
    if a == "--prompt":
        path = args[i + 1]
    elif a == "--prompt-dir":
        path = args[i + 1] + "/system.txt"
    elif a.startswith("--prompt="):
        path = a.split("=", 1)[1]
prompt = open(path).read().strip()
for line in sys.stdin:
    r = json.loads(line)
    print(json.dumps({"id": r["id"], "score": 1.0 if prompt == "good" else 0.0}), flush=True)
`

// evalScores are the scores in the scores file scores.
func evalScores(t *testing.T, w *workspace, scores string) []float64 {
	t.Helper()
	var out []float64
	for _, line := range strings.Split(strings.TrimSpace(w.Read(scores)), "\n") {
		var l struct{ Score float64 }
		require.NoError(t, json.Unmarshal([]byte(line), &l), line)
		out = append(out, l.Score)
	}
	return out
}

// A file named in the worker's arguments that another stage writes makes
// the evaluation wait for that stage, and its content keys the items:
// applied with one prompt, another and the first again, the scores are
// always the prompt's in the workspace.
func TestEvaluateWorkerArgumentWrittenByAStage(t *testing.T) {
	w := evalKeysWorkspace(t, `
pipeline "k" {}
variable "p" { default = "good" }
stage "command" "gen" {
  run     = ["sh", "-c", "mkdir -p gen && echo ${var.p} > gen/prompt.txt"]
  outputs = ["gen/prompt.txt"]
}
stage "command" "gen2" {
  run     = ["sh", "-c", "mkdir -p gen2 && echo ${var.p} > gen2/prompt.txt"]
  outputs = ["gen2/prompt.txt"]
}
stage "evaluate" "ev" {
  worker    = ["python3", "w.py", "-u", "--prompt", "gen/prompt.txt", "fast", "x=y"]
  items     = "items.jsonl"
  model     = "m1"
  endpoints = ["ENDPOINT"]
  scores    = "out/scores.jsonl"
}
stage "evaluate" "ev2" {
  worker    = ["python3", "w.py", "--prompt=gen2/prompt.txt"]
  items     = "items.jsonl"
  model     = "m1"
  endpoints = ["ENDPOINT"]
  scores    = "out2/scores.jsonl"
}
`)
	w.Write("w.py", promptWorker)
	g := w.Load().Graph
	assert.Equal(t, []string{"stage.gen"}, depAddrs(g, "stage.ev"), "plain arguments link nothing")
	assert.Equal(t, []string{"stage.gen2"}, depAddrs(g, "stage.ev2"))
	text := w.PlanText(plan.Options{})
	assert.Contains(t, text, "stage.ev    may run: depends on the output of stage.gen\n")

	for _, p := range []string{"good", "bad", "good"} {
		r := w.apply(ApplyOptions{}, "p="+p)
		require.Zero(t, r.res.Failed, r.out)
		want := 1.0
		if p == "bad" {
			want = 0
		}
		assert.Equal(t, []float64{want, want}, evalScores(t, w, "out/scores.jsonl"), "prompt %s", p)
		assert.Equal(t, []float64{want, want}, evalScores(t, w, "out2/scores.jsonl"), "prompt %s", p)
	}
}

package pipelines_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/sim/simmodel"
)

// A command stage with model_cache: the process finds the cache's URL in
// self.model_cache.url and OPENAI_BASE_URL; a second pipeline asking the
// same requests sends none to the model.

const cacheClient = `import json, os, sys, urllib.request
url = sys.argv[1]
assert url == os.environ["OPENAI_BASE_URL"] == os.environ["OPENAI_API_BASE"], (url, os.environ["OPENAI_BASE_URL"])
out = []
for i in range(int(sys.argv[2])):
    body = json.dumps({"model": "sim-model", "temperature": 0,
        "messages": [{"role": "user", "content": "What is %d + 1?" % i}]}).encode()
    req = urllib.request.Request(url + "/chat/completions", body, {"Content-Type": "application/json"})
    out.append(json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"])
open(sys.argv[3], "w").write("\n".join(out) + "\n")
`

func cachePipeline(stage, endpoint string, n int) string {
	return fmt.Sprintf(`stage "command" %q {
  run         = ["python3", "client.py", self.model_cache.url, "%d", "%s.txt"]
  inputs      = ["client.py"]
  outputs     = ["%s.txt"]
  model_cache = { endpoints = [%q] }
}
`, stage, n, stage, stage, endpoint)
}

var cacheCounts = regexp.MustCompile(`model cache: (\d+) from store, (\d+) forwarded, (\d+) in flight, (\d+) failed`)

func cacheFigures(t *testing.T, out string) (fromStore, forwarded int) {
	t.Helper()
	m := cacheCounts.FindStringSubmatch(out)
	require.NotNil(t, m, "no model cache counts in:\n%s", out)
	a, _ := strconv.Atoi(m[1])
	b, _ := strconv.Atoi(m[2])
	return a, b
}

// cacheWorkspace is a workspace with the client script, and a simulated
// model for its calls (closed when the test ends).
func cacheWorkspace(t *testing.T) (*workspace, *simmodel.Running) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 for the client script")
	}
	w := newWorkspace(t, "sim:0")
	sim, err := simmodel.Start(simmodel.Config{}, "")
	require.NoError(t, err)
	t.Cleanup(func() { sim.Close() })
	w.write("client.py", cacheClient)
	return w, sim
}

func TestModelCacheStageServesTheProcess(t *testing.T) {
	w, sim := cacheWorkspace(t)
	w.write("a.hcl", cachePipeline("first", sim.URL, 6))
	out, code := w.run("apply", "a.hcl")
	require.Equal(t, 0, code, out)
	fromStore, forwarded := cacheFigures(t, out)
	require.Equal(t, [2]int{0, 6}, [2]int{fromStore, forwarded}, out)
	require.Equal(t, 6, sim.ChatRequests())
	calls := 0
	for _, e := range w.lastJournal() {
		if e.T == runlog.Charged && e.Item == "model-call /v1/chat/completions sim-model" && len(e.Key) == 64 {
			calls++
		}
	}
	require.Equal(t, 6, calls, "each forwarded call is journaled")
	first, err := os.ReadFile(filepath.Join(w.dir, "first.txt"))
	require.NoError(t, err)

	// Another pipeline (another stage, same requests): all from the store.
	w.write("b.hcl", cachePipeline("second", sim.URL, 6))
	out, code = w.run("apply", "b.hcl")
	require.Equal(t, 0, code, out)
	fromStore, forwarded = cacheFigures(t, out)
	require.Equal(t, [2]int{6, 0}, [2]int{fromStore, forwarded}, out)
	require.Equal(t, 6, sim.ChatRequests(), "the second pipeline reached the model")
	second, err := os.ReadFile(filepath.Join(w.dir, "second.txt"))
	require.NoError(t, err)
	require.Equal(t, string(first), string(second))
}

func TestModelCacheURLNeedsTheBlock(t *testing.T) {
	w := newWorkspace(t, "sim:0")
	w.write("a.hcl", `stage "command" "x" {
  run = ["echo", self.model_cache.url]
}
`)
	out, code := w.run("plan", "a.hcl")
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "has no model_cache")
}

// An endpoint that is a server's root, not its /v1 base URL, is refused
// before anything runs, where it is written: the calls would go to
// /chat/completions, which vLLM answers 404.
func TestModelCacheEndpointsEndInV1(t *testing.T) {
	w := newWorkspace(t, "sim:0")
	w.write("a.hcl", `stage "command" "x" {
  run         = ["true"]
  model_cache = { endpoints = ["http://127.0.0.1:18500"] }
}
`)
	out, code := w.run("validate", "a.hcl")
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "a.hcl:3:")
	require.Contains(t, out, `model_cache.endpoints: "http://127.0.0.1:18500" does not end in /v1`)
}

// model_cache.weights naming a folder keys the calls by the folder's
// content, as a serve stage's weights do: new weights in the same folder
// run the stage again and forward every call, never answer them with
// the old weights' answers. What is neither a digest nor a path is
// refused before anything runs, where it is written.
func TestModelCacheWeightsPathIsKeyedByContent(t *testing.T) {
	w, sim := cacheWorkspace(t)
	w.write("weights/model.bin", "first weights\n")
	w.write("a.hcl", `variable "w" { default = "weights" }
stage "command" "x" {
  run         = ["python3", "client.py", self.model_cache.url, "3", "x.txt"]
  inputs      = ["client.py"]
  outputs     = ["x.txt"]
  model_cache = {
    endpoints = [`+strconv.Quote(sim.URL)+`]
    weights   = { "sim-model" = var.w }
  }
}
`)
	out, code := w.run("apply", "a.hcl")
	require.Equal(t, 0, code, out)
	fromStore, forwarded := cacheFigures(t, out)
	require.Equal(t, [2]int{0, 3}, [2]int{fromStore, forwarded}, out)

	w.write("weights/model.bin", "second weights\n")
	out, code = w.run("plan", "a.hcl")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "run: input weights changed", "new weights in the folder: the stage must run again")
	require.Contains(t, out, "1 to run, 0 cached")
	out, code = w.run("apply", "a.hcl")
	require.Equal(t, 0, code, out)
	fromStore, forwarded = cacheFigures(t, out)
	require.Equal(t, [2]int{0, 3}, [2]int{fromStore, forwarded}, "the new weights were answered with the old ones' answers:\n%s", out)
	require.Equal(t, 6, sim.ChatRequests())

	for _, bad := range []string{"sha256:XYZ", "sha256:" + strings.Repeat("AB", 32), ""} {
		out, code = w.run("validate", "a.hcl", "--var", "w="+bad)
		require.Equal(t, 2, code, "%q: %s", bad, out)
		require.Contains(t, out, "a.hcl:6:", bad)
		require.Contains(t, strings.Join(strings.Fields(out), " "), strconv.Quote(bad)+" is neither a digest nor a path", bad)
	}
}

// weightsCacheStage is a command stage "x" asking 3 calls through a
// model cache whose weights are the folder weights; extra goes before it.
func weightsCacheStage(url, extra string) string {
	return extra + `stage "command" "x" {
  run         = ["python3", "client.py", self.model_cache.url, "3", "x.txt"]
  inputs      = ["client.py"]
  outputs     = ["x.txt"]
  model_cache = {
    endpoints = [` + strconv.Quote(url) + `]
    weights   = { "sim-model" = "weights" }
  }
}
`
}

// model_cache.weights naming a folder another stage writes (a fine-tuned
// checkpoint) orders the stage after the writer, as a serve stage's
// weights do: its calls are keyed by the weights written, never by what
// the folder held before, whose answers the store has.
func TestModelCacheWeightsWrittenByAStageAreReadAfterIt(t *testing.T) {
	w, sim := cacheWorkspace(t)
	w.write("weights/model.bin", "first weights\n")
	w.write("a.hcl", weightsCacheStage(sim.URL, ""))
	out, code := w.run("apply", "a.hcl")
	require.Equal(t, 0, code, out)
	fromStore, forwarded := cacheFigures(t, out)
	require.Equal(t, [2]int{0, 3}, [2]int{fromStore, forwarded}, out)

	w.write("b.hcl", weightsCacheStage(sim.URL, `stage "command" "train" {
  run     = ["sh", "-c", "printf 'second weights\\n' > weights/model.bin"]
  outputs = ["weights"]
}
`))
	out, code = w.run("plan", "b.hcl")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `\? stage\.x +may run: depends on the output of stage\.train`, out, "the stage must wait for the weights it reads")
	out, code = w.run("apply", "b.hcl")
	require.Equal(t, 0, code, out)
	b, err := os.ReadFile(filepath.Join(w.dir, "weights/model.bin"))
	require.NoError(t, err)
	require.Equal(t, "second weights\n", string(b))
	fromStore, forwarded = cacheFigures(t, out)
	require.Equal(t, [2]int{0, 3}, [2]int{fromStore, forwarded}, "the written weights were answered with the old ones' answers:\n%s", out)
	require.Equal(t, 6, sim.ChatRequests())
}

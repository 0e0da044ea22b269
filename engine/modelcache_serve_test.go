package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
)

// A command stage whose model_cache takes a serve stage's endpoints
// (docs/model-cache.md): applied again with nothing changed, the serve
// stage is not started (nothing to evaluate) and the command is taken
// from the cache, as an evaluation fed by a serve stage is, without
// reading the endpoints a server nobody started would have; changed, it
// runs, and its servers start first.
const modelCacheOfAServeStage = `
pipeline "t" {}
stage "serve" "m" {
  run       = ["sim-server", "--port", "{port}"]
  model     = "sim-model"
  endpoints = ["http://127.0.0.1:9/v1"]
}
stage "command" "ask" {
  run         = ["sh", "-c", "cat question.txt > answers.txt && echo run >> runs.log"]
  inputs      = ["question.txt"]
  outputs     = ["answers.txt"]
  model_cache = { endpoints = stage.m.endpoints }
}
`

func TestModelCacheOfAServeStageCachedWhenNotStarted(t *testing.T) {
	w := newWorkspace(t, modelCacheOfAServeStage)
	w.Write("question.txt", "what is 1 + 1?\n")
	r := w.apply(ApplyOptions{})
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.Equal(t, 1, r.res.Ran, r.out)
	assert.Contains(t, r.out, "stage.m  servers run elsewhere")

	for range 2 {
		r = w.apply(ApplyOptions{})
		require.Equal(t, 0, r.res.Failed, r.out)
		assert.Equal(t, 0, r.res.Ran, r.out)
		assert.Equal(t, 1, r.res.Cached, r.out)
		assert.Contains(t, r.out, "stage.m  not started: nothing to evaluate")
		assert.NotContains(t, r.out, "Invalid model_cache")
	}
	assert.Equal(t, "run\n", w.Read("runs.log"))

	// Its question changed: it runs, with the serve stage's endpoints.
	w.Write("question.txt", "what is 2 + 2?\n")
	r = w.apply(ApplyOptions{})
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.Equal(t, 1, r.res.Ran, r.out)
	assert.Contains(t, r.out, "stage.m  servers run elsewhere", "its servers start first")
	assert.Equal(t, "run\nrun\n", w.Read("runs.log"))
}

// A serve stage given endpoints starts nothing: the GPUs its gpus asks
// for (what its servers would hold, were cairn to start them) are not
// leased, and a machine without GPUs runs it.
func TestServeStageOfServersElsewhereHoldsNoGPUs(t *testing.T) {
	w := newWorkspace(t, strings.Replace(modelCacheOfAServeStage, `model     = "sim-model"`, `model     = "sim-model"
  gpus      = 2`, 1))
	w.Write("question.txt", "what is 1 + 1?\n")
	r := w.apply(ApplyOptions{})
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.Equal(t, 1, r.res.Ran, r.out)
	assert.Contains(t, r.out, "stage.m  servers run elsewhere")
}

// weights that cairn cannot read are said at the weights attribute: a
// link to nothing in the weights' folder (a digest cannot be made of it),
// and a digest misspelt, which is no path either.
func TestServeWeightsThatCannotBeReadAreSaidWhereTheyAre(t *testing.T) {
	src := strings.Replace(modelCacheOfAServeStage, `  endpoints = ["http://127.0.0.1:9/v1"]`, `  weights   = "wdir"`, 1)
	w := newWorkspace(t, src)
	w.Write("question.txt", "what is 1 + 1?\n")
	require.NoError(t, os.MkdirAll(filepath.Join(w.Root, "wdir"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(w.Root, "nowhere"), filepath.Join(w.Root, "wdir", "model.bin")))
	l := w.Load()
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	_, diags := plan.Make(l.Graph, c, plan.Options{})
	require.True(t, diags.HasErrors())
	assert.Equal(t, "Cannot read the weights", diags[0].Summary)
	require.NotNil(t, diags[0].Subject)
	assert.Equal(t, 6, diags[0].Subject.Start.Line, "the weights attribute: %s", diags.Error())

	w = newWorkspace(t, strings.Replace(src, `"wdir"`, `"sha256:xyz"`, 1))
	l, diags = plan.Load(plan.LoadOptions{Path: "pipeline.hcl", Root: w.Root, Validate: true})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	diags = l.Graph.CheckStages()
	require.True(t, diags.HasErrors())
	assert.Contains(t, diags.Error(), `weights "sha256:xyz" is neither a digest nor a path`)
}

// A serve stage of servers run elsewhere given none says so as it starts.
func TestServeStageOfNoServersSaysSo(t *testing.T) {
	t.Setenv("TASK_ENDPOINTS", "")
	t.Setenv("VLLM_BASE_URL", "")
	w := newWorkspace(t, strings.Replace(modelCacheOfAServeStage, `  endpoints = ["http://127.0.0.1:9/v1"]`, `  endpoints = []`, 1))
	w.Write("question.txt", "what is 1 + 1?\n")
	r := w.apply(ApplyOptions{})
	assert.Contains(t, r.out, "stage.m  servers run elsewhere: none given (endpoints is empty, and TASK_ENDPOINTS and VLLM_BASE_URL are unset)")
}

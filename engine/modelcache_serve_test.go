package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

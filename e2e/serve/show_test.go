package serve_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
)

// cairn show RUN gives a serve node of two replicas on a GPU each as
// holding both GPUs, with the memory both used (each replica reports
// 1000 MiB), GPU-seconds over both, and, as apply counts it, not among
// the nodes that ran.
func TestServeShowCountsEveryReplica(t *testing.T) {
	w := newWorkspace(t, 8)
	port := e2etest.FreePorts(t, 4)
	// Answers take 200 ms: the servers live for several memory samples.
	f := w.pipeline(serveStage("tm", port, 2, 1, "", "--latency", "200ms"), evalStage("a", "tm"))
	code, out := w.run("apply", f)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Apply complete: 1 ran")
	run := runID.FindStringSubmatch(out)[1]
	code, show := w.run("show", run)
	require.Equal(t, 0, code, show)
	assert.Regexp(t, regexp.MustCompile(`(?m)^stage\.tm\s+ok\s+1\s+\S+\s+\S+ MiB\s+2000\.0 MiB\s+0,1\s`), show)
	code, js := w.run("show", run, "--json")
	require.Equal(t, 0, code, js)
	var v struct {
		Run struct {
			Counts struct {
				Ran int `json:"ran"`
			} `json:"counts"`
		} `json:"run"`
		Nodes []struct {
			Address    string  `json:"address"`
			GPUs       []int   `json:"gpus"`
			PeakGPU    float64 `json:"peak_gpu_mib"`
			GPUSeconds float64 `json:"gpu_seconds"`
			Duration   float64 `json:"duration_s"`
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &v), js)
	assert.Equal(t, 1, v.Run.Counts.Ran, "the serve node counted as ran")
	found := false
	for _, n := range v.Nodes {
		if n.Address != "stage.tm" {
			continue
		}
		found = true
		assert.Equal(t, []int{0, 1}, n.GPUs)
		assert.Equal(t, 2000.0, n.PeakGPU)
		assert.InDelta(t, 2*n.Duration, n.GPUSeconds, 1e-6)
	}
	assert.True(t, found, js)
}

package serve_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
)

// A serve node makes no cache record: the report of a run that served a
// model does not count it among the nodes whose records gc collected,
// on the terminal, on the page or in `cairn show RUN --json`.
func TestServeRunReportSaysNothingIsGone(t *testing.T) {
	w := newWorkspace(t, 4)
	port := e2etest.FreePorts(t, 1)
	f := w.pipeline(serveStage("tm", port, 1, 1, "", "--latency", "20ms"), evalStage("a", "tm"))
	code, out := w.run("apply", f)
	require.Equal(t, 0, code, out)
	run := runID.FindStringSubmatch(out)[1]
	code, rep := w.run("report", run)
	require.Equal(t, 0, code, rep)
	assert.NotContains(t, rep, "no longer holds")
	code, show := w.run("show", run, "--json")
	require.Equal(t, 0, code, show)
	assert.NotContains(t, show, `"gone"`)
	assert.NotContains(t, show, "no longer holds")
}

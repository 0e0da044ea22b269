package engine

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/store"
)

// A node that allocates a known amount and holds it: its peak RSS lands in
// the action record and in self.peak_rss_mib, within 10%.
func TestPeakMemoryRecorded(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	w := newWorkspace(t, `
pipeline "peak" {}
stage "command" "alloc" {
  run    = ["python3", "-c", "import time, json; b = b'x' * (300 * 2**20); time.sleep(1); json.dump({'ok': 1}, open('r.json', 'w'))"]
  result = "r.json"
  postcondition {
    condition     = self.peak_rss_mib >= 300
    error_message = "peak ${self.peak_rss_mib} MiB below the 300 MiB allocated"
  }
}
`)
	r := w.apply(ApplyOptions{})
	require.Equal(t, 1, r.res.Ran, r.out)
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	recs := c.Records()
	require.Len(t, recs, 1)
	assert.GreaterOrEqual(t, recs[0].PeakRSSMiB, 300.0)
	assert.LessOrEqual(t, recs[0].PeakRSSMiB, 330.0, "within 10%% of 300 MiB (the interpreter itself takes ~10-20 MiB)")
}

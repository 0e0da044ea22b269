package runreport_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/runreport"
	"github.com/cairn-run/cairn/runreport/browsertest"
)

// A run's event log, where it has one, gives each optimization's rollout
// meter over time (charged, attempted, infrastructure failures), in place
// of the journal's charged records, and the warnings for people; a line
// that does not read is skipped.
func TestReportReadsEventLog(t *testing.T) {
	dir := writeJournal(t, t.TempDir(), "20260301T120000.000Z-dddddd", []runlog.Entry{
		{T: runlog.Planned, Time: t0, Node: "stage.opt", Key: "oooo"},
		{T: runlog.Started, Time: at(10), Node: "stage.opt", Attempt: 1},
		{T: runlog.Charged, Time: at(100), Node: "stage.opt", Count: 1, Item: "a"},
		{T: runlog.Charged, Time: at(200), Node: "stage.opt", Count: 1, Item: "b"},
		{T: runlog.Finished, Time: at(3000), Node: "stage.opt", Attempt: 1, Counts: map[string]int{"charged": 20, "attempted": 23, "infra_failures": 3}},
	}, "ok")
	var log strings.Builder
	for i := 1; i <= 2; i++ {
		fmt.Fprintf(&log, `{"v":1,"type":"rollout_counts","time":"%s","run":"r","node":"stage.opt","budget":100,"charged":%d,"attempted":%d,"infra_failures":%d,"from_store":0,"text":"x"}`+"\n",
			at(1000*i).Format("2006-01-02T15:04:05.999999999Z07:00"), 10*i, 10*i+i+1, i+1)
	}
	log.WriteString("not json\n")
	log.WriteString(`{"v":1,"type":"warning","time":"2026-03-01T12:00:02Z","text":"the cache is shared: records are written for its group"}` + "\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, runreport.EventLogName), []byte(log.String()), 0o644))

	r, err := runreport.Build(dir, runreport.Options{})
	require.NoError(t, err)
	require.Len(t, r.Charges, 1)
	c := r.Charges[0]
	assert.True(t, c.FromEvents)
	assert.Equal(t, []int{10, 20}, c.N)
	assert.Equal(t, []int{12, 23}, c.Attempted)
	assert.Equal(t, []int{2, 3}, c.Infra)
	assert.Equal(t, 100, c.Budget)
	assert.Equal(t, []float64{1, 2}, c.T)
	assert.Equal(t, []string{"warning: the cache is shared: records are written for its group"}, r.Run.Notes)

	_, page := writePage(t, dir)
	p := browsertest.Open(t, page, 1400, 1000)
	assert.Equal(t, 2, browsertest.Eval[int](t, p, `document.querySelectorAll("svg.charge[data-node='stage.opt'] path.series").length`), "attempted and infrastructure failures beside charged")
	assert.Contains(t, browsertest.Eval[string](t, p, `document.querySelector("svg.charge[data-node='stage.opt']").textContent`), "charged 20, attempted 23, infra failures 3 of 100")
	assert.Contains(t, browsertest.Eval[string](t, p, `document.querySelector(".note").textContent`), "the cache is shared")
	assert.Empty(t, p.Errors())
}

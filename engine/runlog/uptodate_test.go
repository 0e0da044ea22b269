package runlog

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Applies of many processes append whole lines side by side; a damaged
// line is skipped, the rest read back; List shows them as ended runs
// beside the run folders.
func TestUpToDateLog(t *testing.T) {
	cache := t.TempDir()
	runs, err := ReadUpToDate(cache)
	require.NoError(t, err)
	assert.Empty(t, runs, "no log yet: no runs")

	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, AppendUpToDate(cache, UpToDateRun{RunID: fmt.Sprintf("r%02d", i), Time: t0.Add(time.Duration(i) * time.Hour), Pipeline: "p", Cached: i, Duration: 0.002, Args: []string{"apply", `--var=x="a b"`}}))
		}()
	}
	wg.Wait()
	// What a power loss can leave: zeros, and half a line.
	f, err := os.OpenFile(UpToDatePath(cache), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("\x00\x00\x00\x00{\"run\":\"torn\",\"ti")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, AppendUpToDate(cache, UpToDateRun{RunID: "r98", Time: t0.Add(100 * time.Hour), Pipeline: "p", Cached: 7}))

	runs, err = ReadUpToDate(cache)
	require.NoError(t, err)
	require.Len(t, runs, 40, "the torn line and the one written after it on the same line are skipped")
	seen := map[string]bool{}
	for _, r := range runs {
		seen[r.RunID] = true
		assert.Equal(t, []string{"apply", `--var=x="a b"`}, r.Args)
	}
	for i := range 40 {
		assert.True(t, seen[fmt.Sprintf("r%02d", i)], "run r%02d", i)
	}
	// A line after a clean break reads again.
	require.NoError(t, AppendUpToDate(cache, UpToDateRun{RunID: "r99", Time: t0.Add(101 * time.Hour), Pipeline: "p", Cached: 3}))
	r, err := FindUpToDate(cache, "r99")
	require.NoError(t, err)
	require.NotNil(t, r)
	assert.Equal(t, 3, r.Cached)

	list, err := List(cache)
	require.NoError(t, err)
	require.Len(t, list, 41)
	assert.Equal(t, "r99", list[0].ID, "newest first")
	assert.Equal(t, "ok", list[0].State)
	assert.Equal(t, 3, list[0].UpToDate)
	assert.Empty(t, list[0].Dir, "no run folder")

	// gc: runs before the cutoff go, with the damaged line; a dry run
	// only counts them.
	cutoff := t0.Add(30 * time.Hour)
	before, err := os.ReadFile(UpToDatePath(cache))
	require.NoError(t, err)
	n, err := TrimUpToDate(cache, cutoff, true)
	require.NoError(t, err)
	assert.Equal(t, 30, n)
	after, err := os.ReadFile(UpToDatePath(cache))
	require.NoError(t, err)
	assert.Equal(t, before, after, "a dry run changes nothing")
	n, err = TrimUpToDate(cache, cutoff, false)
	require.NoError(t, err)
	assert.Equal(t, 30, n)
	runs, err = ReadUpToDate(cache)
	require.NoError(t, err)
	require.Len(t, runs, 11)
	for _, r := range runs {
		assert.False(t, r.Time.Before(cutoff), r.RunID)
	}
	n, err = TrimUpToDate(cache, cutoff, false)
	require.NoError(t, err)
	assert.Zero(t, n)
}

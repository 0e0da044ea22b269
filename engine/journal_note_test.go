package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hand-encoded cached record reads back like one encoding/json wrote,
// whatever the address holds.
func TestNoteCachedRoundTrip(t *testing.T) {
	j, err := OpenJournal(t.TempDir(), NewRunID(), true)
	require.NoError(t, err)
	addrs := []string{`stage.x["a"]`, "stage.plain", "stage.x[\"tab\\there\"]", "stage.x[\"ünï\u00e9 ✓\"]", "stage.x[\"ctl\x01\x1f\"]", "stage.x[\"bad\xff\"]"}
	for _, a := range addrs {
		require.NoError(t, j.NoteCached(a, "abc123"))
	}
	require.NoError(t, j.Close())
	es, err := ReadJournal(j.Dir)
	require.NoError(t, err)
	require.Len(t, es, len(addrs))
	for i, e := range es {
		want, _ := json.Marshal(addrs[i])
		var decoded string
		require.NoError(t, json.Unmarshal(want, &decoded))
		assert.Equal(t, JCached, e.T)
		assert.Equal(t, decoded, e.Node)
		assert.Equal(t, "abc123", e.Key)
		assert.False(t, e.Time.IsZero())
	}
}

// Cached records wait for one write, but never behind a record written
// after them.
func TestNoteCachedKeepsOrder(t *testing.T) {
	j, err := OpenJournal(t.TempDir(), NewRunID(), true)
	require.NoError(t, err)
	require.NoError(t, j.NoteCached("stage.a", "k1"))
	require.NoError(t, j.NoteCached("stage.b", "k2"))
	require.NoError(t, j.Write(JEntry{T: JStarted, Node: "stage.c"}))
	require.NoError(t, j.NoteCached("stage.d", "k4"))
	require.NoError(t, j.Note(JEntry{T: JSkipped, Node: "stage.e"}))
	require.NoError(t, j.NoteCached("stage.f", "k6"))
	require.NoError(t, j.Close())
	es, err := ReadJournal(j.Dir)
	require.NoError(t, err)
	var got []string
	for _, e := range es {
		got = append(got, e.T+" "+e.Node)
	}
	assert.Equal(t, []string{"cached stage.a", "cached stage.b", "started stage.c", "cached stage.d", "skipped stage.e", "cached stage.f"}, got)
}

// Runs that ended are looked at once: the next apply starts after them.
func TestSettledRunsAreNotReadAgain(t *testing.T) {
	w := newWorkspace(t, twoStage)
	first := w.apply(ApplyOptions{}).res.RunID
	second := w.apply(ApplyOptions{}).res.RunID
	b, err := os.ReadFile(filepath.Join(w.cache, "runs", settledFile))
	require.NoError(t, err)
	assert.Equal(t, first+"\n", string(b), "the second apply found the first one ended")

	// A run folder that looks killed mid-node: read, it is reported.
	fake := func(id string) {
		j, err := OpenJournal(w.cache, id, true)
		require.NoError(t, err)
		require.NoError(t, j.Write(JEntry{T: JRunStart, RunID: id, Pipeline: "t", PID: 1}))
		require.NoError(t, j.Write(JEntry{T: JStarted, Node: `stage.make["a"]`, Key: "k"}))
		require.NoError(t, j.log.Close())
		require.NoError(t, j.lock.Unlock())
	}
	// Older than the settled mark: not looked at.
	fake(first[:len(first)-6] + "000000")
	r := w.apply(ApplyOptions{})
	assert.NotContains(t, r.out, "were running when an earlier apply stopped", r.out)
	b, err = os.ReadFile(filepath.Join(w.cache, "runs", settledFile))
	require.NoError(t, err)
	assert.Greater(t, r.res.RunID, second)
	assert.Equal(t, second+"\n", string(b))

	// Newer than it, and than the last apply (a run id made now may share
	// that apply's millisecond and sort before it): looked at, and
	// reported.
	fake(r.res.RunID[:len(r.res.RunID)-6] + "zzzzzz")
	r = w.apply(ApplyOptions{})
	assert.Contains(t, r.out, `were running when an earlier apply stopped: stage.make["a"]`, r.out)
}

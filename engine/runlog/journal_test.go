package runlog

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hand-encoded cached record reads back like one encoding/json wrote,
// whatever the address holds, more of them than wait for one write.
func TestNoteCachedRoundTrip(t *testing.T) {
	addrs := []string{`stage.x["a"]`, "stage.plain", "stage.x[\"tab\\there\"]", "stage.x[\"ünï\u00e9 ✓\"]", "stage.x[\"ctl\x01\x1f\"]", "stage.x[\"bad\xff\"]", `stage.x["back\\slash"]`}
	for len(addrs) < maxCachedNotes+10 {
		addrs = append(addrs, fmt.Sprintf("stage.many[%q]", fmt.Sprint(len(addrs))))
	}
	j, err := Open(t.TempDir(), NewRunID(), true)
	require.NoError(t, err)
	for _, a := range addrs {
		require.NoError(t, j.NoteCached(a, "abc123"))
	}
	require.NoError(t, j.Close())
	es, err := Read(j.Dir)
	require.NoError(t, err)
	require.Len(t, es, len(addrs))
	for i, e := range es {
		want, _ := json.Marshal(addrs[i])
		var decoded string
		require.NoError(t, json.Unmarshal(want, &decoded))
		assert.Equal(t, Cached, e.T)
		assert.Equal(t, decoded, e.Node)
		assert.Equal(t, "abc123", e.Key)
		assert.False(t, e.Time.IsZero())
	}
}

// Cached records wait for one write, but never behind a record written
// after them.
func TestNoteCachedKeepsOrder(t *testing.T) {
	j, err := Open(t.TempDir(), NewRunID(), true)
	require.NoError(t, err)
	require.NoError(t, j.NoteCached("stage.a", "k1"))
	require.NoError(t, j.NoteCached("stage.b", "k2"))
	require.NoError(t, j.Write(Entry{T: Started, Node: "stage.c"}))
	require.NoError(t, j.NoteCached("stage.d", "k4"))
	require.NoError(t, j.Note(Entry{T: Skipped, Node: "stage.e"}))
	require.NoError(t, j.NoteCached("stage.f", "k6"))
	require.NoError(t, j.Close())
	es, err := Read(j.Dir)
	require.NoError(t, err)
	var got []string
	for _, e := range es {
		got = append(got, e.T+" "+e.Node)
	}
	assert.Equal(t, []string{"cached stage.a", "cached stage.b", "started stage.c", "cached stage.d", "skipped stage.e", "cached stage.f"}, got)
}

// An evaluation's charged records are in the file when WriteBatchUnsynced
// returns (what a kill -9 leaves is read back), cost no fsync of their
// own, and are synced by the next durable record.
func TestChargedRecordsWrittenNotSynced(t *testing.T) {
	j, err := Open(t.TempDir(), NewRunID(), false)
	require.NoError(t, err)
	defer j.Close()
	require.NoError(t, j.Write(Entry{T: RunStart, Pipeline: "p"}))
	require.NoError(t, j.Write(Entry{T: Started, Node: "stage.e", Attempt: 1}))
	before := j.Syncs()
	for i := range 3 {
		require.NoError(t, j.WriteBatchUnsynced([]Entry{
			{T: Charged, Node: "stage.e", Item: fmt.Sprint("a", i), Key: "k", Count: 1},
			{T: Charged, Node: "stage.e", Item: fmt.Sprint("b", i), Key: "k", Count: 1},
		}))
	}
	assert.Equal(t, before, j.Syncs(), "charged records sync nothing on their own")
	es, err := Read(j.Dir)
	require.NoError(t, err)
	var items []string
	for _, e := range es {
		if e.T == Charged {
			items = append(items, e.Item)
		}
	}
	assert.Equal(t, []string{"a0", "b0", "a1", "b1", "a2", "b2"}, items, "in the file, in order, before any sync")
	require.NoError(t, j.Write(Entry{T: Failed, Node: "stage.e", Attempt: 1, Class: "infrastructure"}))
	assert.Equal(t, before+1, j.Syncs(), "the next durable record syncs them with itself")
}

// A run folder whose journal cannot be made (its header cannot be
// written: a full disk, here a file size limit of 0) is removed again:
// left, `cairn status` would list it as a damaged run.
func TestOpenFailureLeavesNoRunFolder(t *testing.T) {
	var old syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old))
	signal.Ignore(syscall.SIGXFSZ)
	defer signal.Reset(syscall.SIGXFSZ)
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 0, Max: old.Max}))
	cache := t.TempDir()
	_, err := Open(cache, NewRunID(), true)
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old))
	require.Error(t, err)
	es, rerr := os.ReadDir(filepath.Join(cache, "runs"))
	require.NoError(t, rerr)
	assert.Empty(t, es, "a run folder was left")
}

func TestIsRunID(t *testing.T) {
	assert.True(t, IsRunID(NewRunID()))
	assert.True(t, IsRunID("20261208T015746.816Z-4923c6"))
	for _, s := range []string{"", "20261208T015746.816Z", "20261208T015746.816Z-", "20261208T015746Z-4923c6", "20261308T015746.816Z-4923c6", "20261208T015746.816Z-4923C6", "stage.a", "4923c6"} {
		assert.False(t, IsRunID(s), s)
	}
}

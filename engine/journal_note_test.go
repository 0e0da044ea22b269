package engine

import (
	"encoding/json"
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

package slurm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A job seen FAILED is decided only once that state has stood for
// failedSettle over two queries: a requeued job shows its killed run FAILED for
// a moment, then pending again, and that run is not its end. COMPLETED is
// decided at once.
func TestFailedStateSettlesBeforeItIsTaken(t *testing.T) {
	t0 := time.Now()
	var tr tracked
	assert.True(t, tr.settled("COMPLETED", t0, 100*time.Millisecond))
	assert.False(t, tr.settled("FAILED", t0, 100*time.Millisecond), "first seen")
	assert.False(t, tr.settled("FAILED", t0.Add(failedSettle/2), 100*time.Millisecond), "not settled yet")
	assert.True(t, tr.settled("FAILED", t0.Add(failedSettle), 100*time.Millisecond))
	var slow tracked
	assert.False(t, slow.settled("CANCELLED", t0, 5*time.Second))
	assert.False(t, slow.settled("CANCELLED", t0.Add(failedSettle), 5*time.Second), "the next query, at the poll interval")
	assert.True(t, slow.settled("CANCELLED", t0.Add(5*time.Second), 5*time.Second))
}

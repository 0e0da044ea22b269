package executor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On Linux the poll loop supervises a job, unless it is turned off.
func TestLocalPollLoopSupervises(t *testing.T) {
	if noPidfd.Load() {
		t.Skip("no pidfds: a kernel before 5.3")
	}
	for _, off := range []bool{false, true} {
		old := pollOff
		pollOff = off
		job, err := Local{}.Submit(context.Background(), shSpec(t, "true"))
		pollOff = old
		require.NoError(t, err)
		assert.Equal(t, !off, job.(*localJob).poll != nil, "pollOff %v", off)
		_, err = job.Wait(context.Background())
		require.NoError(t, err)
	}
}

// pollTimeout rounds up to whole milliseconds, is 0 once a deadline has
// passed and -1 with none.
func TestPollTimeout(t *testing.T) {
	now := time.Now()
	assert.Equal(t, -1, pollTimeout(now, time.Time{}, time.Time{}))
	assert.Equal(t, 0, pollTimeout(now, now))
	assert.Equal(t, 0, pollTimeout(now, time.Time{}, now.Add(-time.Second)))
	assert.Equal(t, 1, pollTimeout(now, now.Add(time.Microsecond)))
	assert.Equal(t, 250, pollTimeout(now, now.Add(time.Second), now.Add(250*time.Millisecond)))
	assert.Equal(t, 1<<30, pollTimeout(now, now.Add(1000*time.Hour)))
}

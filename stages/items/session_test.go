package items

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/sim/simmodel"
)

// A session's worker serves batch after batch, each of another bundle named
// in its requests: one worker start for all of them, every item evaluated
// and stored once, and a batch evaluated again taken from the store.
func TestSessionKeepsItsWorker(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(nil)
	cfg.Replicas = 1
	s, err := OpenSession(context.Background(), cfg)
	require.NoError(t, err)
	defer s.Close()
	list := makeItems(10)
	for b := range 5 {
		bundle := fmt.Sprintf("bundles/c%02d", b)
		sum, err := s.Evaluate(context.Background(), Batch{Items: list, BundleDigest: "sha256:" + bundle, Bundle: bundle})
		require.NoError(t, err)
		assert.Equal(t, 10, sum.Evaluated, bundle)
		assert.Equal(t, 10, sum.Charged, bundle)
		assert.Equal(t, 1, sum.WorkerStarts, "the worker of the first batch serves them all")
		for _, o := range sum.Items {
			require.NotNil(t, o.Result, o.ID)
			var out map[string]string
			require.NoError(t, json.Unmarshal(o.Result.Outputs, &out))
			assert.Equal(t, bundle, out["bundle"], "each request names its batch's bundle")
		}
	}
	sum, err := s.Evaluate(context.Background(), Batch{Items: list, BundleDigest: "sha256:bundles/c00", Bundle: "bundles/c00"})
	require.NoError(t, err)
	assert.Equal(t, 10, sum.FromCache)
	assert.Equal(t, 0, sum.Attempted)
	total := 0
	for _, n := range requestsPerItem(f.requests(), "") {
		total += n
	}
	assert.Equal(t, 50, total, "the simulated model got each item once per bundle, and nothing for the batch from the store")
	for key, n := range storedPerKey(t, f.dir) {
		assert.Equal(t, 1, n, key)
	}
	assert.Len(t, storedPerKey(t, f.dir), 50)
	require.NoError(t, s.Close())
	_, err = s.Evaluate(context.Background(), Batch{Items: list, BundleDigest: "sha256:x"})
	assert.ErrorIs(t, err, ErrSessionClosed)
}

// A session's worker that dies is replaced: the items it had in flight are
// sent again to the fresh one (crash retries), none is lost or stored
// twice, and the batches go on with the new worker.
func TestSessionReplacesADeadWorker(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(nil, "HELPER_CRASH_EVERY=7")
	cfg.Replicas, cfg.MaxInFlight = 1, 2
	s, err := OpenSession(context.Background(), cfg)
	require.NoError(t, err)
	defer s.Close()
	starts := 0
	for b := range 4 {
		sum, err := s.Evaluate(context.Background(), Batch{Items: makeItems(10), BundleDigest: fmt.Sprintf("sha256:b%d", b)})
		require.NoError(t, err, "batch %d", b)
		assert.Equal(t, 10, sum.Evaluated, "batch %d", b)
		assert.Equal(t, 10, sum.Charged, "batch %d", b)
		assert.Equal(t, 0, sum.Failed, "batch %d", b)
		starts = sum.WorkerStarts
	}
	assert.Greater(t, starts, 1, "the worker crashed and was replaced")
	assert.Less(t, starts, 40, "a worker serves several requests")
	stored := storedPerKey(t, f.dir)
	assert.Len(t, stored, 40)
	for key, n := range stored {
		assert.Equal(t, 1, n, key)
	}
	assert.Contains(t, f.diag.String(), "crash retry")
}

// A session whose worker cannot start fails the batch with ErrWorker, and
// every later batch with the same error, so that its user opens another.
func TestSessionWorkerThatCannotStart(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(nil)
	cfg.Worker = []string{filepath.Join(t.TempDir(), "no-such-worker")}
	s, err := OpenSession(context.Background(), cfg)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Evaluate(context.Background(), Batch{Items: makeItems(2), BundleDigest: "sha256:b"})
	require.ErrorIs(t, err, ErrWorker)
	assert.True(t, s.Dead())
	_, err = s.Evaluate(context.Background(), Batch{Items: makeItems(2), BundleDigest: "sha256:b"})
	assert.ErrorIs(t, err, ErrWorker)
}

// Start starts a session's workers before its first batch (#34: an
// optimize stage's rollout service starts them with the method, so that
// its first request does not wait for a worker to start); the first batch
// is served by them.
func TestSessionStartStartsTheWorkersBeforeTheFirstBatch(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(nil)
	cfg.Replicas = 2
	s, err := OpenSession(context.Background(), cfg)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Start())
	for deadline := time.Now().Add(time.Minute); s.WorkerStarts() < 2; {
		require.True(t, time.Now().Before(deadline), "the workers started before the first batch")
		time.Sleep(5 * time.Millisecond)
	}
	assert.Empty(t, f.requests(), "nothing is sent before a batch")
	sum, err := s.Evaluate(context.Background(), Batch{Items: makeItems(10), BundleDigest: "sha256:b"})
	require.NoError(t, err)
	assert.Equal(t, 10, sum.Evaluated)
	assert.Equal(t, 2, sum.WorkerStarts, "the first batch is served by the workers started before it")
	s.Close()
	assert.ErrorIs(t, s.Start(), ErrSessionClosed)
}

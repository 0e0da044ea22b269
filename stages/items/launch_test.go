package items

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/sim/simmodel"
)

// pidLauncher starts workers on this machine and keeps their pids.
type pidLauncher struct {
	mu   sync.Mutex
	pids []int
}

func (l *pidLauncher) StartWorker(ctx context.Context, w process.WorkerSpec) (process.Worker, error) {
	p, err := process.LocalLauncher.StartWorker(ctx, w)
	if err == nil {
		var pid int
		if _, serr := fmt.Sscanf(p.Name(), "pid %d", &pid); serr == nil {
			l.mu.Lock()
			l.pids = append(l.pids, pid)
			l.mu.Unlock()
		}
	}
	return p, err
}

// started returns how many workers were started, after checking that
// none of them is left running (nor unreaped).
func (l *pidLauncher) started(t *testing.T) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, pid := range l.pids {
		assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "worker pid %d is still there", pid)
	}
	return len(l.pids)
}

// storedResults are results, as another evaluator would store them, for
// every item of cfg.
func storedResults(t *testing.T, cfg Config) []Record {
	t.Helper()
	var recs []Record
	for _, it := range cfg.Items {
		key, err := ItemKey(cfg.BundleDigest, it.Data, cfg.ModelID, cfg.Runtime, cfg.WorkerDigest)
		require.NoError(t, err)
		score := 1.0
		recs = append(recs, Record{Key: key, Result: Result{Score: &score, Charged: 1}})
	}
	return recs
}

// keyedRun is a run of 40 items, none of them stored, whose keys are
// made: what Evaluate has done before its scan.
func keyedRun(t *testing.T) (*fixture, Config, *pidLauncher, *run) {
	t.Helper()
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(makeItems(40))
	launcher := &pidLauncher{}
	cfg.Launcher = launcher
	r, err := newRun(cfg)
	require.NoError(t, err)
	require.NoError(t, r.reset(cfg.Items, cfg.BundleDigest, cfg.Bundle, context.Background()))
	return f, cfg, launcher, r
}

// An item missing from the store launches the workers while the keys are
// made, before the scan: a worker's start and the endpoints' check then
// overlap the keying instead of following it (#34).
func TestWorkersLaunchWhileItemsAreKeyed(t *testing.T) {
	f, cfg, launcher, r := keyedRun(t)
	assert.True(t, r.launched, "the workers are launched by the keying, before the scan")
	sum, err := r.evaluate(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 40, sum.Evaluated)
	assert.Equal(t, 40, f.sim.ChatRequests())
	assert.Equal(t, cfg.Replicas, launcher.started(t))

	// Every item stored: the keying launches nothing.
	cfg.Launcher = &pidLauncher{}
	r, err = newRun(cfg)
	require.NoError(t, err)
	require.NoError(t, r.reset(cfg.Items, cfg.BundleDigest, cfg.Bundle, context.Background()))
	assert.False(t, r.launched)
	sum, err = r.evaluate(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 40, sum.FromCache)
	assert.Zero(t, cfg.Launcher.(*pidLauncher).started(t))
}

// Workers launched for items that another evaluator stores before the
// scan are stopped before their first request: nothing is sent, every
// item comes from the store, and no worker is left running.
func TestWorkersLaunchedForItemsStoredMeanwhileAreStopped(t *testing.T) {
	f, cfg, launcher, r := keyedRun(t)
	require.True(t, r.launched)

	other, err := OpenStore(f.dir, StoreOptions{NoSync: true})
	require.NoError(t, err)
	defer other.Close()
	require.NoError(t, other.PutBatch(storedResults(t, cfg)))

	sum, err := r.evaluate(context.Background())
	require.NoError(t, err)
	assert.Equal(t, Counts{Total: 40, Done: 40, FromCache: 40}, sum.Counts)
	assert.Zero(t, f.sim.ChatRequests())
	assert.False(t, r.launched)
	assert.LessOrEqual(t, launcher.started(t), cfg.Replicas)
	assert.Nil(t, r.claims, "the claims opened for the launch are closed")
}

// Items that cannot be evaluated (two with one ID) are refused after the
// keying launched the workers: the workers are stopped.
func TestBadItemsStopTheWorkersTheKeyingLaunched(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	items := makeItems(40)
	items[39].ID = items[0].ID
	cfg := f.config(items)
	launcher := &pidLauncher{}
	cfg.Launcher = launcher
	_, err := Evaluate(context.Background(), cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("item ID %q appears twice", items[0].ID))
	assert.False(t, errors.Is(err, context.Canceled))
	assert.Zero(t, f.sim.ChatRequests())
	assert.LessOrEqual(t, launcher.started(t), cfg.Replicas)
}

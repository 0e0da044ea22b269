package gpu

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openDir(t testing.TB, path string) *LeaseDir {
	t.Helper()
	d, err := OpenLeaseDir(path)
	require.NoError(t, err)
	return d
}

func TestLeaseLivesExactlyAsLongAsTheChild(t *testing.T) {
	dir := t.TempDir()
	h := Holder{RunID: "r1", Node: "stage.eval", PID: os.Getpid(), Since: time.Now()}
	l, err := openDir(t, dir).TryAcquire([]int{1, 0}, h)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1}, l.Devices)
	require.Len(t, l.Files(), 2)

	child := startHelper(t, "hold", l.Files())
	require.Equal(t, "ready", child.line(t))
	require.NoError(t, l.SetHolder(Holder{RunID: "r1", Node: "stage.eval", PID: child.cmd.Process.Pid}))
	require.NoError(t, l.Release()) // only the child holds the lock now
	assert.Empty(t, l.Files())

	other := openDir(t, dir)
	for _, dev := range []int{0, 1} {
		_, err = other.TryAcquire([]int{dev}, Holder{RunID: "r2"})
		require.ErrorIs(t, err, ErrBusy, "device %d must stay leased while the child lives", dev)
		var busy *BusyError
		require.ErrorAs(t, err, &busy)
		assert.Equal(t, dev, busy.Index)
		assert.Equal(t, "r1", busy.Holder.RunID)
		assert.Equal(t, child.cmd.Process.Pid, busy.Holder.PID)
		assert.Contains(t, err.Error(), "leased by cairn run r1, node stage.eval (pid ")
	}
	holders, err := other.Holders()
	require.NoError(t, err)
	require.Len(t, holders, 2)
	assert.Equal(t, child.cmd.Process.Pid, holders[0].PID)

	require.NoError(t, child.cmd.Process.Signal(syscall.SIGKILL))
	_ = child.cmd.Wait()

	l2, err := other.TryAcquire([]int{0, 1}, Holder{RunID: "r2"})
	require.NoError(t, err, "the lease ends with the child")
	holders, err = other.Holders()
	require.NoError(t, err)
	assert.Equal(t, "r2", holders[1].RunID)
	require.NoError(t, l2.Release())
}

// The pool ends a node's lease once the node is over: a process that kept
// the lease's descriptors (one that left the node's process group) no
// longer holds the devices, and another cairn leases them while it runs.
func TestPoolReleaseEndsTheLeaseForAProcessLeftWithItsDescriptors(t *testing.T) {
	dir := t.TempDir()
	p, err := NewPoolFor(NewSimulated(SimSpec{Count: 2}), dir)
	require.NoError(t, err)
	l, err := p.AcquireExact([]int{0, 1}, Holder{RunID: "r1", Node: "stage.serve"})
	require.NoError(t, err)
	require.NotNil(t, l)
	leftover := startHelper(t, "hold", l.Files())
	require.Equal(t, "ready", leftover.line(t))

	_, err = openDir(t, dir).TryAcquire([]int{0}, Holder{RunID: "r2"})
	require.ErrorIs(t, err, ErrBusy, "leased while the node runs")
	p.Release(l)
	assert.Empty(t, l.Files())
	holders, err := openDir(t, dir).Holders()
	require.NoError(t, err)
	assert.Empty(t, holders, "the leftover (pid %d) still holds the lease", leftover.cmd.Process.Pid)
	l2, err := openDir(t, dir).TryAcquire([]int{0, 1}, Holder{RunID: "r2"})
	require.NoError(t, err, "the lease ended when the pool released it, leftover or not")
	require.Nil(t, leftover.cmd.ProcessState, "the leftover still runs")
	require.NoError(t, l2.End())
	require.NoError(t, l2.End(), "a second end does nothing")
}

func TestLeaseEndsWhenHolderProcessIsKilled(t *testing.T) {
	dir := t.TempDir()
	child := startHelper(t, "race", nil, "CAIRN_GPU_TEST_DIR="+dir)
	require.Equal(t, "got", child.line(t))
	_, err := openDir(t, dir).TryAcquire([]int{2}, Holder{})
	require.ErrorIs(t, err, ErrBusy)
	require.NoError(t, child.cmd.Process.Signal(syscall.SIGKILL))
	_ = child.cmd.Wait()
	l, err := openDir(t, dir).TryAcquire([]int{2}, Holder{})
	require.NoError(t, err)
	require.NoError(t, l.Release())
}

func TestTryAcquireIsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	a, err := openDir(t, dir).TryAcquire([]int{1}, Holder{RunID: "a", Node: "n1", PID: 11})
	require.NoError(t, err)

	_, err = openDir(t, dir).TryAcquire([]int{0, 1, 2}, Holder{RunID: "b"})
	var busy *BusyError
	require.ErrorAs(t, err, &busy)
	assert.Equal(t, 1, busy.Index)
	assert.Equal(t, Holder{RunID: "a", Node: "n1", PID: 11}, Holder{RunID: busy.Holder.RunID, Node: busy.Holder.Node, PID: busy.Holder.PID})

	// Device 0 was taken and given back by the failed attempt; 2 was never touched.
	c, err := openDir(t, dir).TryAcquire([]int{0, 2}, Holder{RunID: "c"})
	require.NoError(t, err)
	holders, err := openDir(t, dir).Holders()
	require.NoError(t, err)
	assert.Equal(t, []string{"c", "a", "c"}, []string{holders[0].RunID, holders[1].RunID, holders[2].RunID})
	require.NoError(t, a.Release())
	require.NoError(t, c.Release())
	require.NoError(t, c.Release(), "a second release does nothing")
}

func TestTryAcquireRejectsBadIndices(t *testing.T) {
	d := openDir(t, t.TempDir())
	_, err := d.TryAcquire([]int{0, -1}, Holder{})
	assert.ErrorContains(t, err, "negative")
	_, err = d.TryAcquire([]int{3, 1, 3}, Holder{})
	assert.ErrorContains(t, err, "device 3 asked for twice")
	l, err := d.TryAcquire(nil, Holder{})
	require.NoError(t, err)
	assert.Empty(t, l.Devices)
	require.NoError(t, l.Release())
}

func TestHoldersSkipsReleasedAndForeignFiles(t *testing.T) {
	dir := t.TempDir()
	d := openDir(t, dir)
	l, err := d.TryAcquire([]int{0, 3}, Holder{RunID: "old"})
	require.NoError(t, err)
	require.NoError(t, l.Release())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gpuX.lock"), nil, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "gpu7.lock"), 0o755))

	holders, err := d.Holders()
	require.NoError(t, err)
	assert.Empty(t, holders, "files left by released leases name no holder")

	// A held lock with unreadable content is reported with an unknown holder.
	l, err = d.TryAcquire([]int{5}, Holder{})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gpu5.lock"), []byte("{garbage"), 0o644))
	holders, err = d.Holders()
	require.NoError(t, err)
	require.Contains(t, holders, 5)
	assert.Equal(t, "cairn (holder unknown)", holders[5].String())
	require.NoError(t, l.Release())
}

func TestRacingGoroutinesNeverShareADevice(t *testing.T) {
	dir := t.TempDir()
	var inside, maxInside, wins atomic.Int32
	var wg sync.WaitGroup
	stop := make(chan struct{})
	// Readers probing the holders must not let two writers in either.
	go func() {
		d := openDir(t, dir)
		for {
			select {
			case <-stop:
				return
			default:
				_, _ = d.Holders()
			}
		}
	}()
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := openDir(t, dir)
			for range 200 {
				l, err := d.TryAcquire([]int{1, 0}, Holder{Node: "g", PID: g})
				if err != nil {
					assert.ErrorIs(t, err, ErrBusy)
					continue
				}
				n := inside.Add(1)
				for m := maxInside.Load(); n > m && !maxInside.CompareAndSwap(m, n); m = maxInside.Load() {
				}
				wins.Add(1)
				inside.Add(-1)
				assert.NoError(t, l.Release())
			}
		}()
	}
	wg.Wait()
	close(stop)
	assert.EqualValues(t, 1, maxInside.Load(), "at most one holder at a time")
	assert.Positive(t, wins.Load())
}

func TestRacingProcessesExactlyOneWins(t *testing.T) {
	dir := t.TempDir()
	const n = 6
	var helpers []*helper
	for range n {
		helpers = append(helpers, startHelper(t, "race", nil, "CAIRN_GPU_TEST_DIR="+dir))
	}
	got := 0
	for _, h := range helpers {
		switch line := h.line(t); line {
		case "got":
			got++
		case "busy":
		default:
			t.Fatalf("helper: %s", line)
		}
	}
	assert.Equal(t, 1, got, "every helper tries while the winner still holds all three devices")
	for _, h := range helpers {
		require.NoError(t, h.stdin.Close())
		require.NoError(t, h.cmd.Wait())
	}
}

func TestOpenLeaseDir(t *testing.T) {
	base := t.TempDir()
	path := filepath.Join(base, "a", "leases")
	d, err := OpenLeaseDir(path)
	require.NoError(t, err)
	assert.Equal(t, path, d.Path())
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSticky|os.ModeDir|0o777, st.Mode(), "a created lease directory is shared like /tmp")
	// Its parent, made with it (CAIRN_LEASE_DIR, whose simulated/ is the
	// lease directory), is shared too; the folder that was there is not
	// touched.
	st, err = os.Stat(filepath.Join(base, "a"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeSticky|os.ModeDir|0o777, st.Mode(), "a folder made on the way")
	st, err = os.Stat(base)
	require.NoError(t, err)
	assert.Zero(t, st.Mode()&os.ModeSticky, "the existing folder keeps its mode")

	file := filepath.Join(base, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = OpenLeaseDir(file)
	assert.ErrorContains(t, err, "not a directory")
	_, err = OpenLeaseDir("")
	assert.Error(t, err)
}

func TestLeaseDirPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	sim := NewSimulated(SimSpec{Count: 2})
	assert.Equal(t, DefaultLeaseDir, LeaseDirPath(env(nil), NewNone("x")))
	assert.Equal(t, filepath.Join(DefaultLeaseDir, "simulated"), LeaseDirPath(env(nil), sim))
	assert.Equal(t, "/srv/leases", LeaseDirPath(env(map[string]string{EnvLeaseDir: "/srv/leases"}), nil))
}

func TestHolderString(t *testing.T) {
	assert.Equal(t, "cairn run R, node N (pid 7)", Holder{RunID: "R", Node: "N", PID: 7}.String())
	assert.Equal(t, "cairn node N", Holder{Node: "N"}.String())
	assert.Equal(t, "cairn (holder unknown)", Holder{}.String())
	err := &BusyError{Index: 3, Holder: Holder{RunID: "R", Since: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}}
	assert.True(t, strings.HasPrefix(err.Error(), "gpu: GPU 3 is leased by cairn run R since 2025-01-02"))
}

func BenchmarkTryAcquireRelease(b *testing.B) {
	d := openDir(b, b.TempDir())
	for b.Loop() {
		l, err := d.TryAcquire([]int{0, 1}, Holder{RunID: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		_ = l.Release()
	}
}

func BenchmarkHolders8(b *testing.B) {
	d := openDir(b, b.TempDir())
	l, err := d.TryAcquire([]int{0, 1, 2, 3, 4, 5, 6, 7}, Holder{RunID: "bench"})
	require.NoError(b, err)
	defer l.Release()
	for b.Loop() {
		if _, err := d.Holders(); err != nil {
			b.Fatal(err)
		}
	}
}

// A holder whose cairn has exited (killed with kill -9, its processes
// left holding the lease) is named as such: the pid in the message is
// not a process to look for.
func TestHolderOfAnExitedCairn(t *testing.T) {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	gone := Holder{RunID: "r1", Node: "stage.eval", PID: cmd.Process.Pid}
	assert.Contains(t, gone.String(), fmt.Sprintf("(pid %d, which has exited: processes it started still hold the GPU; the next apply of its cache stops them)", cmd.Process.Pid))
	alive := Holder{RunID: "r1", Node: "stage.eval", PID: os.Getpid()}
	assert.Equal(t, fmt.Sprintf("cairn run r1, node stage.eval (pid %d)", os.Getpid()), alive.String())
}

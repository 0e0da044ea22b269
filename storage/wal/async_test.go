package wal

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// AppendAsync records keep their place among durable ones: once a later
// Append returns, every record queued before it is in the file, in order.
func TestAppendAsyncOrderedBeforeLaterAppend(t *testing.T) {
	for _, opts := range []Options{{}, {NoSync: true}, {Shared: true}} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			l, err := Open(path, opts)
			require.NoError(t, err)
			var want []string
			for i := 0; i < 50; i++ {
				p := fmt.Sprintf("async-%d", i)
				require.NoError(t, l.Append([][]byte{[]byte(p)}, Queued))
				want = append(want, p)
				if i%10 == 9 {
					p := fmt.Sprintf("durable-%d", i)
					require.NoError(t, l.Append([][]byte{[]byte(p)}, Durable))
					want = append(want, p)
					// Read while the log is open: a durable Append has returned.
					recs, _, err := readAll(t, path)
					require.NoError(t, err)
					assert.Equal(t, want, strs(recs))
				}
			}
			require.NoError(t, l.Append([][]byte{[]byte("last")}, Queued))
			want = append(want, "last")
			require.NoError(t, l.Close())
			recs, st, err := readAll(t, path)
			require.NoError(t, err)
			assert.False(t, st.TornTail)
			assert.Equal(t, want, strs(recs))
			assert.ErrorIs(t, l.Append([][]byte{[]byte("x")}, Queued), ErrClosed)
		})
	}
}

func TestAppendAsyncTooLarge(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "log"), Options{NoSync: true})
	require.NoError(t, err)
	defer l.Close()
	assert.ErrorIs(t, l.Append([][]byte{make([]byte, MaxRecordSize+1)}, Queued), ErrTooLarge)
}

// AppendWrittenBatch records are in the file when the call returns, cost no
// fsync of their own, and are synced by the next durable commit.
func TestAppendWrittenIsReadableAndUnsynced(t *testing.T) {
	for _, opts := range []Options{{}, {Shared: true}} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			l, err := Open(path, opts)
			require.NoError(t, err)
			base := l.syncs.Load()
			var want []string
			for i := 0; i < 20; i++ {
				p := fmt.Sprintf("written-%d", i)
				require.NoError(t, l.Append([][]byte{[]byte(p)}, Written))
				want = append(want, p)
				recs, _, err := readAll(t, path)
				require.NoError(t, err)
				assert.Equal(t, want, strs(recs), "in the file when the call returns")
			}
			assert.Equal(t, base, l.syncs.Load(), "no fsync for written records")
			require.NoError(t, l.Append([][]byte{[]byte("durable")}, Durable))
			assert.Equal(t, base+1, l.syncs.Load(), "one fsync covers them and the durable record")
			require.NoError(t, l.Close())
		})
	}
}

// Sync makes written records durable with one fsync, writes nothing, and
// costs nothing when everything written is already synced.
func TestSyncSyncsWrittenRecords(t *testing.T) {
	for _, opts := range []Options{{}, {Shared: true}} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			l, err := Open(path, opts)
			require.NoError(t, err)
			base := l.syncs.Load()
			require.NoError(t, l.Sync())
			assert.Equal(t, base, l.syncs.Load(), "nothing written: no fsync")
			require.NoError(t, l.Append([][]byte{[]byte("a"), []byte("b")}, Written))
			require.NoError(t, l.Append([][]byte{[]byte("c")}, Written))
			assert.Equal(t, base, l.syncs.Load())
			require.NoError(t, l.Sync())
			assert.Equal(t, base+1, l.syncs.Load(), "one fsync for every written record")
			require.NoError(t, l.Sync())
			assert.Equal(t, base+1, l.syncs.Load(), "already synced: no fsync")
			recs, _, err := readAll(t, path)
			require.NoError(t, err)
			assert.Equal(t, []string{"a", "b", "c"}, strs(recs), "Sync writes no record")
			require.NoError(t, l.Close())
			assert.ErrorIs(t, l.Sync(), ErrClosed)
		})
	}
}

// A Lazy log syncs nothing until a durable append: one that never has one
// is closed without an fsync; the first durable append syncs everything
// written before it, the new file's header among them.
func TestLazyLogSyncsOnlyOnceDurable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log")
	l, err := Open(path, Options{Lazy: true})
	require.NoError(t, err)
	require.NoError(t, l.Append([][]byte{[]byte("start")}, Written))
	require.NoError(t, l.Append([][]byte{[]byte("note")}, Queued))
	require.NoError(t, l.Append([][]byte{[]byte("end")}, Written))
	require.NoError(t, l.Close())
	assert.Equal(t, int64(0), l.syncs.Load(), "no durable append: no fsync, not even of the new file")
	recs, _, err := readAll(t, path)
	require.NoError(t, err)
	assert.Equal(t, []string{"start", "note", "end"}, strs(recs))

	path = filepath.Join(dir, "log2")
	l, err = Open(path, Options{Lazy: true})
	require.NoError(t, err)
	require.NoError(t, l.Append([][]byte{[]byte("start")}, Written))
	assert.Equal(t, int64(0), l.syncs.Load())
	require.NoError(t, l.Append([][]byte{[]byte("durable")}, Durable))
	assert.Equal(t, int64(1), l.syncs.Load(), "the first durable append syncs what was written before it")
	require.NoError(t, l.Append([][]byte{[]byte("end")}, Written))
	require.NoError(t, l.Close())
	assert.Equal(t, int64(2), l.syncs.Load(), "once a record had to be durable, Close syncs the rest")
	recs, _, err = readAll(t, path)
	require.NoError(t, err)
	assert.Equal(t, []string{"start", "durable", "end"}, strs(recs))

	// Without Lazy, Close syncs written records.
	l, err = Open(filepath.Join(dir, "log3"), Options{})
	require.NoError(t, err)
	require.NoError(t, l.Append([][]byte{[]byte("x")}, Written))
	require.NoError(t, l.Close())
	assert.Equal(t, int64(2), l.syncs.Load(), "Open syncs the new file, Close the written records")
}

// A Queued record appended after the committer found the queue empty, and
// before Close, is written by Close all the same: the committer reads
// "closed" and "nothing queued" together (it read them apart, and
// returned, losing the record, when Close came in between; CI saw it).
func TestCloseWritesWhatWasQueuedWhileTheCommitterLooked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var once sync.Once
	hooked := make(chan error, 1)
	testHookQueueEmpty = func(l *Log) {
		once.Do(func() {
			// What another goroutine would do meanwhile: queue a
			// record, then close the log.
			_, err := l.enqueueBatch([][]byte{[]byte("last")}, false, false)
			l.mu.Lock()
			l.closed = true
			l.mu.Unlock()
			hooked <- err
		})
	}
	defer func() { testHookQueueEmpty = nil }()
	l, err := Open(path, Options{NoSync: true})
	require.NoError(t, err)
	require.NoError(t, <-hooked)
	require.NoError(t, l.Close())
	recs, _, err := readAll(t, path)
	require.NoError(t, err)
	assert.Equal(t, []string{"last"}, strs(recs))
}

package wal

import (
	"fmt"
	"path/filepath"
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
				require.NoError(t, l.AppendAsync([]byte(p)))
				want = append(want, p)
				if i%10 == 9 {
					p := fmt.Sprintf("durable-%d", i)
					require.NoError(t, l.Append([]byte(p)))
					want = append(want, p)
					// Read while the log is open: a durable Append has returned.
					recs, _, err := readAll(t, path)
					require.NoError(t, err)
					assert.Equal(t, want, strs(recs))
				}
			}
			require.NoError(t, l.AppendAsync([]byte("last")))
			want = append(want, "last")
			require.NoError(t, l.Close())
			recs, st, err := readAll(t, path)
			require.NoError(t, err)
			assert.False(t, st.TornTail)
			assert.Equal(t, want, strs(recs))
			assert.ErrorIs(t, l.AppendAsync([]byte("x")), ErrClosed)
		})
	}
}

func TestAppendAsyncTooLarge(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "log"), Options{NoSync: true})
	require.NoError(t, err)
	defer l.Close()
	assert.ErrorIs(t, l.AppendAsync(make([]byte, MaxRecordSize+1)), ErrTooLarge)
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
				require.NoError(t, l.AppendWrittenBatch([][]byte{[]byte(p)}))
				want = append(want, p)
				recs, _, err := readAll(t, path)
				require.NoError(t, err)
				assert.Equal(t, want, strs(recs), "in the file when the call returns")
			}
			assert.Equal(t, base, l.syncs.Load(), "no fsync for written records")
			require.NoError(t, l.Append([]byte("durable")))
			assert.Equal(t, base+1, l.syncs.Load(), "one fsync covers them and the durable record")
			require.NoError(t, l.Close())
		})
	}
}

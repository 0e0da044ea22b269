package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ReadRecords gives the record at each offset asked for, whatever their
// order, once each, across a log longer than one read-ahead chunk, and the
// same payloads a full pass gives.
func TestReadRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var ps [][]byte
	for i := range 400 {
		ps = append(ps, payload(i, 1+i*37%9000)) // about 1.8 MB: two chunks
	}
	offs := writeLog(t, path, ps...)
	want := map[int64][]byte{}
	for i, off := range offs {
		want[off] = ps[i]
	}
	ask := []int64{offs[399], offs[3], offs[200], offs[3], offs[0], offs[398], offs[201]}
	var got []int64
	require.NoError(t, ReadRecords(path, ask, func(off int64, p []byte) error {
		assert.Equal(t, want[off], p, "record at %d", off)
		got = append(got, off)
		return nil
	}))
	assert.Equal(t, []int64{offs[0], offs[3], offs[200], offs[201], offs[398], offs[399]}, got,
		"each record once, in offset order")

	stop := errors.New("stop")
	err := ReadRecords(path, ask, func(int64, []byte) error { return stop })
	assert.Same(t, stop, err, "an error from fn is returned as it is")
	assert.NoError(t, ReadRecords(path, nil, nil), "nothing asked for: nothing read")
}

// An offset that is not a record's, or a damaged record, is an error, not a
// payload.
func TestReadRecordsRefusesWhatIsNotARecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	offs := writeLog(t, path, payload(1, 16), payload(2, 21), payload(3, 5))
	nop := func(int64, []byte) error { return nil }

	err := ReadRecords(path, []int64{offs[1] + 3}, nop)
	assert.ErrorContains(t, err, "is not a record boundary")
	err = ReadRecords(path, []int64{offs[2] + 1000}, nop)
	assert.ErrorContains(t, err, "is not a record boundary")

	b := fileBytes(t, path)
	b[offs[1]+recordHeaderSize+2] ^= 0x10
	require.NoError(t, os.WriteFile(path, b, 0o644))
	var seen [][]byte
	err = ReadRecords(path, []int64{offs[0], offs[1]}, func(_ int64, p []byte) error {
		seen = append(seen, bytes.Clone(p))
		return nil
	})
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, offs[1], ce.Offset)
	assert.Contains(t, ce.Reason, "checksum mismatch")
	assert.Equal(t, [][]byte{payload(1, 16)}, seen, "the records before the damaged one are delivered")

	assert.Error(t, ReadRecords(filepath.Join(t.TempDir(), "none"), []int64{8}, nop))
}

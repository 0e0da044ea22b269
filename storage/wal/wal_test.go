package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// payload is a deterministic payload of n bytes that differs for each seed.
func payload(seed, n int) []byte {
	p := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range p {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		p[i] = byte(x)
	}
	return p
}

type record struct {
	off     int64
	payload []byte
}

// readAll reads the log at path and copies every record out.
func readAll(t testing.TB, path string) ([]record, ReadStats, error) {
	t.Helper()
	var recs []record
	st, err := Read(path, func(off int64, p []byte) error {
		recs = append(recs, record{off, bytes.Clone(p)})
		return nil
	})
	return recs, st, err
}

func payloads(recs []record) [][]byte {
	out := make([][]byte, len(recs))
	for i, r := range recs {
		out[i] = r.payload
	}
	return out
}

// writeLog creates a log at path holding ps and returns each record's offset.
func writeLog(t testing.TB, path string, ps ...[]byte) []int64 {
	t.Helper()
	l, err := Open(path, Options{NoSync: true})
	require.NoError(t, err)
	offs := make([]int64, len(ps))
	for i, p := range ps {
		offs[i] = l.Size()
		require.NoError(t, l.Append([][]byte{p}, Durable))
	}
	require.NoError(t, l.Close())
	return offs
}

func fileBytes(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func TestLengthCRCMatchesCRC32C(t *testing.T) {
	for _, n := range []uint32{0, 1, 7, 8, 255, 256, 65535, 1 << 24, MaxRecordSize, 0xffffffff} {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], n)
		assert.Equal(t, crc32.Checksum(b[:], castagnoli()), lengthCRC(n), "n=%d", n)
	}
	p := payload(1, 100)
	want := crc32.Checksum(append(binary.LittleEndian.AppendUint32(nil, 100), p...), castagnoli())
	assert.Equal(t, want, checksum(p))
}

func TestEncodingLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	writeLog(t, path, []byte("abc"), nil)
	b := fileBytes(t, path)
	want := []byte("CAIRNWL1")
	want = binary.LittleEndian.AppendUint32(want, 3)
	want = binary.LittleEndian.AppendUint32(want, crc32.Checksum([]byte{3, 0, 0, 0, 'a', 'b', 'c'}, castagnoli()))
	want = append(want, 'a', 'b', 'c', 0, 0, 0, 0, 0)
	want = binary.LittleEndian.AppendUint32(want, 0)
	want = binary.LittleEndian.AppendUint32(want, crc32.Checksum([]byte{0, 0, 0, 0}, castagnoli()))
	assert.Equal(t, want, b)
}

func TestRoundTrip(t *testing.T) {
	sizes := []int{0, 1, 7, 8, 9, 100, readChunk - 1, readChunk + 3, 3*readChunk + 5, 0, 1}
	path := filepath.Join(t.TempDir(), "sub", "dir", "log")
	var ps [][]byte
	for i, n := range sizes {
		ps = append(ps, payload(i, n))
	}
	offs := writeLog(t, path, ps...)

	recs, st, err := readAll(t, path)
	require.NoError(t, err)
	require.Len(t, recs, len(ps))
	want := int64(fileHeaderSize)
	var total int64
	for i, r := range recs {
		assert.Equal(t, want, r.off, "record %d offset", i)
		assert.Equal(t, offs[i], r.off, "record %d offset seen by the writer", i)
		assert.True(t, bytes.Equal(ps[i], r.payload), "record %d (%d bytes) differs", i, sizes[i])
		want += recordSize(sizes[i])
		total += int64(sizes[i])
	}
	assert.Equal(t, ReadStats{Records: len(ps), Bytes: total, Next: want}, st)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, want, fi.Size())
	assert.Zero(t, fi.Size()%8)
}

func TestReopenAndAppendMore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	writeLog(t, path, []byte("one"), []byte("two"))

	for round := 0; round < 3; round++ {
		l, err := Open(path, Options{})
		require.NoError(t, err)
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, fi.Size(), l.Size())
		require.NoError(t, l.Append([][]byte{[]byte("batch-" + strconv.Itoa(round)), {}}, Durable))
		require.NoError(t, l.Append([][]byte{[]byte("single-" + strconv.Itoa(round))}, Durable))
		require.NoError(t, l.Close())
	}
	recs, st, err := readAll(t, path)
	require.NoError(t, err)
	assert.False(t, st.TornTail)
	want := [][]byte{[]byte("one"), []byte("two")}
	for round := 0; round < 3; round++ {
		want = append(want, []byte("batch-"+strconv.Itoa(round)), []byte{}, []byte("single-"+strconv.Itoa(round)))
	}
	assert.Equal(t, want, payloads(recs))
}

// TestTornTailAtEveryOffset cuts the last record at every length it can have and
// checks that readers see a torn tail, Open cuts it off, and appends still work.
func TestTornTailAtEveryOffset(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 37, 300} {
		t.Run(fmt.Sprintf("last=%d", n), func(t *testing.T) {
			dir := t.TempDir()
			full := filepath.Join(dir, "full")
			first := [][]byte{payload(1, 20), payload(2, 8)}
			offs := writeLog(t, full, append(first, payload(3, n))...)
			orig := fileBytes(t, full)
			start := offs[2]
			for cut := start; cut < int64(len(orig)); cut++ {
				path := filepath.Join(dir, fmt.Sprintf("cut%d", cut))
				require.NoError(t, os.WriteFile(path, orig[:cut], 0o644))
				checkTorn(t, path, first, start, cut > start)
			}
		})
	}
}

// TestTornLargeRecord cuts a record bigger than a read chunk at a few places,
// including around chunk boundaries.
func TestTornLargeRecord(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	first := [][]byte{payload(1, 20), payload(2, 2*readChunk+11)}
	offs := writeLog(t, full, append(first, payload(3, 3*readChunk+5))...)
	orig := fileBytes(t, full)
	start := offs[2]
	for _, cut := range []int64{start + 3, start + 8, start + 9, readChunk - 1, readChunk, 2 * readChunk, start + readChunk, int64(len(orig)) - 1} {
		if cut < start {
			cut += start
		}
		path := filepath.Join(dir, fmt.Sprintf("cut%d", cut))
		require.NoError(t, os.WriteFile(path, orig[:cut], 0o644))
		checkTorn(t, path, first, start, true)
	}
}

func checkTorn(t *testing.T, path string, good [][]byte, start int64, torn bool) {
	t.Helper()
	before := fileBytes(t, path)
	recs, st, err := readAll(t, path)
	require.NoError(t, err, "cut at %d", len(before))
	assert.Equal(t, good, payloads(recs))
	assert.Equal(t, torn, st.TornTail, "cut at %d", len(before))
	if torn {
		assert.Equal(t, start, st.TornAt)
	}
	assert.Equal(t, start, st.Next)
	assert.Equal(t, before, fileBytes(t, path), "Read changed the file")

	l, err := Open(path, Options{NoSync: true})
	require.NoError(t, err, "cut at %d", len(before))
	assert.Equal(t, start, l.Size())
	require.NoError(t, l.Append([][]byte{[]byte("after")}, Durable))
	require.NoError(t, l.Close())

	recs, st, err = readAll(t, path)
	require.NoError(t, err)
	assert.False(t, st.TornTail)
	assert.Equal(t, append(append([][]byte{}, good...), []byte("after")), payloads(recs))
	assert.Equal(t, start, recs[len(recs)-1].off)
}

func TestTornFileHeader(t *testing.T) {
	for cut := 0; cut < fileHeaderSize; cut++ {
		for _, fill := range []string{"magic", "zeros"} {
			path := filepath.Join(t.TempDir(), "log")
			b := []byte(magic[:cut])
			if fill == "zeros" {
				b = make([]byte, cut)
			}
			require.NoError(t, os.WriteFile(path, b, 0o644))
			recs, st, err := readAll(t, path)
			require.NoError(t, err, "%s cut at %d", fill, cut)
			assert.Empty(t, recs)
			assert.Equal(t, cut > 0, st.TornTail, "%s cut at %d", fill, cut)
			assert.Zero(t, st.Next)

			l, err := Open(path, Options{NoSync: true})
			require.NoError(t, err)
			require.NoError(t, l.Append([][]byte{[]byte("x")}, Durable))
			require.NoError(t, l.Close())
			recs, _, err = readAll(t, path)
			require.NoError(t, err)
			assert.Equal(t, [][]byte{[]byte("x")}, payloads(recs))
		}
	}
}

// TestCorruptMiddleRecord flips every byte of a record that has records after it.
func TestCorruptMiddleRecord(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	ps := [][]byte{payload(1, 16), payload(2, 21), payload(3, 5)}
	offs := writeLog(t, full, ps...)
	orig := fileBytes(t, full)
	mid, next := offs[1], offs[2]
	for i := mid; i < next; i++ {
		for _, mask := range []byte{0x01, 0x80} {
			b := bytes.Clone(orig)
			b[i] ^= mask
			path := filepath.Join(dir, fmt.Sprintf("flip%d-%x", i, mask))
			require.NoError(t, os.WriteFile(path, b, 0o644))

			recs, st, err := readAll(t, path)
			require.ErrorIs(t, err, ErrCorrupt, "byte %d ^ %x", i, mask)
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, mid, ce.Offset, "byte %d ^ %x", i, mask)
			assert.Equal(t, next, ce.Next)
			assert.Contains(t, err.Error(), fmt.Sprintf("byte %d", mid))
			assert.Equal(t, ps[:1], payloads(recs), "records before the damage are delivered")
			assert.Equal(t, 1, st.Records)

			_, err = Open(path, Options{NoSync: true})
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, mid, ce.Offset)
			assert.Equal(t, b, fileBytes(t, path), "Open must not cut a corrupt log")
		}
	}
}

// TestBadLastRecordIsTorn: a checksum mismatch in the last record with nothing
// after it is a torn write, not corruption.
func TestBadLastRecordIsTorn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	ps := [][]byte{payload(1, 16), payload(2, 21)}
	offs := writeLog(t, path, ps...)
	b := fileBytes(t, path)
	b[offs[1]+recordHeaderSize+3] ^= 0x10
	require.NoError(t, os.WriteFile(path, b, 0o644))
	checkTorn(t, path, ps[:1], offs[1], true)
}

func TestZeroFilledTail(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 4096, 4099, readChunk + 100} {
		path := filepath.Join(t.TempDir(), "log")
		ps := [][]byte{payload(1, 16), payload(2, 21)}
		writeLog(t, path, ps...)
		end := int64(len(fileBytes(t, path)))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.Write(make([]byte, n))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		checkTorn(t, path, ps, end, true)
	}
}

// TestZeroedMiddleRecord: a record whose bytes were zeroed, with a valid record
// after it, is corruption.
func TestZeroedMiddleRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	offs := writeLog(t, path, payload(1, 16), payload(2, 100), payload(3, 3))
	b := fileBytes(t, path)
	clear(b[offs[1]:offs[2]])
	require.NoError(t, os.WriteFile(path, b, 0o644))
	_, _, err := readAll(t, path)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, offs[1], ce.Offset)
	assert.Equal(t, offs[2], ce.Next)
}

func TestLengthOverLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	offs := writeLog(t, path, payload(1, 16), payload(2, 8), payload(3, 3))
	b := fileBytes(t, path)
	binary.LittleEndian.PutUint32(b[offs[1]:], MaxRecordSize+1)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	_, _, err := readAll(t, path)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, offs[1], ce.Offset)
	assert.Contains(t, ce.Reason, "limit")

	// The same bad length in the last record, with nothing after it, is torn.
	require.NoError(t, os.WriteFile(path, b[:offs[2]], 0o644))
	_, st, err := readAll(t, path)
	require.NoError(t, err)
	assert.True(t, st.TornTail)
	assert.Equal(t, offs[1], st.TornAt)
}

func TestNotALog(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		content string
		want    error
	}{
		{"text", "hello world, this is not a log at all", ErrCorrupt},
		{"short junk", "CAT", ErrCorrupt},
		{"other version", "CAIRNWL9" + string(make([]byte, 16)), ErrVersion},
		{"zeroed header before a record", string(appendRecord(make([]byte, 8), []byte("r"), checksum([]byte("r")))), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			require.NoError(t, os.WriteFile(path, []byte(tt.content), 0o644))
			_, _, err := readAll(t, path)
			require.ErrorIs(t, err, tt.want)
			_, err = Open(path, Options{NoSync: true})
			require.ErrorIs(t, err, tt.want)
			assert.Equal(t, tt.content, string(fileBytes(t, path)))
		})
	}
}

func TestRepair(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log")
	offs := writeLog(t, path, payload(1, 16), payload(2, 21), payload(3, 5))
	size := int64(len(fileBytes(t, path)))

	dropped, kept, err := Repair(path)
	require.NoError(t, err)
	assert.Zero(t, dropped, "a good log is left alone")
	assert.Empty(t, kept)

	b := fileBytes(t, path)
	b[offs[1]+9] ^= 1
	require.NoError(t, os.WriteFile(path, b, 0o644))
	dropped, kept, err = Repair(path)
	require.NoError(t, err)
	assert.Equal(t, size-offs[1], dropped)
	assert.Equal(t, b[offs[1]:], fileBytes(t, kept), "what was cut is kept beside the log")
	recs, st, err := readAll(t, path)
	require.NoError(t, err)
	assert.False(t, st.TornTail)
	assert.Equal(t, [][]byte{payload(1, 16)}, payloads(recs))

	other := filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(other, []byte("not a log, keep me"), 0o644))
	_, _, err = Repair(other)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Equal(t, "not a log, keep me", string(fileBytes(t, other)))
}

func TestReadFromTailsAGrowingLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, err := Open(path, Options{NoSync: true})
	require.NoError(t, err)
	defer l.Close()

	var got []string
	collect := func(_ int64, p []byte) error {
		got = append(got, string(p))
		return nil
	}
	st, err := ReadFrom(path, 0, collect)
	require.NoError(t, err)
	assert.Equal(t, int64(fileHeaderSize), st.Next)

	next := st.Next
	for round := 0; round < 3; round++ {
		for i := 0; i <= round; i++ {
			require.NoError(t, l.Append([][]byte{[]byte(fmt.Sprintf("r%d-%d", round, i))}, Durable))
		}
		st, err := ReadFrom(path, next, collect)
		require.NoError(t, err)
		assert.Equal(t, round+1, st.Records)
		assert.Equal(t, l.Size(), st.Next)
		next = st.Next
	}
	assert.Equal(t, []string{"r0-0", "r1-0", "r1-1", "r2-0", "r2-1", "r2-2"}, got)

	for _, off := range []int64{3, 4, 12, next + 8} {
		_, err := ReadFrom(path, off, collect)
		assert.Error(t, err, "offset %d", off)
		assert.NotErrorIs(t, err, ErrCorrupt)
	}
}

func TestReadStopsOnCallbackError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	writeLog(t, path, []byte("a"), []byte("b"), []byte("c"))
	stop := errors.New("enough")
	var seen int
	st, err := Read(path, func(int64, []byte) error {
		seen++
		if seen == 2 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	assert.Equal(t, 2, seen)
	assert.Equal(t, 1, st.Records)
}

func TestReadMissingFile(t *testing.T) {
	_, err := Read(filepath.Join(t.TempDir(), "nope"), nil)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// shrinkingReader serves data but claims to be longer, as a file does that a
// writer cut while we read it.
type shrinkingReader struct{ data []byte }

func (r shrinkingReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(r.data)) {
		return 0, io.EOF
	}
	n := copy(p, r.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func TestFileShrinksWhileReading(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	offs := writeLog(t, path, payload(1, 30), payload(2, 40))
	b := fileBytes(t, path)
	var n int
	st, err := scan(shrinkingReader{b[:offs[1]+12]}, path, 0, int64(len(b)), func(int64, []byte) error {
		n++
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.True(t, st.TornTail)
	assert.Equal(t, offs[1], st.TornAt)
}

func TestRecordTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, err := Open(path, Options{NoSync: true})
	require.NoError(t, err)
	defer l.Close()
	big := make([]byte, MaxRecordSize+1)
	require.ErrorIs(t, l.Append([][]byte{big}, Durable), ErrTooLarge)
	require.ErrorIs(t, l.Append([][]byte{[]byte("ok"), big}, Durable), ErrTooLarge)
	require.NoError(t, l.Append([][]byte{[]byte("ok")}, Durable))
	recs, _, err := readAll(t, path)
	require.NoError(t, err)
	assert.Equal(t, [][]byte{[]byte("ok")}, payloads(recs), "a refused batch writes nothing")
}

func TestSecondWriterIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	l, err := Open(path, Options{NoSync: true})
	require.NoError(t, err)
	_, err = Open(path, Options{NoSync: true})
	require.ErrorIs(t, err, ErrLocked)
	require.NoError(t, l.Close())
	l, err = Open(path, Options{NoSync: true})
	require.NoError(t, err)
	require.NoError(t, l.Close())
}

// With LockPath the writer's lock is that file: no "<path>.lock" is made,
// a second writer is refused, and the lock goes with Close.
func TestLockPathIsTheWritersLock(t *testing.T) {
	dir := t.TempDir()
	path, lock := filepath.Join(dir, "journal"), filepath.Join(dir, "lock")
	l, err := Open(path, Options{NoSync: true, LockPath: lock})
	require.NoError(t, err)
	_, err = os.Stat(path + ".lock")
	assert.True(t, os.IsNotExist(err), "no lock file of the log's own")
	_, err = Open(path, Options{NoSync: true, LockPath: lock})
	require.ErrorIs(t, err, ErrLocked)
	other, err := openLock(lock)
	require.NoError(t, err)
	ok, err := other.tryLock()
	require.NoError(t, err)
	assert.False(t, ok, "held while the log is open")
	require.NoError(t, l.Close())
	ok, err = other.tryLock()
	require.NoError(t, err)
	assert.True(t, ok, "released by Close")
	require.NoError(t, other.close())
}

func TestCloseIsIdempotentAndRefusesAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, err := Open(path, Options{NoSync: true})
	require.NoError(t, err)
	require.NoError(t, l.Append([][]byte{[]byte("x")}, Durable))
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	require.ErrorIs(t, l.Append([][]byte{[]byte("y")}, Durable), ErrClosed)
	require.ErrorIs(t, l.Append([][]byte{[]byte("y")}, Durable), ErrClosed)
}

// TestCloseWhileAppending: every Append that returned nil is in the file, the
// others returned ErrClosed, and nothing hangs.
func TestCloseWhileAppending(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, err := Open(path, Options{NoSync: true})
	require.NoError(t, err)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		acked = map[string]bool{}
	)
	started := make(chan struct{}, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				p := fmt.Sprintf("g%d-%d", g, i)
				err := l.Append([][]byte{[]byte(p)}, Durable)
				if err != nil {
					assert.ErrorIs(t, err, ErrClosed)
					return
				}
				mu.Lock()
				acked[p] = true
				mu.Unlock()
				if i == 10 {
					started <- struct{}{}
				}
			}
		}()
	}
	for g := 0; g < 4; g++ {
		<-started
	}
	require.NoError(t, l.Close())
	wg.Wait()

	recs, st, err := readAll(t, path)
	require.NoError(t, err)
	assert.False(t, st.TornTail)
	inFile := map[string]bool{}
	for _, r := range recs {
		inFile[string(r.payload)] = true
	}
	for p := range acked {
		assert.True(t, inFile[p], "acknowledged record %s is missing", p)
	}
}

// TestConcurrentAppends: 8 goroutines, single and batch appends; every record is
// there exactly once and each goroutine's records are in its order.
func TestConcurrentAppends(t *testing.T) {
	for _, opts := range []Options{{NoSync: true}, {}, {NoSync: true, MaxBatch: 3}} {
		t.Run(fmt.Sprintf("nosync=%v,maxbatch=%d", opts.NoSync, opts.MaxBatch), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			l, err := Open(path, opts)
			require.NoError(t, err)
			const producers, perProducer = 8, 300
			var wg sync.WaitGroup
			for g := 0; g < producers; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < perProducer; {
						if i%7 == 3 && i+3 <= perProducer {
							batch := [][]byte{
								[]byte(fmt.Sprintf("%d %d", g, i)),
								[]byte(fmt.Sprintf("%d %d", g, i+1)),
								[]byte(fmt.Sprintf("%d %d", g, i+2)),
							}
							assert.NoError(t, l.Append(batch, Durable))
							i += 3
							continue
						}
						// Every kind of append: a Written one commits
						// inline when the log is idle, and must not
						// overtake a Queued or Durable one before it.
						d := [...]Durability{Durable, Written, Queued}[(g+i)%3]
						assert.NoError(t, l.Append([][]byte{[]byte(fmt.Sprintf("%d %d", g, i))}, d))
						i++
					}
				}()
			}
			stop := make(chan struct{})
			synced := make(chan struct{})
			go func() {
				defer close(synced)
				for {
					select {
					case <-stop:
						return
					default:
						assert.NoError(t, l.Sync())
					}
				}
			}()
			wg.Wait()
			close(stop)
			<-synced
			require.NoError(t, l.Close())

			recs, st, err := readAll(t, path)
			require.NoError(t, err)
			assert.False(t, st.TornTail)
			require.Len(t, recs, producers*perProducer)
			next := make([]int, producers)
			for _, r := range recs {
				var g, i int
				_, err := fmt.Sscanf(string(r.payload), "%d %d", &g, &i)
				require.NoError(t, err)
				require.Equal(t, next[g], i, "producer %d: record out of order or duplicated", g)
				next[g]++
			}
			for g := range next {
				assert.Equal(t, perProducer, next[g])
			}
			if opts.MaxBatch == 3 {
				// A batch holds at most 3 records unless one AppendBatch was bigger.
				assert.GreaterOrEqual(t, l.commits.Load(), int64(producers*perProducer/3))
			}
		})
	}
}

// TestSharedLogsInOneProcess: two Shared logs on one file (separate descriptors, so
// separate flocks) interleave without losing records, and a torn tail written
// under the lock between commits is cut off before the next write.
func TestSharedLogsInOneProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "actions.log")
	a, err := Open(path, Options{NoSync: true, Shared: true})
	require.NoError(t, err)
	b, err := Open(path, Options{NoSync: true, Shared: true})
	require.NoError(t, err)

	require.NoError(t, a.Append([][]byte{[]byte("a0")}, Durable))
	require.NoError(t, b.Append([][]byte{[]byte("b0")}, Durable))
	require.NoError(t, a.Append([][]byte{[]byte("a1")}, Durable))

	// A writer that died after writing half a record.
	half := appendRecord(nil, []byte("never finished"), checksum([]byte("never finished")))[:13]
	writeUnderLock(t, path, half)
	_, st, err := readAll(t, path)
	require.NoError(t, err)
	assert.True(t, st.TornTail)

	require.NoError(t, b.Append([][]byte{[]byte("b1")}, Durable))
	require.NoError(t, a.Append([][]byte{[]byte("a2")}, Durable))
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())

	recs, st, err := readAll(t, path)
	require.NoError(t, err)
	assert.False(t, st.TornTail)
	assert.Equal(t, []string{"a0", "b0", "a1", "b1", "a2"}, strs(recs))
}

func strs(recs []record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.payload)
	}
	return out
}

// writeUnderLock appends raw bytes to the log the way a Shared writer does.
func writeUnderLock(t testing.TB, path string, b []byte) {
	t.Helper()
	lk, err := openLock(path + ".lock")
	require.NoError(t, err)
	defer lk.close()
	require.NoError(t, lk.lock())
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, lk.unlock())
}

// TestSearchGivesUpOnPathologicalTail builds a tail in which every 8-byte boundary
// holds a header claiming most of the rest of the file, so that searching it for a
// valid record would take quadratic time. The search gives up and the shape of
// the bad record decides: cut off by the end of the file, it is torn; fitting in
// the file with data after it, it is corruption.
func TestSearchGivesUpOnPathologicalTail(t *testing.T) {
	const tail = 96 << 10
	build := func(badLen uint32) ([]byte, int64) {
		var b []byte
		b = append(b, magic...)
		p := payload(1, 50)
		b = appendRecord(b, p, checksum(p))
		start := int64(len(b))
		b = binary.LittleEndian.AppendUint32(b, badLen)
		b = binary.LittleEndian.AppendUint32(b, 0xdeadbeef)
		size := int64(len(b)) + tail
		for q := int64(len(b)); q < size; q += 8 {
			b = binary.LittleEndian.AppendUint32(b, uint32(size-q-16))
			b = binary.LittleEndian.AppendUint32(b, 0x12345678)
		}
		return b, start
	}
	dir := t.TempDir()

	short, start := build(tail + 1000)
	path := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(path, short, 0o644))
	_, st, err := readAll(t, path)
	require.NoError(t, err)
	assert.True(t, st.TornTail)
	assert.Equal(t, start, st.TornAt)
	w := &window{r: bytes.NewReader(short), size: int64(len(short))}
	_, found, gaveUp := w.validAfter(start + recordHeaderSize)
	assert.False(t, found)
	assert.True(t, gaveUp, "the tail should exhaust the search budget")

	fits, start := build(8)
	path = filepath.Join(dir, "fits")
	require.NoError(t, os.WriteFile(path, fits, 0o644))
	_, _, err = readAll(t, path)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, start, ce.Offset)
	assert.Equal(t, int64(-1), ce.Next)
	assert.Contains(t, ce.Reason, "too many to search")
}

// A durable, unshared log reserves file space ahead of its records. What a
// crash leaves (records, then zeros) reads as a torn tail that Open cuts
// off; Close leaves the file ending with its last record.
func TestPreallocatedLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log")
	l, err := Open(path, Options{})
	require.NoError(t, err)
	ps := [][]byte{[]byte("one"), payload(1, 3000), {}, []byte("four")}
	for _, p := range ps {
		require.NoError(t, l.Append([][]byte{p}, Durable))
	}
	require.NoError(t, l.Append([][]byte{[]byte("async")}, Queued))
	require.NoError(t, l.Append([][]byte{[]byte("six")}, Durable))
	end := l.Size()
	ps = append(ps, []byte("async"), []byte("six"))

	// While it is open, readers see every record and a torn tail of zeros
	// (when the file system could reserve space).
	recs, st, err := readAll(t, path)
	require.NoError(t, err)
	assert.Equal(t, ps, payloads(recs))
	assert.Equal(t, end, st.Next)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	if l.prealloc {
		assert.Greater(t, fi.Size(), end)
		assert.True(t, st.TornTail)
	}

	// A crash now: the disk holds the file as it is.
	crashed := filepath.Join(dir, "crashed")
	require.NoError(t, os.WriteFile(crashed, fileBytes(t, path), 0o644))
	c, err := Open(crashed, Options{})
	require.NoError(t, err)
	assert.Equal(t, end, c.Size())
	require.NoError(t, c.Append([][]byte{[]byte("after")}, Durable))
	require.NoError(t, c.Close())
	recs, st, err = readAll(t, crashed)
	require.NoError(t, err)
	assert.Equal(t, append(append([][]byte{}, ps...), []byte("after")), payloads(recs))
	assert.False(t, st.TornTail)

	// A clean close cuts the reserved space off.
	require.NoError(t, l.Close())
	fi, err = os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, end, fi.Size())
	recs, st, err = readAll(t, path)
	require.NoError(t, err)
	assert.Equal(t, ps, payloads(recs))
	assert.False(t, st.TornTail)
}

// Records past the first reserved chunk still land in order.
func TestPreallocatedLogGrows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, err := Open(path, Options{})
	require.NoError(t, err)
	var ps [][]byte
	for i := 0; i < 40; i++ {
		ps = append(ps, payload(i, 100_000))
	}
	for i := 0; i < len(ps); i += 4 {
		require.NoError(t, l.Append(ps[i:i+4], Durable))
	}
	require.NoError(t, l.Close())
	recs, st, err := readAll(t, path)
	require.NoError(t, err)
	assert.Equal(t, ps, payloads(recs))
	assert.False(t, st.TornTail)
}

// TrimTail cuts a torn tail (here: space reserved ahead, as a killed
// writer leaves it) and leaves damage in the middle alone.
func TestTrimTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log")
	offs := writeLog(t, path, payload(1, 16), payload(2, 21), payload(3, 5))
	good := fileBytes(t, path)

	require.NoError(t, os.WriteFile(path, append(bytes.Clone(good), make([]byte, 3<<20)...), 0o644))
	dropped, err := TrimTail(path)
	require.NoError(t, err)
	assert.Equal(t, int64(3<<20), dropped)
	assert.Equal(t, good, fileBytes(t, path))

	dropped, err = TrimTail(path)
	require.NoError(t, err)
	assert.Zero(t, dropped, "a good log is left alone")

	bad := bytes.Clone(good)
	bad[offs[1]+9] ^= 1
	require.NoError(t, os.WriteFile(path, bad, 0o644))
	dropped, err = TrimTail(path)
	require.NoError(t, err)
	assert.Zero(t, dropped)
	assert.Equal(t, bad, fileBytes(t, path), "damage in the middle is left for Repair")
}

// AppendAt says where its records went: one after the other, as Read
// finds them, alone in their write when nothing else was queued with them.
func TestAppendAtSpans(t *testing.T) {
	for _, shared := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "log")
		l, err := Open(path, Options{Shared: shared, NoSync: true})
		require.NoError(t, err)
		var spans []Span
		for i := 0; i < 3; i++ {
			sp, err := l.AppendAt([][]byte{[]byte(fmt.Sprintf("record %d", i)), []byte("x")}, Written)
			require.NoError(t, err)
			spans = append(spans, sp)
		}
		_, err = l.AppendAt([][]byte{[]byte("q")}, Queued)
		require.Error(t, err)
		require.NoError(t, l.Close())
		var offs []int64
		_, err = ReadFrom(path, 0, func(off int64, _ []byte) error {
			offs = append(offs, off)
			return nil
		})
		require.NoError(t, err)
		require.Len(t, offs, 6)
		for i, sp := range spans {
			assert.True(t, sp.Alone, "shared %v: span %d", shared, i)
			assert.Equal(t, offs[2*i], sp.Start, "shared %v: span %d", shared, i)
			if i+1 < len(spans) {
				assert.Equal(t, spans[i+1].Start, sp.End, "shared %v: span %d", shared, i)
			}
		}
	}
}

// ReadRecord reads the record at an offset Read gave, whatever its size, and
// refuses a damaged one or an offset that is not a record's.
func TestReadRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	ps := [][]byte{payload(1, 3), payload(2, 0), payload(3, 5000), payload(4, 8)}
	offs := writeLog(t, path, ps...)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	for i, off := range offs {
		p, err := ReadRecord(f, path, off)
		require.NoError(t, err)
		assert.Equal(t, ps[i], p, "record %d", i)
	}
	_, err = ReadRecord(f, path, offs[2]+4)
	assert.ErrorContains(t, err, "not a record boundary")
	_, err = ReadRecord(f, path, fileHeaderSize+recordSize(3)+recordSize(0)+recordSize(5000)+recordSize(8))
	assert.Error(t, err, "past the end")

	b := fileBytes(t, path)
	b[offs[2]+recordHeaderSize+100] ^= 0xff
	require.NoError(t, os.WriteFile(path, b, 0o666))
	_, err = ReadRecord(f, path, offs[2])
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, "checksum mismatch")
	p, err := ReadRecord(f, path, offs[3])
	require.NoError(t, err)
	assert.Equal(t, ps[3], p)
}

// Records is the number of valid records Open found, a torn tail left out.
func TestOpenCountsRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	writeLog(t, path, payload(1, 10), payload(2, 20), payload(3, 30))
	b := fileBytes(t, path)
	require.NoError(t, os.WriteFile(path, b[:len(b)-5], 0o666)) // the last one torn
	l, err := Open(path, Options{NoSync: true, Shared: true})
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, 2, l.Records())
}

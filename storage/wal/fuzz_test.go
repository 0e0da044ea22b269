package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRead feeds arbitrary bytes to Read and Open as a log file. Neither may
// panic or hang, and they must agree: a file Read accepts, Open accepts and keeps
// every record Read saw, leaving no torn tail; a file Read calls corrupt, Open
// refuses without touching it.
func FuzzRead(f *testing.F) {
	var good []byte
	good = append(good, magic...)
	for i, n := range []int{0, 1, 7, 8, 9, 40} {
		p := payload(i, n)
		good = appendRecord(good, p, checksum(p))
	}
	f.Add(good)
	f.Add(good[:len(good)-5])
	f.Add(append(bytes.Clone(good), make([]byte, 24)...))
	flipped := bytes.Clone(good)
	flipped[30] ^= 4
	f.Add(flipped)
	f.Add([]byte(magic[:5]))
	f.Add([]byte{})
	f.Add(make([]byte, 40))
	f.Add([]byte("CAIRNWL2"))
	f.Add(binary.LittleEndian.AppendUint32([]byte(magic), MaxRecordSize+1))
	f.Add(binary.LittleEndian.AppendUint32([]byte(magic), 1000))

	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "log")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var recs [][]byte
		st, err := Read(path, func(off int64, p []byte) error {
			if off < fileHeaderSize || off%8 != 0 || off+int64(len(p)) > int64(len(data)) {
				t.Fatalf("record at bad offset %d (%d bytes) in a %d-byte file", off, len(p), len(data))
			}
			recs = append(recs, bytes.Clone(p))
			return nil
		})
		if st.Records != len(recs) {
			t.Fatalf("stats say %d records, fn saw %d", st.Records, len(recs))
		}
		if _, ferr := ReadFrom(path, st.Next, nil); err == nil && st.Next > 0 && ferr != nil {
			t.Fatalf("ReadFrom(Next=%d): %v", st.Next, ferr)
		}

		l, oerr := Open(path, Options{NoSync: true})
		switch {
		case err == nil:
			if oerr != nil {
				t.Fatalf("Read accepted the file, Open did not: %v", oerr)
			}
			if cerr := l.Close(); cerr != nil {
				t.Fatal(cerr)
			}
			var again [][]byte
			st2, err := Read(path, func(_ int64, p []byte) error {
				again = append(again, bytes.Clone(p))
				return nil
			})
			if err != nil || st2.TornTail {
				t.Fatalf("after Open: err %v, stats %+v", err, st2)
			}
			if len(again) != len(recs) {
				t.Fatalf("Open kept %d records, Read saw %d", len(again), len(recs))
			}
			for i := range recs {
				if !bytes.Equal(recs[i], again[i]) {
					t.Fatalf("record %d changed by Open", i)
				}
			}
		case errors.Is(err, ErrCorrupt), errors.Is(err, ErrVersion):
			if oerr == nil {
				l.Close()
				t.Fatalf("Read said %v, Open accepted the file", err)
			}
			if errors.Is(err, ErrCorrupt) != errors.Is(oerr, ErrCorrupt) {
				t.Fatalf("Read said %v, Open said %v", err, oerr)
			}
			after, rerr := os.ReadFile(path)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if !bytes.Equal(after, data) {
				t.Fatal("Open changed a file it refused")
			}
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	})
}

// Package atomicfile replaces a file's content all at once: the bytes go
// to a temporary file beside it, which is renamed over the old one, so a
// reader (or a crash) sees the old content or the new, never a mix.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
)

// Write replaces path's content with b (mode 0666 less the umask, as a
// new file gets: with umask 002, the group of a shared cache may replace
// it too), making its folder if needed (0777 less the umask). With sync
// set, the file's bytes reach the disk before the rename and the rename
// itself after it (the folder is synced too), so that a power loss leaves
// the old content or the new; without it, only a crash of the process is
// covered.
func Write(path string, b []byte, sync bool) (err error) {
	dir := filepath.Dir(path)
	f, err := createTemp(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return err
		}
		f, err = createTemp(path)
	}
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	_, err = f.Write(b)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil || !sync {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// createTemp creates a new file beside path with mode 0666 less the
// umask (os.CreateTemp would make it 0600).
func createTemp(path string) (*os.File, error) {
	var r [8]byte
	for try := 0; ; try++ {
		_, _ = rand.Read(r[:])
		name := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(r[:]))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, os.ErrExist) && try < 100 {
			continue
		}
		return f, err
	}
}

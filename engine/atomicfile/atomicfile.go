// Package atomicfile replaces a file's content all at once: the bytes go
// to a temporary file beside it, which is renamed over the old one, so a
// reader (or a crash) sees the old content or the new, never a mix.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// Write replaces path's content with b (mode 0644), making its folder
// if needed. With sync set, the file's bytes reach the disk before the
// rename and the rename itself after it (the folder is synced too), so
// that a power loss leaves the old content or the new; without it, only a
// crash of the process is covered.
func Write(path string, b []byte, sync bool) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		f, err = os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
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
		err = os.Chmod(tmp, 0o644)
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

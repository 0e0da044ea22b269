// Package digest is the sha256 of a file's bytes, in hex: the one place the
// language (filesha256), the stage kinds (worker, bundle and artifact
// digests) and the decision protocol (its pinned files) compute it.
package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// Reader is the hex sha256 of r's bytes, read to their end.
func Reader(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// File is the hex sha256 of a regular file's bytes. Anything else (a
// folder, a pipe, a device) is refused with an error that names path, so
// that a pipe cannot block the caller.
func File(path string) (string, error) {
	// Stat before opening: opening a pipe waits for a writer.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	return Reader(f)
}

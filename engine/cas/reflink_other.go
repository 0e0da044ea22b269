//go:build !linux

package cas

import "os"

// reflink is not attempted outside Linux; the caller copies.
func reflink(dst, src *os.File) bool { return false }

//go:build !linux

package sysproc

import (
	"syscall"
	"time"
)

// Guarded is not offered where there is no parent-death signal: the
// command starts as it is (ok false).
func Guarded(path string, argv []string, files int, grace time.Duration) (string, []string, *syscall.SysProcAttr, bool) {
	return "", nil, nil, false
}

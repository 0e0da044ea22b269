//go:build unix && !linux && !darwin

package fsdigest

import "syscall"

// CtimeNs is not read on these systems (0); size, times, inode and mode
// remain.
func CtimeNs(st *syscall.Stat_t) int64 { return 0 }

// AtimeNs is not read on these systems (0).
func AtimeNs(st *syscall.Stat_t) int64 { return 0 }

//go:build unix && !linux && !darwin

package fsdigest

import "syscall"

// ctimeNs is not read on these systems; size, times, inode and mode remain.
func ctimeNs(st *syscall.Stat_t) int64 { return 0 }

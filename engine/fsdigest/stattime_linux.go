package fsdigest

import "syscall"

// CtimeNs is a stat's change time in nanoseconds since the epoch.
func CtimeNs(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }

// AtimeNs is a stat's access time in nanoseconds since the epoch.
func AtimeNs(st *syscall.Stat_t) int64 { return st.Atim.Nano() }

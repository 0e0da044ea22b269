//go:build unix && !linux

package sysproc

import "syscall"

// Group is the attributes of a child that leads its own process group.
// These systems have no parent-death signal: a child outlives a cairn
// killed with SIGKILL until its process group is killed.
func Group() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

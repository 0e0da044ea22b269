package sysproc

import "syscall"

// Group is the attributes of a child that leads its own process group and
// is killed when the thread that started it dies.
func Group() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

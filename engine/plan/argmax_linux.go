package plan

import "syscall"

// argLimit is how many bytes the arguments and environment of a program
// may take together, their pointers counted, as Linux's execve reckons
// it: a quarter of the stack limit, at most 6 MiB (three quarters of the
// default 8 MiB stack), at least 128 KiB.
func argLimit() int {
	const maxLimit, minLimit = 6 << 20, 128 << 10
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &rl); err != nil {
		return 2 << 20
	}
	limit := uint64(maxLimit)
	if rl.Cur/4 < limit {
		limit = rl.Cur / 4
	}
	return int(max(limit, minLimit))
}

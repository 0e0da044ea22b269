//go:build !linux

package plan

// argLimit is how many bytes the arguments and environment of a program
// may take together: macOS's ARG_MAX (1 MiB), which the BSDs do not
// exceed either.
func argLimit() int { return 1 << 20 }

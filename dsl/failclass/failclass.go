// Package failclass names the failure classes: a closed list, every failed
// node has exactly one, and retry policies name them. The list is documented
// in docs/language.md. The language (retry's on), the executors, the run
// journal and the engine all speak it, so it is a leaf that imports nothing.
package failclass

const (
	Exit          = "exit"           // the process exited non-zero (not otherwise diagnosed)
	Timeout       = "timeout"        // cairn killed it at its timeout
	MemoryFailure = "memory_failure" // diagnosed out-of-memory: OOM text in stderr, or a kernel OOM kill
	Killed        = "killed"         // ended by a signal cairn did not send, without an OOM diagnosis
	Setup         = "setup"          // could not start: missing program, bad working dir, missing input, stderr setup pattern
	Infra         = "infrastructure" // endpoint down, node lost, scheduler error; stderr infrastructure pattern
	Interrupted   = "interrupted"    // cairn was interrupted (Ctrl-C, SIGTERM) while it ran
	Postcondition = "postcondition"  // it ran, but a postcondition refused its result
	Result        = "result"         // the declared result file is missing or is not valid JSON
)

// All lists every class in documentation order.
var All = []string{
	Exit, Timeout, MemoryFailure, Killed, Setup,
	Infra, Interrupted, Postcondition, Result,
}

// Valid reports whether s names a failure class.
func Valid(s string) bool {
	for _, c := range All {
		if c == s {
			return true
		}
	}
	return false
}

package dsl

// Failure classes are a closed list: every failed node has exactly one, and
// retry policies name them. The list is documented in docs/language.md.
const (
	ClassExit          = "exit"           // the process exited non-zero (not otherwise diagnosed)
	ClassTimeout       = "timeout"        // cairn killed it at its timeout
	ClassMemoryFailure = "memory_failure" // diagnosed out-of-memory: OOM text in stderr, or a kernel OOM kill
	ClassKilled        = "killed"         // ended by a signal cairn did not send, without an OOM diagnosis
	ClassSetup         = "setup"          // could not start: missing program, bad working dir, missing input, stderr setup pattern
	ClassInfra         = "infrastructure" // endpoint down, node lost, scheduler error; stderr infrastructure pattern
	ClassInterrupted   = "interrupted"    // cairn was interrupted (Ctrl-C, SIGTERM) while it ran
	ClassPostcondition = "postcondition"  // it ran, but a postcondition refused its result
	ClassResult        = "result"         // the declared result file is missing or is not valid JSON
)

// FailureClasses lists every class in documentation order.
var FailureClasses = []string{
	ClassExit, ClassTimeout, ClassMemoryFailure, ClassKilled, ClassSetup,
	ClassInfra, ClassInterrupted, ClassPostcondition, ClassResult,
}

// IsFailureClass reports whether s names a failure class.
func IsFailureClass(s string) bool {
	for _, c := range FailureClasses {
		if c == s {
			return true
		}
	}
	return false
}

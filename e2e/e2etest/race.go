//go:build race

package e2etest

// RaceEnabled says the tests run under the race detector (go test -race):
// a package that wants the binaries it runs under it too builds them with
// Binaries.Race = RaceEnabled.
const RaceEnabled = true

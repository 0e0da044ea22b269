//go:build race

package serve_test

// raceEnabled: go test -race builds the binaries under test with -race.
const raceEnabled = true

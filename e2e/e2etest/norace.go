//go:build !race

package e2etest

// RaceEnabled says the tests run under the race detector (go test -race).
const RaceEnabled = false

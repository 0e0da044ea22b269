package failpoint_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
)

// buildCairn builds cmd/cairn with the given build tags and returns the
// binary's symbol table (go tool nm) and its bytes.
func buildCairn(t *testing.T, tags ...string) (symbols string, binary []byte) {
	t.Helper()
	bin := filepath.Join(e2etest.Binaries{Packages: []string{"cmd/cairn"}, Tags: tags}.BuildFor(t), "cairn")
	goTool, err := e2etest.GoTool()
	require.NoError(t, err)
	nm, err := exec.Command(goTool, "tool", "nm", bin).CombinedOutput()
	require.NoError(t, err, "go tool nm: %s", nm)
	binary, err = os.ReadFile(bin)
	require.NoError(t, err)
	return string(nm), binary
}

// The crash points that make cairn kill itself are in a build with the
// tag cairn_failpoints only (the crash tests' build): a release build
// (`go build ./cmd/cairn`) has none of their code and reads none of
// their environment variables.
func TestReleaseBinaryHasNoCrashPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cairn twice")
	}
	const pkg = "github.com/cairn-run/cairn/engine/failpoint."
	envNames := []string{
		"CAIRN_TEST_KILL_AFTER_RECORDS", "CAIRN_TEST_KILL_AFTER_COMMITS", "CAIRN_TEST_KILL_AFTER_STARTS",
		"CAIRN_TEST_KILL_WHEN", "CAIRN_TEST_LATE_LOCK_KILLS", "CAIRN_TEST_SYNC_DELAY_S",
		"CAIRN_TEST_JOURNAL_FULL_AFTER", "CAIRN_TEST_JOURNAL_ERRNO",
	}

	symbols, binary := buildCairn(t)
	assert.NotContains(t, symbols, pkg, "a release build of cairn has crash-point code")
	for _, name := range envNames {
		assert.False(t, bytes.Contains(binary, []byte(name)), "a release build of cairn reads %s", name)
	}

	symbols, binary = buildCairn(t, "cairn_failpoints")
	assert.Contains(t, symbols, pkg+"killAt", "the crash tests' build has the crash points")
	for _, name := range envNames {
		assert.True(t, bytes.Contains(binary, []byte(name)), "the crash tests' build reads %s", name)
	}
}

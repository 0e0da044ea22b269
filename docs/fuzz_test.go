package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// make fuzz names every fuzzer of the repository, and CI runs them all
// for a short time, as the README says.
func TestMakeFuzzNamesEveryFuzzer(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)FUZZERS := (.*?)\n\n`).FindSubmatch(mk)
	require.NotNil(t, m, "no FUZZERS in the Makefile")
	var listed []string
	for _, f := range strings.Fields(strings.ReplaceAll(string(m[1]), "\\", "")) {
		pkg, name, _ := strings.Cut(f, ":")
		listed = append(listed, strings.TrimPrefix(pkg, "./")+":"+name)
	}
	var found []string
	fuzz := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	require.NoError(t, filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && otherModule(p, "..") {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range fuzz.FindAllSubmatch(b, -1) {
			found = append(found, strings.TrimPrefix(filepath.Dir(p), "../")+":"+string(m[1]))
		}
		return nil
	}))
	sort.Strings(listed)
	sort.Strings(found)
	assert.Equal(t, found, listed, "the fuzzers make fuzz runs")
	ci, err := os.ReadFile("../.ci/run")
	require.NoError(t, err)
	assert.Contains(t, string(ci), "\nmake fuzz-short\n")
	assert.Contains(t, prose(t, "../README.md"), "a failing fuzzer does not stop the others")
}

// A failing fuzzer does not stop make fuzz: the ones after it run, each
// one's result is listed, and the status is non-zero.
func TestMakeFuzzRunsOnAfterAFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a fuzzing test binary")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	cmd := exec.Command("make", "--no-print-directory", "fuzz", "FUZZTIME=1x",
		"FUZZERS=./no/such/package:FuzzMissing ./storage/wal:FuzzRead")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	text := string(out)
	assert.Regexp(t, `FAILED +FuzzMissing \(\./no/such/package\)`, text)
	assert.Regexp(t, `ok +FuzzRead \(\./storage/wal\)`, text)
	assert.Contains(t, text, "1 fuzzer(s) failed")
}

// make fuzz lists a fuzzer whose only failure is Go's fuzzing coordinator
// reporting its own -fuzztime deadline (no failing input) as ok, saying
// so, and still fails one that wrote a failing input or failed otherwise.
func TestMakeFuzzTellsTheDeadlineRaceFromAFailure(t *testing.T) {
	dir := t.TempDir()
	stub := filepath.Join(dir, "go")
	// A stand-in for go test -fuzz: what each named fuzzer prints, and its
	// status.
	require.NoError(t, os.WriteFile(stub, []byte(`#!/bin/sh
case "$*" in
*FuzzRace*) printf -- '--- FAIL: FuzzRace (6.01s)\n    context deadline exceeded\nFAIL\n'; exit 1 ;;
*FuzzCrash*) printf -- '--- FAIL: FuzzCrash (0.05s)\n    --- FAIL: FuzzCrash (0.00s)\n        x_test.go:9: context deadline exceeded\n    Failing input written to testdata/fuzz/FuzzCrash/0f1e\nFAIL\n'; exit 1 ;;
*FuzzTimeout*) printf -- '--- FAIL: FuzzTimeout (6.01s)\n    x_test.go:9: timed out\nFAIL\n'; exit 1 ;;
*) printf 'PASS\nok\n' ;;
esac
`), 0o755))
	cmd := exec.Command("bash", "../scripts/fuzz.sh", "1s",
		"./a:FuzzRace", "./a:FuzzCrash", "./a:FuzzTimeout", "./a:FuzzFine")
	cmd.Env = append(os.Environ(), "GO="+stub)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	text := string(out)
	assert.Regexp(t, `ok +FuzzRace \(\./a\): its time ran out with no failing input`, text)
	assert.Regexp(t, `FAILED +FuzzCrash \(\./a\)`, text)
	assert.Regexp(t, `FAILED +FuzzTimeout \(\./a\)`, text)
	assert.Regexp(t, `ok +FuzzFine \(\./a\)\n`, text)
	assert.Contains(t, text, "2 fuzzer(s) failed")
}

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

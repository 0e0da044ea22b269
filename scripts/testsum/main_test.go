package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdata/mixed.json is what `go test -json ./...` printed for a module
// with a passing test, a failing subtest, a skipped test, a package that
// does not build and a passing package.
func TestSummarizeMixed(t *testing.T) {
	in, err := os.Open("testdata/mixed.json")
	require.NoError(t, err)
	defer in.Close()
	var out bytes.Buffer
	code := summarize(in, &out)
	assert.Equal(t, 1, code)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	assert.Equal(t, "2 passed, 3 failed, 1 skipped", lines[len(lines)-1], out.String())
	s := out.String()
	assert.Contains(t, s, "a_test.go:4: boom")                // the failure, in full
	assert.Contains(t, s, "--- FAIL: TestBad/sub")            // and its verdict
	assert.Contains(t, s, "b/b_test.go:3:28: undefined")      // the build error
	assert.Contains(t, s, "ok  \tx/c\t")                      // a package's result line
	assert.NotContains(t, s, "quiet", "a passing test's log") // passing tests stay quiet
	assert.NotContains(t, s, "=== RUN   TestOK")
	// The skipped test is listed, with its reason, above the count.
	assert.Equal(t, []string{"skipped:", "  x/a TestSkip: a_test.go:5: later"}, lines[len(lines)-3:len(lines)-1])
}

// Every skip is listed with what it said; a skip that said nothing says so.
func TestSummarizeListsSkips(t *testing.T) {
	in := `{"Action":"run","Package":"x/s","Test":"TestSlurm"}
{"Action":"output","Package":"x/s","Test":"TestSlurm","Output":"=== RUN   TestSlurm\n"}
{"Action":"output","Package":"x/s","Test":"TestSlurm","Output":"    slurm_test.go:20: no Slurm cluster here (scripts/slurm-up.sh starts one)\n"}
{"Action":"output","Package":"x/s","Test":"TestSlurm","Output":"--- SKIP: TestSlurm (0.00s)\n"}
{"Action":"skip","Package":"x/s","Test":"TestSlurm"}
{"Action":"run","Package":"x/s","Test":"TestQuiet"}
{"Action":"output","Package":"x/s","Test":"TestQuiet","Output":"=== RUN   TestQuiet\n"}
{"Action":"output","Package":"x/s","Test":"TestQuiet","Output":"--- SKIP: TestQuiet (0.00s)\n"}
{"Action":"skip","Package":"x/s","Test":"TestQuiet"}
{"Action":"run","Package":"x/s","Test":"TestOK"}
{"Action":"pass","Package":"x/s","Test":"TestOK"}
{"Action":"output","Package":"x/s","Output":"ok  \tx/s\t0.005s\n"}
{"Action":"pass","Package":"x/s"}
`
	var out bytes.Buffer
	assert.Equal(t, 0, summarize(strings.NewReader(in), &out))
	assert.Equal(t, "ok  \tx/s\t0.005s\n"+
		"skipped:\n"+
		"  x/s TestSlurm: slurm_test.go:20: no Slurm cluster here (scripts/slurm-up.sh starts one)\n"+
		"  x/s TestQuiet: (no reason given)\n"+
		"1 passed, 0 failed, 2 skipped\n", out.String())
}

func TestSummarizeAllPass(t *testing.T) {
	in := `{"Action":"start","Package":"x/c"}
{"Action":"run","Package":"x/c","Test":"TestC"}
{"Action":"output","Package":"x/c","Test":"TestC","Output":"=== RUN   TestC\n"}
{"Action":"pass","Package":"x/c","Test":"TestC"}
{"Action":"output","Package":"x/c","Output":"PASS\n"}
{"Action":"output","Package":"x/c","Output":"ok  \tx/c\t0.005s\n"}
{"Action":"pass","Package":"x/c"}
`
	var out bytes.Buffer
	assert.Equal(t, 0, summarize(strings.NewReader(in), &out))
	assert.Equal(t, "ok  \tx/c\t0.005s\n1 passed, 0 failed, 0 skipped\n", out.String())
}

// Output that is not an event (go vet, the go command's own errors) is
// passed through; with no test result at all, that is a failure.
func TestSummarizeNoEvents(t *testing.T) {
	var out bytes.Buffer
	assert.Equal(t, 1, summarize(strings.NewReader("go: cannot find main module\n"), &out))
	assert.Contains(t, out.String(), "go: cannot find main module\n")
	assert.True(t, strings.HasSuffix(out.String(), "\n0 passed, 1 failed, 0 skipped\n"), out.String())
}

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

const sealedPipeline = `pipeline "sealed" {}

variable "pins" {
  type = string
}

seal "frozen" {
  sha256 = jsondecode(file(var.pins))
}

stage "command" "count" {
  run     = ["sh", "-c", "echo ran >> runs.log; wc -c < data/train.csv > count.txt"]
  outputs = ["count.txt"]
}
`

// nodeKey is a node's key in a JSON plan.
func nodeKey(t *testing.T, r cliResult, addr string) string {
	t.Helper()
	require.Equal(t, exitOK, r.code, r.stderr)
	var p plan.JSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &p), r.stdout)
	for _, n := range p.Nodes {
		if n.Address == addr {
			require.NotEmpty(t, n.Key, "%s has a key", addr)
			return n.Key
		}
	}
	t.Fatalf("%s is not in the plan", addr)
	return ""
}

// One changed byte in a pinned file refuses the run (exit 2) before
// anything runs, naming the file and both digests; the pins are part of
// every node key.
func TestSealRefusesAChangedFile(t *testing.T) {
	data := []byte("x,y\n1,2\n")
	root := cliWorkspace(t, map[string]string{
		"pipeline.hcl":   sealedPipeline,
		"data/train.csv": string(data),
		"pins.json":      `{"data/train.csv": "` + sha256Hex(data) + `"}`,
	})
	apply := func() cliResult { return runCLI(t, "--chdir", root, "apply", "--var", "pins=pins.json") }
	r := apply()
	require.Equal(t, 0, r.code, r.stderr)
	plan := runCLI(t, "--chdir", root, "plan", "--var", "pins=pins.json", "--json")
	require.Equal(t, 0, plan.code, plan.stderr)
	key := nodeKey(t, plan, "stage.count")

	changed := []byte("x,y\n1,3\n")
	require.NoError(t, os.WriteFile(filepath.Join(root, "data/train.csv"), changed, 0o644))
	r = apply()
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "Sealed file data/train.csv does not match")
	stderr := strings.Join(strings.Fields(r.stderr), " ")
	assert.Contains(t, stderr, "pins data/train.csv to sha256 "+sha256Hex(data)+", but the file's sha256 is "+sha256Hex(changed))
	assert.Contains(t, stderr, "pipeline.hcl:8:12, in seal \"frozen\"", "where the seal is")
	log, err := os.ReadFile(filepath.Join(root, "runs.log"))
	require.NoError(t, err)
	assert.Equal(t, "ran\n", string(log), "nothing ran after the refusal")

	// A missing file is refused too.
	require.NoError(t, os.Remove(filepath.Join(root, "data/train.csv")))
	r = apply()
	assert.Equal(t, 2, r.code)
	assert.Contains(t, strings.Join(strings.Fields(r.stderr), " "), "data/train.csv to sha256 "+sha256Hex(data)+", but the file does not exist")

	// Sealing the new content: the node key changes with the pin, and plan
	// says why.
	require.NoError(t, os.WriteFile(filepath.Join(root, "data/train.csv"), changed, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "pins.json"), []byte(`{"data/train.csv": "`+sha256Hex(changed)+`"}`), 0o644))
	plan = runCLI(t, "--chdir", root, "plan", "--var", "pins=pins.json")
	require.Equal(t, 0, plan.code, plan.stderr)
	assert.Contains(t, plan.stdout, "sealed file data/train.csv: sha256 "+sha256Hex(data)+" -> "+sha256Hex(changed))
	plan = runCLI(t, "--chdir", root, "plan", "--var", "pins=pins.json", "--json")
	assert.NotEqual(t, key, nodeKey(t, plan, "stage.count"))
	require.Equal(t, 0, apply().code)
	log, _ = os.ReadFile(filepath.Join(root, "runs.log"))
	assert.Equal(t, 2, strings.Count(string(log), "ran"))
}

// A seal that passes is said, not silent: validate, plan and apply name
// how many sealed files matched (#28).
func TestSealThatMatchesIsSaid(t *testing.T) {
	data := []byte("x,y\n1,2\n")
	root := cliWorkspace(t, map[string]string{
		"pipeline.hcl":   sealedPipeline,
		"data/train.csv": string(data),
		"pins.json":      `{"data/train.csv": "` + sha256Hex(data) + `"}`,
	})
	for _, cmd := range []string{"validate", "plan", "apply"} {
		r := runCLI(t, "--chdir", root, cmd, "--var", "pins=pins.json")
		require.Equal(t, 0, r.code, r.stderr)
		first, _, _ := strings.Cut(r.stdout, "\n")
		assert.Contains(t, first, `pipeline "sealed": 1 stage, 1 node, 1 sealed file matches its sha256`, cmd)
	}
	r := runCLI(t, "--chdir", root, "validate")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "sealed file", "a seal that waits for a value is not checked, and not said to match")
}

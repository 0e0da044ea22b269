package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReplayCommand(t *testing.T) {
	root := cliWorkspace(t, nil)
	protocol, err := filepath.Abs("../../stages/decision/testdata/small_protocol.json")
	require.NoError(t, err)
	outcomes, err := filepath.Abs("../../stages/decision/testdata/small_outcomes.json")
	require.NoError(t, err)

	r := runCLI(t, "--chdir", root, "replay", protocol, outcomes, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var got map[string]map[string]map[string]map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	assert.Equal(t, []any{0.5, 1.0}, got["total"]["source_copy"]["0"]["coverage"])
	assert.Equal(t, 1.0, got["beta"]["direct_screen"]["3"]["unavailable"])

	// The files, in --out under the workspace root.
	js, err := os.ReadFile(filepath.Join(root, "replay", "replay.json"))
	require.NoError(t, err)
	assert.JSONEq(t, r.stdout, string(js))
	_, err = os.Stat(filepath.Join(root, "replay", "replay.tsv"))
	require.NoError(t, err)

	table := runCLI(t, "--chdir", root, "replay", protocol, outcomes, "--out", "")
	require.Equal(t, 0, table.code, table.stderr)
	assert.Contains(t, table.stdout, "CASE   RULE            BUDGET  DECISIONS")
	assert.NotContains(t, table.stderr, "written")

	// A bad outcomes file: exit 2, the problem at its position.
	require.NoError(t, os.WriteFile(filepath.Join(root, "bad.json"), []byte("{\n  \"alpha-c1-s141\": \"ok\"\n}\n"), 0o644))
	bad := runCLI(t, "--chdir", root, "replay", protocol, "bad.json")
	assert.Equal(t, 2, bad.code)
	assert.Contains(t, bad.stderr, filepath.Join(root, "bad.json")+`:2:20: slot "alpha-c1-s141": "ok" is not an outcome`)
	assert.Contains(t, bad.stderr, "nothing was replayed")

	missing := runCLI(t, "--chdir", root, "replay", "nope.json", outcomes)
	assert.Equal(t, 2, missing.code)
	assert.Contains(t, missing.stderr, "cannot read the protocol")
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A pipeline that names a file in NFD (copied from macOS) means the NFC
// name, as HCL reads all text: never silently. Load warns at the first
// such text, and an input that does not exist where its NFD spelling does
// says so.
func TestNFDFileNameSaysSo(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"data/" + cafeNFD + ".txt": "the NFD file\n",
		"p.hcl": `stage "command" "s" {
  run    = ["cat", "data/` + cafeNFD + `.txt"]
  inputs = ["data/` + cafeNFD + `.txt"]
}
`,
		"nfc.hcl": "# " + cafeNFD + ", in a comment only\nstage \"command\" \"s\" {\n  run = [\"echo\", \"" + cafeNFC + "\"]\n}\n",
		// A script that writes its output in NFD, and file() of an NFD
		// name written in NFC.
		"w.hcl": `stage "command" "w" {
  run     = ["sh", "-c", "mkdir -p out; touch out/$(printf 'cafe\\314\\201').txt"]
  outputs = ["out/` + cafeNFC + `.txt"]
}
`,
		"f.hcl": `locals {
  text = file("data/` + cafeNFC + `.txt")
}

stage "command" "s" {
  run = ["echo", local.text]
}
`,
	})
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	r := runCLI(t, "--chdir", root, "validate", "p.hcl", "--no-color")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "Warning: Text not in Unicode NFC")
	assert.Regexp(t, `on \S*p\.hcl:2:29`, r.stderr)
	assert.Contains(t, flat(r.stderr), `The text "e\u0301" here (first in this file) is in a decomposed Unicode form (NFD, as macOS names files)`)
	assert.Contains(t, flat(r.stderr), "rename it to NFC")

	r = runCLI(t, "--chdir", root, "plan", "p.hcl", "--no-color")
	assert.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, flat(r.stdout), `input data/`+cafeNFC+`.txt does not exist yet; "data/cafe\u0301.txt" exists, which is the same name in another Unicode form`)

	r = runCLI(t, "--chdir", root, "apply", "p.hcl", "--no-color")
	assert.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout+r.stderr, `input data/`+cafeNFC+`.txt does not exist; "data/cafe\u0301.txt" exists, which is the same name in another Unicode form`)

	r = runCLI(t, "--chdir", root, "apply", "w.hcl", "--no-color")
	assert.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout+r.stderr, `the declared output out/`+cafeNFC+`.txt was not written; "out/cafe\u0301.txt" exists, which is the same name in another Unicode form`)

	r = runCLI(t, "--chdir", root, "validate", "f.hcl", "--no-color")
	assert.Equal(t, exitBadInput, r.code, r.stdout+r.stderr)
	assert.Contains(t, flat(r.stderr), `"data/cafe\u0301.txt" exists, which is the same name in another Unicode form`)

	r = runCLI(t, "--chdir", root, "validate", "nfc.hcl", "--no-color")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "Warning", "NFD in a comment names nothing")
}

// A workspace folder named in NFD: path.root (NFC, as all text) would name
// another folder, so a pipeline that refers to it is refused (exit 2),
// saying to rename the folder; one that does not runs there as before.
func TestNFDWorkspaceRootRefusedForPathRoot(t *testing.T) {
	base := cliWorkspace(t, nil)
	root := filepath.Join(base, "Re\u0301sultats")
	require.NoError(t, os.Mkdir(root, 0o755))
	writeFile(t, filepath.Join(root, "p.hcl"), "stage \"command\" \"s\" {\n  run = [\"ls\", \"${path.root}\"]\n}\n")
	writeFile(t, filepath.Join(root, "q.hcl"), "stage \"command\" \"s\" {\n  run = [\"ls\", \".\"]\n}\n")
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, cmd := range []string{"validate", "apply"} {
		r := runCLI(t, "--chdir", root, cmd, "p.hcl", "--no-color")
		assert.Equal(t, exitBadInput, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stderr, "Error: path.root names another folder")
		assert.Regexp(t, `on \S*p\.hcl:2:19`, r.stderr)
		assert.Contains(t, flat(r.stderr), `Rename the folder to its NFC spelling ("R\u00e9sultats"`)
	}
	r := runCLI(t, "--chdir", root, "apply", "q.hcl", "--no-color")
	assert.Equal(t, exitOK, r.code, r.stdout+r.stderr)
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crlf is text with Windows line ends, as an editor on Windows (or git's
// core.autocrlf) saves it.
func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

// A pipeline saved with CRLF line ends runs as the same file with LF ones:
// a heredoc's lines do not end in a carriage return (mkdir -p data made a
// folder "data\r", and the node failed or wrote beside it), and
// diagnostics name the same lines and columns. A CR before the line's
// CRLF is the line's text, and kept.
func TestCRLFPipelineReadAsLF(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"p.hcl": crlf(`stage "command" "prep" {
  shell = true
  run = <<EOT
mkdir -p data
echo 42 > data/n.txt
EOT
  outputs = ["data/n.txt"]
}
`),
		"cr.hcl": crlf(`stage "command" "cr" {
  run     = ["sh", "-c", "mkdir -p data; printf '%s' \"$1\" > data/cr.txt", "sh", <<EOT
a` + "\r" + `
b
EOT
  ]
  outputs = ["data/cr.txt"]
}
`),
		"bad.hcl": crlf(`stage "command" "prep" {
  run = <<EOT
echo hi
EOT
  colour = "red"
}
`),
	})
	r := runCLI(t, "--chdir", root, "validate", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runCLI(t, "--chdir", root, "apply", "p.hcl", "--no-color")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	b, err := os.ReadFile(filepath.Join(root, "data", "n.txt"))
	require.NoError(t, err)
	assert.Equal(t, "42\n", string(b))
	r = runCLI(t, "--chdir", root, "apply", "cr.hcl", "--no-color")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	b, err = os.ReadFile(filepath.Join(root, "data", "cr.txt"))
	require.NoError(t, err)
	assert.Equal(t, "a\r\nb\n", string(b), "a CR that ends a heredoc's line's text is kept")
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotContains(t, e.Name(), "\r")
	}

	r = runCLI(t, "--chdir", root, "validate", "bad.hcl", "--no-color")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "bad.hcl:5:3", r.stderr)
	assert.NotContains(t, r.stderr, "\r")
}

// A --var-file with CRLF line ends gives its heredocs without the CR too.
func TestCRLFVarFileReadAsLF(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"p.hcl":    "variable \"script\" {\n  type = string\n}\n\nstage \"command\" \"s\" {\n  run     = [\"sh\", \"-c\", var.script]\n  outputs = [\"out\"]\n}\n",
		"v.tfvars": crlf("script = <<EOT\nmkdir -p out\nEOT\n"),
	})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl", "--var-file", "v.tfvars", "--no-color")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	st, err := os.Stat(filepath.Join(root, "out"))
	require.NoError(t, err)
	assert.True(t, st.IsDir())
}

// cairn fmt formats a CRLF file as the same file with LF line ends, and
// keeps its CRLF line ends.
func TestFmtKeepsCRLF(t *testing.T) {
	src := "locals {\n  a = 1 # one\n  bb = 2   # two\n  d = <<-EOT\n    hi\n    EOT\n}\n"
	root := cliWorkspace(t, map[string]string{"lf.hcl": src, "crlf.hcl": crlf(src)})
	r := runCLI(t, "--chdir", root, "fmt", "lf.hcl", "crlf.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	lf, err := os.ReadFile(filepath.Join(root, "lf.hcl"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(root, "crlf.hcl"))
	require.NoError(t, err)
	assert.Equal(t, crlf(string(lf)), string(got))
	assert.NotEqual(t, src, string(lf), "formatted")
}

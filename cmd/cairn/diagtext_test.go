package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A place that hcl writes into a message as a range ("p.hcl:2,3-6") reads
// FILE:LINE:COL, as the place each error starts with.
func TestPlacesInMessagesReadFileLineCol(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"p.hcl":    "variable \"a\" {\n  default = 1\n}\nstage \"command\" \"s\" {\n  run = [\"true\"]\n  run = [\"false\"]\n}\n",
		"dup.json": "{\"a\": 1,\n \"a\": 2}\n",
	})
	r := runCLI(t, "--chdir", root, "validate", "p.hcl")
	require.Equal(t, exitBadInput, r.code, r.stderr)
	assert.Regexp(t, `The argument "run" was already set at\s+\S*p\.hcl:5:3\.`, r.stderr)
	assert.NotRegexp(t, `p\.hcl:\d+,\d+`, r.stderr)

	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte("variable \"a\" {\n  default = 1\n}\nstage \"command\" \"s\" {\n  run = [\"true\"]\n}\n"), 0o644))
	r = runCLI(t, "--chdir", root, "validate", "p.hcl", "--var-file", "dup.json")
	require.Equal(t, exitBadInput, r.code, r.stderr)
	assert.Regexp(t, `The argument "a" was already set at\s+\S*dup\.json:1:2\.`, r.stderr)
}

// A control character in a pipeline file is shown in the error's snippet
// as its picture, never written raw to the terminal (a NUL, a lone carriage
// return that moves the cursor, an escape), and the error says what it is.
func TestControlCharactersInSnippetsAreShownAndNamed(t *testing.T) {
	for name, c := range map[string]struct{ text, shown, said string }{
		"nul":    {"\x00\x00\x00", "1: ␀␀␀", "It is a NUL byte (U+0000)"},
		"cr":     {"stage \"command\" \"a\" {\r  run = [\"true\"]\r}\r", "␍  run", "It is a carriage return (U+000D) that no line feed follows"},
		"escape": {"stage \"command\" \"a\" {\n  run = [\"a\"]\x1b\n}\n", `run = ["a"]␛`, "It is the control character U+001B"},
	} {
		t.Run(name, func(t *testing.T) {
			root := cliWorkspace(t, map[string]string{"p.hcl": c.text})
			r := runCLI(t, "--chdir", root, "validate", "p.hcl")
			assert.Equal(t, exitBadInput, r.code, r.stderr)
			assert.NotRegexp(t, "[\x00\r\x1b]", r.stderr)
			assert.Contains(t, r.stderr, c.shown)
			assert.Contains(t, strings.Join(strings.Fields(r.stderr), " "), c.said)
		})
	}
}

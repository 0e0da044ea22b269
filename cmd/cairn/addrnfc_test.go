package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Names as macOS spells them (NFD: "e" and a combining U+0301) and as
// cairn reads pipeline text (NFC: "\u00e9").
const (
	cafeNFD = "cafe\u0301"
	cafeNFC = "caf\u00e9"
)

// Addresses typed in NFD on the command line name the plan's nodes, whose
// keys are NFC: --target, --replace, show.
func TestNFDAddressesOnCommandLine(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `stage "command" "s" {
  for_each = toset(["caf\u00e9", "x"])
  run      = ["echo", each.key]
}
`})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl", "--no-color", "--target", `s["`+cafeNFD+`"]`)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout+r.stderr, "1 ran")

	r = runCLI(t, "--chdir", root, "show", `stage.s["`+cafeNFD+`"]`)
	assert.Equal(t, exitOK, r.code, r.stdout+r.stderr)

	r = runCLI(t, "--chdir", root, "plan", "p.hcl", "--no-color", "--replace", `s["`+cafeNFD+`"]`)
	assert.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Regexp(t, `stage\.s\["`+cafeNFC+`"\]\s+run: replace requested`, r.stdout)
}

package dsl

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The warning for text that is not NFC names its first place, counting
// columns as diagnostics do, past NFC text and comments; none for NFC.
func TestNFCWarning(t *testing.T) {
	for src, want := range map[string]string{
		"a = \"caf\u00e9\"\n":   "",
		"# cafe\u0301\na = 1\n": "",
		"a = \"caf\u00e9\"\nb = <<EOT\nok\n\u00e9 cafe\u0301\nEOT\n": "p.hcl:4:6",
		"/* cafe\u0301 */ a = \"x\u00e9\u00e9 cafe\u0301\"\n":        "p.hcl:1:24",
	} {
		w := nfcWarning([]byte(src), "p.hcl")
		if want == "" {
			assert.Nil(t, w, src)
			continue
		}
		require.NotNil(t, w, src)
		assert.Equal(t, want, Pos(*w.Subject), src)
		assert.Contains(t, w.Detail, `The text "e\u0301" here`)
	}
}

// A missing path whose name exists on disk in NFD is named so; one that
// exists, or has no other spelling, is not.
func TestSpellingHint(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "Re\u0301sultats", "cafe\u0301"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "Re\u0301sultats", "cafe\u0301", "a.txt"), nil, 0o644))
	assert.Contains(t, SpellingHint(root, "R\u00e9sultats/caf\u00e9/a.txt"), `"Re\u0301sultats/cafe\u0301/a.txt" exists`)
	assert.Contains(t, SpellingHint(root, filepath.Join(root, "R\u00e9sultats")), `"`+root+`/Re\u0301sultats" exists`)
	assert.Empty(t, SpellingHint(root, "Re\u0301sultats/cafe\u0301/a.txt"))
	assert.Empty(t, SpellingHint(root, "R\u00e9sultats/caf\u00e9/b.txt"))
	assert.Empty(t, SpellingHint(root, "other"))
}

// Names are read as NFC, as strings are: a stage, variable or local named
// in NFD is the one named in NFC (two such are one name given twice), a
// reference written in NFD names it, and so does --var with the name in
// NFD.
func TestNamesAreReadAsNFC(t *testing.T) {
	nfc, nfd := "caf\u00e9", "cafe\u0301"
	dir := t.TempDir()
	load := func(src string) (*Config, hcl.Diagnostics) {
		p := filepath.Join(dir, "p.hcl")
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
		return NewLoader(nil).Load(p)
	}
	for _, block := range []string{
		`stage "command" "%s" {` + "\n  run = [\"true\"]\n}\n",
		`variable "%s" {` + "\n  default = 1\n}\n",
		"locals {\n  %s = 1\n}\n",
	} {
		_, diags := load(fmt.Sprintf(block, nfc) + fmt.Sprintf(block, nfd))
		require.True(t, diags.HasErrors(), block)
		assert.True(t, slices.ContainsFunc(diags.Errs(), func(e error) bool { return strings.Contains(e.Error(), "Duplicate") }), "%s: %v", block, diags.Errs())
	}
	cfg, diags := load(`stage "command" "` + nfc + `" {}` + "\n" +
		"stage \"command\" \"b\" {\n  after = [stage." + nfd + "]\n}\n" +
		"variable \"" + nfd + "\" {\n  type = string\n}\n")
	require.False(t, diags.HasErrors(), "%v", diags.Errs())
	require.Contains(t, cfg.StageMap, nfc)
	require.Contains(t, cfg.Variables, nfc)
	require.Len(t, cfg.StageMap["b"].After, 1)
	refs, _ := References(cfg.StageMap["b"].After[0])
	require.Len(t, refs, 1)
	assert.Equal(t, nfc, refs[0].Name)
	vals, diags := cfg.ResolveVariables(VarInputs{Args: []VarArg{{Value: nfd + "=x"}}}, NewLoader(nil).Parser)
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, "x", vals[nfc].AsString())
}

package dsl

import (
	"os"
	"path/filepath"
	"testing"

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

package dsl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigPipeline is a pipeline file well over splitParseMin, with comments,
// templates, heredoc-free strings holding braces, and blank lines.
func bigPipeline(stages int) string {
	var b strings.Builder
	b.WriteString("# a generated pipeline\npipeline \"big\" {\n  description = \"}{ not a brace\"\n}\n\nlocals {\n  keys = [\"a\", \"b\"]\n}\n")
	for i := 0; i < stages; i++ {
		fmt.Fprintf(&b, "\n// stage %d\nstage \"command\" \"s%d\" {\n  for_each = local.keys\n  run      = [\"sh\", \"-c\", \"echo ${each.key} } > out/s%d_${each.key}\"]\n  outputs  = [\"out/s%d_${each.key}\"]\n", i, i, i, i)
		if i > 0 {
			fmt.Fprintf(&b, "  after    = [stage.s%d[each.key]]\n", i-1)
		}
		b.WriteString("  env = {\n    A = \"1\"\n    B = upper(\"x\")\n  }\n}\n")
	}
	return b.String()
}

// Parsing in pieces gives the very syntax tree one parse of the whole file
// gives, and the same context for diagnostics.
func TestParseInPiecesMatchesWholeParse(t *testing.T) {
	src := []byte(bigPipeline(2000))
	require.Greater(t, len(src), 4*splitPieceMin)
	whole, diags := hclsyntax.ParseConfig(src, "big.hcl", hcl.InitialPos)
	require.Empty(t, diags)
	split, splitDiags, ok := parseInPieces(src, "big.hcl")
	require.True(t, ok)
	require.Empty(t, splitDiags)
	assert.Equal(t, whole.Body, split.Body)
	assert.Equal(t, whole.Bytes, split.Bytes)
	type contexter interface{ ContextString(int) string }
	wn, sn := whole.Nav.(contexter), split.Nav.(contexter)
	for _, off := range []int{0, len(src) / 3, len(src) / 2, len(src) - 10} {
		assert.Equal(t, wn.ContextString(off), sn.ContextString(off), "context at %d", off)
	}
	blocks := split.Body.(*hclsyntax.Body).Blocks
	inside := blocks[len(blocks)*3/4].Body.SrcRange.Start.Byte + 3
	assert.Equal(t, `stage "command" "s1499"`, sn.ContextString(inside))
	assert.Equal(t, wn.ContextString(inside), sn.ContextString(inside))
}

// A file with a top-level attribute or a heredoc is parsed whole; one with
// a syntax error gets the very diagnostics of a whole parse.
func TestParseInPiecesFallsBack(t *testing.T) {
	for name, tail := range map[string]string{
		"syntax error":        "stage \"command\" \"bad\" {\n  run = [\n}\n",
		"syntax error inside": "stage \"command\" \"bad\" {\n  run = [\"a\" \"b\"]\n  x = = 1\n}\n" + bigPipeline(200),
		"unclosed bracket":    "locals {\n  t = [1, 2\n}\n" + bigPipeline(200),
		"top-level attribute": "x = 1\n",
		"heredoc":             "locals {\n  t = <<EOT\nhello\nEOT\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			src := []byte(bigPipeline(1500) + tail)
			_, _, ok := parseInPieces(src, "big.hcl")
			assert.Equal(t, name == "syntax error inside", ok, "parsed in pieces")
			p := hclparse.NewParser()
			f, diags := parseConfig(p, src, "big.hcl")
			_, want := hclsyntax.ParseConfig(src, "big.hcl", hcl.InitialPos)
			assert.Equal(t, want, diags)
			assert.Same(t, f, p.Files()["big.hcl"])
		})
	}
}

package dsl

import (
	"fmt"
	"os"
	"path/filepath"
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

// bigLocals is a pipeline file whose locals block is well over
// splitBlockMin: n locals of nested lists, with comments (holding braces
// and "="), strings holding braces and templates, objects and blank lines
// among them.
func bigLocals(n int) string {
	var b strings.Builder
	b.WriteString("pipeline \"big\" {}\n\n# the data\nlocals { # } = {\n")
	for i := 0; i < n; i++ {
		switch i % 7 {
		case 0:
			fmt.Fprintf(&b, "  v%d = [[%d, %d, [1, 2, 3]], [4, 5, 6]]\n", i, i, i*7)
		case 1:
			fmt.Fprintf(&b, "  v%d = \"}{ ${\"}\"} %%{ if true }x%%{ endif }\" # { = }\n", i)
		case 2:
			fmt.Fprintf(&b, "  // v%d = {\n  v%d = {\n    a = local.v%d\n    b = [\n      1,\n    ]\n  }\n", i, i, i-1)
		case 3:
			fmt.Fprintf(&b, "\n  v%d = upper(\"x\") // }\n", i)
		default:
			fmt.Fprintf(&b, "  v%d = [%d, 2.5, -3, true, null, \"s\"]\n", i, i)
		}
	}
	b.WriteString("  last = 1 # the last\n}\n\nstage \"command\" \"s\" {\n  run = [\"echo\", \"${length(local.v0)}\"]\n}\n")
	return b.String()
}

// smallPieces makes the sizes for parsing in pieces an eighth of what
// they are, for the rest of the test: a file an eighth the size is cut
// the same way, into as many pieces, at an eighth of the parsing.
func smallPieces(t *testing.T) {
	a, b, c := splitParseMin, splitPieceMin, splitBlockMin
	t.Cleanup(func() { splitParseMin, splitPieceMin, splitBlockMin = a, b, c })
	splitParseMin, splitPieceMin, splitBlockMin = a/8, b/8, c/8
}

// wholeParse parses src whole, as parseConfig hands a file on (settled).
func wholeParse(src []byte) (*hcl.File, hcl.Diagnostics) {
	f, diags := hclsyntax.ParseConfig(src, "big.hcl", hcl.InitialPos)
	settleFile(f)
	return f, diags
}

type contexter interface{ ContextString(int) string }

// requireSameParse parses src whole and in pieces: both without a
// diagnostic, the same syntax tree, and the same context for diagnostics
// at offs. It returns the whole parse and the navigation of the file
// parsed in pieces.
func requireSameParse(t *testing.T, src []byte, offs ...int) (*hcl.File, contexter) {
	t.Helper()
	whole, diags := wholeParse(src)
	require.Empty(t, diags)
	split, splitDiags, ok := parseInPieces(src, "big.hcl")
	require.True(t, ok)
	require.Empty(t, splitDiags)
	assert.Equal(t, whole.Body, split.Body)
	assert.Equal(t, whole.Bytes, split.Bytes)
	wn, sn := whole.Nav.(contexter), split.Nav.(contexter)
	for _, off := range offs {
		assert.Equal(t, wn.ContextString(off), sn.ContextString(off), "context at %d", off)
	}
	return whole, sn
}

// Parsing in pieces gives the very syntax tree one parse of the whole file
// gives, and the same context for diagnostics.
func TestParseInPiecesMatchesWholeParse(t *testing.T) {
	src := []byte(bigPipeline(2000))
	require.Greater(t, len(src), 4*splitPieceMin)
	inside := strings.Index(string(src), `"s1499" {`) + 12
	_, sn := requireSameParse(t, src, 0, len(src)/3, len(src)/2, len(src)-10, inside)
	assert.Equal(t, `stage "command" "s1499"`, sn.ContextString(inside))
}

// A large block is parsed in pieces too, cut between its items, and
// joined back into the very block a whole parse gives, with the same
// context for diagnostics.
func TestParseInPiecesCutsLargeBlock(t *testing.T) {
	src := []byte(bigLocals(3000))
	require.Greater(t, len(src), 4*splitBlockMin)
	whole, sn := requireSameParse(t, src, 0, 40, len(src)/3, len(src)/2, len(src)-10)
	wb := whole.Body.(*hclsyntax.Body)
	require.Len(t, wb.Blocks, 3)
	assert.Len(t, wb.Blocks[1].Body.Attributes, 3001)
	assert.Equal(t, "locals", sn.ContextString(len(src)/2))
	// As parseConfig gives it, and with a block as the file's first and
	// last item, without a newline at the end.
	body := bigLocals(3000)
	body = body[strings.Index(body, "locals"):strings.Index(body, "\n\nstage")]
	for i, src := range [][]byte{src, []byte(body), []byte("  " + body + "\n\n")} {
		want := whole // src's, parsed whole above
		if i > 0 {
			var diags hcl.Diagnostics
			want, diags = wholeParse(src)
			require.Empty(t, diags)
		}
		f, diags := parseConfig(hclparse.NewParser(), src, "big.hcl")
		require.Empty(t, diags)
		assert.Equal(t, want.Body, f.Body)
	}
}

// A file with a top-level attribute or a heredoc is parsed whole; one with
// syntax errors gets the very diagnostics of a whole parse, even where the
// first error quiets a later one.
func TestParseInPiecesFallsBack(t *testing.T) {
	smallPieces(t)
	for name, tail := range map[string]string{
		"syntax error":        "stage \"command\" \"bad\" {\n  run = [\n}\n",
		"syntax error inside": "stage \"command\" \"bad\" {\n  run = [\"a\" \"b\"]\n  x = = 1\n}\n" + bigPipeline(25),
		// The first error quiets the second in a whole parse.
		"errors in two pieces": "stage \"command\" \"bad\" {\n  run = [1 2]\n}\n" + bigPipeline(190) + "stage \"command\" \"t\" {\n  run = !\n}\n",
		"unclosed bracket":     "locals {\n  t = [1, 2\n}\n" + bigPipeline(25),
		"top-level attribute":  "x = 1\n",
		"heredoc":              "locals {\n  t = <<EOT\nhello\nEOT\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			src := []byte(bigPipeline(190) + tail)
			require.Greater(t, len(src), 40*splitPieceMin)
			_, _, ok := parseInPieces(src, "big.hcl")
			assert.Equal(t, name == "syntax error inside" || name == "errors in two pieces", ok, "parsed in pieces")
			p := hclparse.NewParser()
			f, diags := parseConfig(p, src, "big.hcl")
			whole, want := wholeParse(src)
			assert.Equal(t, want, diags)
			assert.Equal(t, whole.Body, f.Body)
			assert.Same(t, f, p.Files()["big.hcl"])
		})
	}
}

// Whatever goes wrong in a large block, or in several pieces, the
// diagnostics (and the syntax tree) are those of a parse of the whole
// file.
func TestParseInPiecesErrorsInLargeBlock(t *testing.T) {
	smallPieces(t)
	big := bigLocals(375)
	at := func(frac float64) int { // the start of a line inside the block
		i := int(float64(len(big)) * frac)
		return strings.Index(big[i:], "\n  v") + i + 1
	}
	insert := func(frac float64, text string) string {
		i := at(frac)
		return big[:i] + text + big[i:]
	}
	// Where a piece of the block starts, past its middle, to put an error
	// right at a cut.
	_, inner, ok := pieceCuts([]byte(big))
	require.True(t, ok)
	cut, runAt := 0, inner[0]
	for _, c := range inner[1:] {
		if c-runAt >= splitPieceMin {
			runAt = c
			if c > len(big)/2 {
				cut = c
				break
			}
		}
	}
	require.NotZero(t, cut)
	roots, _, _ := pieceCuts([]byte(big))
	pieces, _ := cutPieces([]byte(big), roots, inner, "big.hcl")
	require.Greater(t, len(pieces), 15, "pieces")
	for name, tc := range map[string]struct {
		src    string
		pieces bool // parsed in pieces, not whole
		valid  bool
	}{
		"syntax error inside":        {insert(0.5, "  x = = 1\n"), true, false},
		"missing bracket inside":     {insert(0.5, "  x = [1, 2\n"), false, false},
		"error at the first item":    {strings.Replace(big, "locals { # } = {\n", "locals { # } = {\n  = 2\n", 1), true, false},
		"error at a cut":             {big[:cut] + "  x = \n" + big[cut:], true, false},
		"error just before a cut":    {big[:cut-1] + " +" + big[cut-1:], true, false},
		"block closed early at cut":  {big[:cut] + "}\n" + big[cut:], false, false},
		"errors in two pieces":       {insert(0.2, "  x = [1 2]\n") + "stage \"command\" \"t\" {\n  run = !\n}\n", true, false},
		"two errors in the block":    {insert(0.8, "  y = ,\n")[:at(0.3)] + "  ! = 1\n" + insert(0.8, "  y = ,\n")[at(0.3):], true, false},
		"argument set twice":         {insert(0.7, "  v10 = 1\n"), true, false},
		"set twice in one piece":     {insert(0.7, "  w = 1\n  w = 2\n"), true, false},
		"error in the last line":     {strings.Replace(big, "  last = 1 # the last\n}", "  last = 1 }", 1), true, false},
		"unclosed at the end":        {big[:strings.Index(big, "  last = 1")], true, false},
		"comma after argument":       {insert(0.4, "  z = 1,\n"), true, false},
		"quoted argument name":       {insert(0.4, "  \"z\" = 1\n"), true, false},
		"nested block":               {insert(0.4, "  inner {\n    a = 1\n  }\n"), true, true},
		"error after a nested block": {insert(0.3, "  inner {\n    a = 1\n  }\n")[:at(0.6)] + "  x = [1 2]\n" + insert(0.3, "  inner {\n    a = 1\n  }\n")[at(0.6):], true, false},
		"error after UTF-8":          {insert(0.5, "  u = \"h\u00e9llo w\u00f6rld \u2603\" # \u00e9\n  x = = 1\n"), true, false},
		"set again after an error":   {insert(0.6, "  x = = 1\n  v10 = 2\n"), true, false},
		"error then set again":       {insert(0.6, "  x = [1 2]\n  x = 2\n"), true, false},
		"heredoc":                    {insert(0.4, "  h = <<EOT\n  }\nEOT\n"), false, true},
		"block comment":              {insert(0.4, "  /* } */\n"), false, true},
		"top-level attribute":        {big + "x = {\n  a = 1\n}\n", false, true},
		"top-level object":           {"x = {\n" + strings.Repeat("  a1 = [1, 2, 3, 4, 5, 6]\n", 500) + "}\n" + big, false, true},
	} {
		t.Run(name, func(t *testing.T) {
			src := []byte(tc.src)
			whole, want := wholeParse(src)
			split, diags, ok := parseInPieces(src, "big.hcl")
			assert.Equal(t, tc.pieces, ok, "parsed in pieces")
			if ok {
				assert.Equal(t, want, diags)
				assert.Equal(t, whole.Body, split.Body)
			}
			f, diags := parseConfig(hclparse.NewParser(), src, "big.hcl")
			assert.Equal(t, want, diags)
			assert.Equal(t, whole.Body, f.Body)
			assert.Equal(t, tc.valid, len(want) == 0, "valid")
			t.Logf("%d diagnostics: %v", len(want), want)
		})
	}
}

// FuzzParseInPieces cuts every input at every place it can and checks the
// pieces against a parse of the whole input: the same diagnostics and the
// same syntax tree. Run it with
//
//	make fuzz                      # or:
//	go test -run '^$' -fuzz '^FuzzParseInPieces$' -fuzztime 30s ./dsl
func FuzzParseInPieces(f *testing.F) {
	for _, s := range []string{
		bigLocals(12),
		bigPipeline(3),
		"locals {\n  a = 1\n  b = 2\n}\n",
		"locals {\n  a = 1\n  a = 2\n}\n",
		"locals {\n  a = [1,\n 2]\n  b = \"}\"\n}\nstage \"x\" \"y\" {\n  run = [\n}\n",
		"locals {\n  a = 1 # }\n  b = {\n    c = 2\n  }\n  // {\n}\n",
		"locals {\n  a = = 1\n  b = 2\n}\nlocals {\n  c = [1 2]\n}\n",
		"locals {\n  t = <<EOT\nhello }\nEOT\n}\n",
		"x = 1\nlocals {\n  a = 1\n}\n",
		"a {\n  b {\n    c = 1\n  }\n  d = 2\n} e {\n}\n",
		"locals {\n  a = 1\n  }\n  b = 2\n}\n",
		"locals {\n  a = \"\u00e9\" # c\n  b = = 1\n  c = 2\n}\n",
		"locals {\n  a = 1\n  b {\n  }\n  c = [1 2]\n  a = 3\n}\n",
		"locals {\n  a = 1\n  // }\n  b = (1\n  )\n  c = 2 }\n",
	} {
		f.Add([]byte(s))
	}
	defer func(a, b int) { splitPieceMin, splitBlockMin = a, b }(splitPieceMin, splitBlockMin)
	splitPieceMin, splitBlockMin = 1, 1
	f.Fuzz(func(t *testing.T, src []byte) {
		if d := CheckNesting(src, "big.hcl"); d.HasErrors() {
			return // refused before parsing
		}
		whole, want := wholeParse(src)
		split, diags, ok := parseInPieces(src, "big.hcl")
		if !ok {
			return
		}
		require.Equal(t, want, diags)
		require.Equal(t, whole.Body, split.Body)
		require.Equal(t, whole.Bytes, split.Bytes)
	})
}

// The constant local values of a settled file are their values already,
// with the ranges of their expressions; the others are left as they were.
func TestSettledLocalsKeepTheirValues(t *testing.T) {
	src := []byte(bigLocals(60) + "locals {\n  h = <<EOT\n  a }\nEOT\n  n = 1e400\n  e = []\n}\n")
	raw, diags := hclsyntax.ParseConfig(src, "big.hcl", hcl.InitialPos)
	require.Empty(t, diags)
	boundFile(raw)
	settled, diags := wholeParse(src)
	require.Empty(t, diags)
	n := 0
	for i, blk := range raw.Body.(*hclsyntax.Body).Blocks {
		if blk.Type != "locals" {
			continue
		}
		got := settled.Body.(*hclsyntax.Body).Blocks[i].Body.Attributes
		for name, a := range blk.Body.Attributes {
			e := got[name].Expr
			if _, ok := e.(*evaluated); !ok {
				assert.Equal(t, a.Expr, e, name)
				assert.True(t, name == "n" || !constant(a.Expr), "%s is constant", name)
				continue
			}
			n++
			want, diags := a.Expr.Value(nil)
			require.Empty(t, diags)
			v, diags := e.Value(&hcl.EvalContext{})
			require.Empty(t, diags)
			assert.True(t, want.RawEquals(v), name)
			assert.Equal(t, a.Expr.Range(), e.Range(), name)
			assert.Equal(t, a.Expr.StartRange(), e.StartRange(), name)
			assert.Empty(t, e.Variables(), name)
		}
	}
	assert.Equal(t, 36, n) // v0, v7, ...; v4, v5, v6, v11, ...; last, h, e
}

// A large pipeline file is scanned once, for its nesting and for its
// cuts, before it is parsed in pieces; a too deep one in a large file is
// still refused before parsing, from the file Load reads.
func TestLoadScansLargeFileOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.hcl")
	src := bigPipeline(200)
	require.Greater(t, len(src), splitParseMin)
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	before := nestingScans.Load()
	cfg, _ := NewLoader(nil).Load(path) // no kinds: their arguments are refused
	require.NotNil(t, cfg)
	assert.Len(t, cfg.Stages, 200)
	assert.Equal(t, int64(1), nestingScans.Load()-before, "byte scans of the file")

	deep := src + "locals {\n  x = " + strings.Repeat("(", MaxNesting+1) + "1" + strings.Repeat(")", MaxNesting+1) + "\n}\n"
	require.NoError(t, os.WriteFile(path, []byte(deep), 0o644))
	cfg, diags := NewLoader(nil).Load(path)
	assert.Nil(t, cfg)
	require.True(t, diags.HasErrors())
	assert.Equal(t, "Expression nested too deeply", diags[0].Summary)
	assert.Equal(t, strings.Count(src, "\n")+2, diags[0].Subject.Start.Line)
}

// Cutting a file of many small blocks into pieces allocates the pieces
// and their list, not the inner cuts of each block again.
func TestCutPiecesAllocs(t *testing.T) {
	src := []byte(chainPipeline(1000))
	c := scanCuts(src)
	require.True(t, c.ok)
	pieces, _ := cutPieces(src, c.root, c.inner, "chain.hcl")
	allocs := testing.AllocsPerRun(5, func() { cutPieces(src, c.root, c.inner, "chain.hcl") })
	if max := float64(2*len(pieces) + 40); allocs > max {
		t.Errorf("cutting %d pieces made %.0f allocations, want at most %.0f", len(pieces), allocs, max)
	}
}

package dsl

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkFastParse parses src with fastParse and, where it takes src, with
// hclsyntax: the same tree once bound (as every parsed piece is), and no
// diagnostic. It says whether fastParse took src.
func checkFastParse(t testing.TB, src []byte, start hcl.Pos) bool {
	t.Helper()
	fast := fastParse(src, "f.hcl", start)
	if fast == nil {
		return false
	}
	f, diags := hclsyntax.ParseConfig(src, "f.hcl", start)
	require.Empty(t, diags, "fastParse took an input hclsyntax refuses:\n%s", src)
	want := f.Body.(*hclsyntax.Body)
	boundBody(want)
	boundBody(fast)
	require.Equal(t, want, fast, "input:\n%s", src)
	return true
}

// chainPipeline is a chain of n distinct stages as bench/gen writes it.
func chainPipeline(n int) string {
	var b strings.Builder
	b.WriteString("pipeline \"bench\" {\n  description = \"generated benchmark graph (chain)\"\n}\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\nstage \"command\" \"c%d\" {\n  run     = [\"sh\", \"-c\", \"echo c%d > out/c%d\"]\n  outputs = [\"out/c%d\"]\n", i, i, i, i)
		if i > 0 {
			fmt.Fprintf(&b, "  after   = [stage.c%d]\n", i-1)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// Inputs in the subset are taken, and give hclsyntax's tree exactly,
// wherever in a file they start.
func TestFastParseMatchesHCL(t *testing.T) {
	for name, src := range map[string]string{
		"empty":          "",
		"newlines":       "\n\n\n",
		"spaces":         "   ",
		"one attribute":  "a = 1",
		"attributes":     "a = 1\nb = \"x\"\n  c   =   true\nd = false\ne = null\nf = 0070\ng = 123456789012345678901234567890\n",
		"strings":        "a = \"\"\nb = \" spaces  and 'quotes' ~!@#^&*()_+-={}[]|;:<>,.?/`\"\n",
		"traversals":     "a = x\nb = stage.c0\nc = var.a.b-c.d_e\nd = true-x\ne = for\nf = null_x\n",
		"tuples":         "a = []\nb = [1]\nc = [1, \"a\", x.y, true,]\nd = [\n  1,\n\n  2\n  ,\n  3,\n]\ne = [[], [[1]], [x, [y.z]]]\nf = [ 1 , 2 ]\n",
		"tuple of for_x": "a = [for_x, fory]\n",
		"blocks":         "pipeline \"p\" {\n}\nstage \"command\" \"a\" {\n  run = [\"sh\"]\n  inner {\n    x = 1\n  }\n}\nlocals {}\nb x y \"z\" {\n\n}\nc \"\"   {   \n}   \n",
		"blank first":    "\n\nstage \"a\" \"b\" {\n  x = 1\n}",
		"spaced first":   "   stage \"a\" \"b\" {\n  x = 1\n}\n",
		"chain":          chainPipeline(30),
	} {
		t.Run(name, func(t *testing.T) {
			for _, start := range []hcl.Pos{hcl.InitialPos, {Line: 7, Column: 1, Byte: 300}} {
				assert.True(t, checkFastParse(t, []byte(src), start), "taken")
			}
		})
	}
}

// Inputs outside the subset, with an error or not, are left to hclsyntax.
func TestFastParseLeavesTheRest(t *testing.T) {
	for _, src := range []string{
		"a = 1 # comment\n", "// c\na = 1\n", "/* c */\n", "a\t= 1\n", "a = 1\r\n", "a = \"\u00e9\"\n",
		"a = \"${x}\"\n", "a = \"%{ if true }x%{ endif }\"\n", "a = \"\\n\"\n", "a = \"$\"\n",
		"a = 1.5\n", "a = 1e3\n", "a = -1\n", "a = 1 + 2\n", "a = x ? 1 : 2\n", "a = f(1)\n", "a = x::y(1)\n",
		"a = x[0]\n", "a = x.0\n", "a = x.*\n", "a = x .y\n", "a = (1)\n", "a = {}\n", "a = <<EOT\nx\nEOT\n",
		"a = [for x in y : x]\n", "a = [\n  for x in y : x]\n", "a = true.x\n", "a = null[0]\n",
		// errors
		"a = 1\na = 2\n", "a = 1 }\n", "a = 1, b = 2\n", "a = [1 2]\n", "a = [1,\n", "a =\n", "a == 1\n",
		"a => 1\n", "x {\n", "x {\n  a = 1\n", "x { a = 1 }\n", "x {\n} y {\n}\n", "x\n{\n}\n", "x = y = 1\n",
		"}\n", "\"a\" = 1\n", "a = \"x\n\"\n", "a = \"unclosed\n", "x \"a\" = 1\n", "a = 1abc\n", "1 = 2\n",
		"x \"${y}\" {\n}\n", "a = [1,,2]\n", "a = [,]\n", "\x00", "a = 1\x00\n", "\x00\n0", "a = [1\x00]\n",
	} {
		assert.Nil(t, fastParse([]byte(src), "f.hcl", hcl.InitialPos), "%q", src)
	}
	assert.Nil(t, fastParse([]byte("a = 1\n"), "f.hcl", hcl.Pos{Line: 1, Column: 3, Byte: 2}), "a piece not at a line's start")
}

// Every pipeline file of the repository that fastParse takes gives
// hclsyntax's tree; the generated chain benchmark is taken.
func TestFastParseRepositoryFiles(t *testing.T) {
	var files []string
	for _, dir := range []string{"../pipelines", "../testdata", "../docs", "testdata"} {
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".hcl") {
				files = append(files, path)
			}
			return nil
		})
	}
	require.NotEmpty(t, files)
	// Cut into pieces as small as can be, so that the pieces with no
	// comment are parsed by fastParse: the file is the same.
	defer func(a, b, c int) { splitParseMin, splitPieceMin, splitBlockMin = a, b, c }(splitParseMin, splitPieceMin, splitBlockMin)
	splitParseMin, splitPieceMin, splitBlockMin = 1, 1, 1
	taken := 0
	for _, path := range files {
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		if checkFastParse(t, src, hcl.InitialPos) {
			taken++
		}
		if CheckNesting(src, path).HasErrors() {
			continue
		}
		whole, want := wholeParse(src)
		split, diags, ok := parseInPieces(src, "big.hcl")
		if ok {
			require.Equal(t, want, diags, path)
			require.Equal(t, whole.Body, split.Body, path)
		}
	}
	t.Logf("fastParse took %d of %d files whole", taken, len(files))
	require.True(t, checkFastParse(t, []byte(chainPipeline(200)), hcl.InitialPos))
}

// randSubset writes a random body, mostly in the subset and spaced at
// random.
type randSubset struct {
	r *rand.Rand
	b strings.Builder
}

func (g *randSubset) sp() {
	for n := g.r.Intn(4) - 1; n > 0; n-- {
		g.b.WriteByte(' ')
	}
}

func (g *randSubset) ident() {
	names := []string{"a", "b", "stage", "x_1", "for", "true", "null", "a-b", "if", "each", "c9"}
	g.b.WriteString(names[g.r.Intn(len(names))])
}

func (g *randSubset) quoted() {
	g.b.WriteByte('"')
	chars := "ab {}[]=,.-_1 #/'"
	for n := g.r.Intn(6); n > 0; n-- {
		g.b.WriteByte(chars[g.r.Intn(len(chars))])
	}
	g.b.WriteByte('"')
}

func (g *randSubset) expr(depth int) {
	switch k := g.r.Intn(6); {
	case k == 0:
		g.quoted()
	case k == 1:
		fmt.Fprintf(&g.b, "%d", g.r.Intn(1000))
	case k == 2 || depth > 2:
		g.ident()
		for n := g.r.Intn(3); n > 0; n-- {
			g.b.WriteByte('.')
			g.ident()
		}
	default:
		g.b.WriteByte('[')
		n := g.r.Intn(4)
		for i := 0; i < n; i++ {
			if g.r.Intn(3) == 0 {
				g.b.WriteByte('\n')
			}
			g.sp()
			g.expr(depth + 1)
			g.sp()
			if i < n-1 || g.r.Intn(2) == 0 {
				g.b.WriteByte(',')
			}
		}
		if g.r.Intn(3) == 0 {
			g.b.WriteByte('\n')
		}
		g.sp()
		g.b.WriteByte(']')
	}
}

func (g *randSubset) body(depth int) {
	for n := g.r.Intn(5); n > 0; n-- {
		g.sp()
		switch k := g.r.Intn(5); {
		case k == 0:
		case k <= 2 || depth > 2:
			g.ident()
			g.sp()
			g.b.WriteByte('=')
			g.sp()
			g.expr(0)
		default:
			g.ident()
			for l := g.r.Intn(3); l > 0; l-- {
				g.b.WriteByte(' ')
				if g.r.Intn(2) == 0 {
					g.quoted()
				} else {
					g.ident()
				}
			}
			g.sp()
			g.b.WriteByte('{')
			if g.r.Intn(4) > 0 {
				g.b.WriteByte('\n')
				g.body(depth + 1)
			}
			g.sp()
			g.b.WriteByte('}')
		}
		g.sp()
		g.b.WriteByte('\n')
	}
}

// Random bodies of the subset, and random edits of them (that leave the
// subset or break the syntax), are either left to hclsyntax or give its
// tree.
func TestFastParseRandom(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 4000
	}
	r := rand.New(rand.NewSource(1))
	taken := 0
	edits := "\"{}[],.=\n #$\\%-1a_\t()"
	for i := 0; i < n; i++ {
		g := &randSubset{r: r}
		g.body(0)
		src := []byte(g.b.String())
		if i%2 == 1 && len(src) > 0 {
			for e := r.Intn(3) + 1; e > 0 && len(src) > 0; e-- {
				at := r.Intn(len(src))
				c := edits[r.Intn(len(edits))]
				switch r.Intn(3) {
				case 0:
					src[at] = c
				case 1:
					src = append(src[:at], append([]byte{c}, src[at:]...)...)
				default:
					src = append(src[:at], src[at+1:]...)
				}
			}
		}
		if checkFastParse(t, src, hcl.Pos{Line: 1 + i%5, Column: 1, Byte: i % 97}) {
			taken++
		}
	}
	t.Logf("fastParse took %d of %d inputs", taken, n)
	assert.Greater(t, taken, n/3, "most of the unedited inputs are in the subset")
}

// Whatever the input, fastParse either leaves it to hclsyntax or gives
// hclsyntax's tree. Run it with
//
//	make fuzz                      # or:
//	go test -run '^$' -fuzz '^FuzzFastParse$' -fuzztime 30s ./dsl
func FuzzFastParse(f *testing.F) {
	f.Add([]byte(chainPipeline(3)))
	f.Add([]byte("a = [1, [x.y], \"s\",\n]\nb \"l\" m {\n  c = null\n}\n"))
	f.Add([]byte("\n  x {}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		checkFastParse(t, src, hcl.InitialPos)
	})
}

// A stage block of a generated chain (kind and name labels, run and
// outputs of quoted strings, after) is parsed and bound in a few
// allocations: the nodes hclsyntax's tree is made of are allocated
// together where they come together, a quoted string's binding with them.
func TestFastParseAllocs(t *testing.T) {
	src := []byte(chainPipeline(100))
	if fastParse(src, "chain.hcl", hcl.InitialPos) == nil {
		t.Fatal("the chain is outside fastParse's subset")
	}
	n := testing.AllocsPerRun(5, func() { boundBody(fastParse(src, "chain.hcl", hcl.InitialPos)) })
	if per := n / 100; per > 35 {
		t.Errorf("fastParse and boundBody: %.1f allocations a stage, want <= 35 (39 with a quoted string's binding on its own, 36 with a traversal grown to its second step)", per)
	}
}

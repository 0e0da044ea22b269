package dsl

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nestedExpr writes an expression nested about depth levels deep out of
// every construct the nesting check counts, with string literals,
// escapes and comments holding brackets that must not count.
func nestedExpr(rng *rand.Rand, b *strings.Builder, depth int) {
	if depth <= 0 {
		b.WriteString([]string{"1", `"s ] ) } , \" $${x} %%{y}"`, "a.b-c", "true", "-2e-3"}[rng.Intn(5)])
		return
	}
	switch rng.Intn(11) {
	case 0:
		b.WriteString("(")
		nestedExpr(rng, b, depth-1)
		b.WriteString(")")
	case 1:
		b.WriteString("[")
		nestedExpr(rng, b, depth-1)
		b.WriteString(`, "]"]`)
	case 2:
		b.WriteString("{ a = ")
		nestedExpr(rng, b, depth-1)
		b.WriteString("\n}")
	case 3:
		b.WriteString(`"x}]\"${`)
		nestedExpr(rng, b, depth-1)
		b.WriteString(`}y$${w}"`)
	case 4:
		b.WriteString(`"%{ if `)
		nestedExpr(rng, b, depth-1)
		b.WriteString(` }a%{ endif }"`)
	case 5:
		b.WriteString("-")
		nestedExpr(rng, b, depth-1)
	case 6:
		b.WriteString("1 == ")
		nestedExpr(rng, b, depth-1)
	case 7:
		b.WriteString("[ # a comment ) ] } \" \n")
		nestedExpr(rng, b, depth-1)
		b.WriteString("]")
	case 8:
		b.WriteString("(\n1 +\n")
		nestedExpr(rng, b, depth-1)
		b.WriteString(")")
	case 9:
		b.WriteString("[2, // ] ) }\n")
		nestedExpr(rng, b, depth-1)
		b.WriteString(", 3]")
	case 10:
		// Operators left pending before a comment at object level.
		b.WriteString("{ b = 1 - - # note ] \n c = ")
		nestedExpr(rng, b, depth-1)
		b.WriteString("\n}")
	}
}

// The byte scan never lets through what the token check refuses: over
// many expressions nested around the limit, CheckNesting answers exactly
// as the token check does.
func TestNestingBoundAgreesWithTokens(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	refused, passed, bounded := 0, 0, 0
	for i := 0; i < 400; i++ {
		var b strings.Builder
		b.WriteString("x = ")
		nestedExpr(rng, &b, MaxNesting/2+rng.Intn(MaxNesting/2+20))
		b.WriteString("\n")
		src := []byte(b.String())
		want := checkNestingTokens(src, "x.hcl")
		got := CheckNesting(src, "x.hcl")
		require.Equal(t, want, got, "%s", src)
		if want.HasErrors() {
			refused++
		} else {
			passed++
		}
		// The bound is a bound: never below the tokens' depth.
		most, _, _ := tokenNesting(src, "x.hcl", math.MaxInt)
		if bound, ok := nestingBound(src); ok {
			require.GreaterOrEqual(t, bound, most, "%s", src)
			bounded++
		}
	}
	assert.Positive(t, refused, "no input was too deep: the test checked one side only")
	assert.Positive(t, passed, "every input was too deep: the test checked one side only")
	assert.Greater(t, bounded, 300, "the byte scan gave up on most inputs")
}

// Ordinary pipeline files take the fast path: no second lexing.
func TestNestingBoundTakesOrdinaryFiles(t *testing.T) {
	files, err := filepath.Glob("../testdata/valid/*.hcl")
	require.NoError(t, err)
	files = append(files, "../pipelines/aime24_batch.hcl")
	checked := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if strings.Contains(string(src), "<<") || strings.Contains(string(src), "/*") {
			continue // heredocs and block comments are left to the lexer
		}
		bound, ok := nestingBound(src)
		assert.True(t, ok, f)
		assert.LessOrEqual(t, bound, MaxNesting, f)
		checked++
	}
	assert.Positive(t, checked)
	src := []byte(`stage "command" "c0_s1" {
  for_each = local.keys
  run      = ["touch", "out/c0_s1_${each.key}"]
  outputs  = ["out/c0_s1_${each.key}"]
  after    = [stage.c0_s0[each.key]]
}
`)
	bound, ok := nestingBound([]byte(strings.Repeat(string(src), 1000)))
	assert.True(t, ok)
	assert.LessOrEqual(t, bound, 8)
}

// Lexed a window at a time, a file nests as it does lexed at once: over
// nested expressions, pipeline files and random soups of the bytes that
// open, close and hide levels (strings, comments, heredocs, non-ASCII and
// invalid UTF-8), with a window of one byte (a cut at every place the byte
// scan offers) against one window for the whole file.
func TestTokenNestingInWindowsIsTheWholeFiles(t *testing.T) {
	srcs := nestingCorpus(rand.New(rand.NewSource(2)))
	defer func(w int) { nestingWindow = w }(nestingWindow)
	cut := 0
	for _, src := range srcs {
		nestingWindow = math.MaxInt
		wantMost, wantOver, wantInvalid := tokenNesting(src, "x.hcl", MaxNesting)
		nestingWindow = 1
		scanNesting(src, nil, func(int) bool { cut++; return true })
		gotMost, gotOver, gotInvalid := tokenNesting(src, "x.hcl", MaxNesting)
		require.Equal(t, wantOver, gotOver, "%q", src)
		require.Equal(t, wantMost, gotMost, "%q", src)
		require.Equal(t, wantInvalid, gotInvalid, "%q", src)
	}
	assert.Greater(t, cut, 100000, "the byte scan offered few cuts: the windows were not tested")
}

// The byte scan skips only bytes it would take without a change: over the
// corpus above, the skipping scan finds the cuts, the lexer's restarts and
// the bound that the scan taking every byte in turn finds, and stops where
// it stops.
func TestNestingScanSkipsOnlyIgnoredBytes(t *testing.T) {
	type scan struct {
		cuts      *fileCuts
		lex       []int
		bound     int
		ok        bool
		stopBound int
		stopOK    bool
	}
	run := func(src []byte) scan {
		var s scan
		s.cuts = scanCuts(src)
		// The cuts as the scan offers them, one append at a time.
		var root, inner []int
		_, _ = scanNesting(src, func(i int, inBlock bool) {
			if inBlock {
				inner = append(inner, i+1)
			} else {
				root = append(root, i+1)
			}
		}, nil)
		if s.cuts.ok {
			require.Equal(t, root, s.cuts.root, "%q", src)
			require.Equal(t, inner, s.cuts.inner, "%q", src)
		}
		s.bound, s.ok = scanNesting(src, nil, func(i int) bool { s.lex = append(s.lex, i); return true })
		// Stopped at the fifth restart offered.
		n := 0
		s.stopBound, s.stopOK = scanNesting(src, nil, func(int) bool { n++; return n < 5 })
		return s
	}
	defer func(q, u [256]bool) { quotedStops, unquotedStops = q, u }(quotedStops, unquotedStops)
	var every [256]bool
	for i := range every {
		every[i] = true
	}
	for _, src := range nestingCorpus(rand.New(rand.NewSource(3))) {
		got := run(src)
		quotedStops, unquotedStops = every, every
		want := run(src)
		quotedStops, unquotedStops = stops(quotedStopBytes), stops(unquotedStopBytes)
		require.Equal(t, want, got, "%q", src)
	}
}

// nestingCorpus is nested expressions, the test pipelines and random soups
// of the bytes that open, close and hide levels.
func nestingCorpus(rng *rand.Rand) [][]byte {
	var srcs [][]byte
	for i := 0; i < 200; i++ {
		var b strings.Builder
		b.WriteString("x = ")
		nestedExpr(rng, &b, MaxNesting/2+rng.Intn(MaxNesting/2+20))
		b.WriteString("\n")
		srcs = append(srcs, []byte(b.String()))
	}
	files, _ := filepath.Glob("../testdata/valid/*.hcl")
	invalid, _ := filepath.Glob("../testdata/invalid/*.hcl")
	for _, f := range append(files, invalid...) {
		if src, err := os.ReadFile(f); err == nil {
			srcs = append(srcs, src)
		}
	}
	pieces := []string{"[", "]", "(", ")", "{", "}", ",", "\n", "\r\n", " ", "\"", "${", "%{", "$${", "\\\"", "#", "//", "/*", "*/",
		"<<EOT\n", "EOT\n", "+", "-", "==", "!", "?", ":", "a", "1", "é", "\u0301", "\xe9", "\xe90", "\xff", "\t"}
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for n := rng.Intn(300); n > 0; n-- {
			if rng.Intn(3) == 0 {
				b.WriteString(strings.Repeat("[", rng.Intn(2*MaxNesting)))
			}
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		srcs = append(srcs, []byte(b.String()))
	}
	return srcs
}

// Refusing a 5 MB file of lists nested 300 deep, too deep at line 2, takes
// the memory of about a window, not of the file's tokens (it took 2 GB).
func TestNestingCheckMemoryIsBoundedOnHugeFiles(t *testing.T) {
	line := "  x = " + strings.Repeat("[", 300) + "1" + strings.Repeat("]", 300) + "\n"
	src := []byte("locals {\n" + strings.Repeat(line, 5<<20/len(line)) + "}\n")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d := CheckNesting(src, "deep.hcl")
	runtime.ReadMemStats(&after)
	require.True(t, d.HasErrors())
	assert.Equal(t, 2, d[0].Subject.Start.Line)
	assert.Equal(t, MaxNesting+6, d[0].Subject.Start.Column)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d MB file: %d KB allocated", len(src)>>20, alloc>>10)
	assert.Less(t, alloc, uint64(8<<20), "allocated %d MB to refuse a %d MB file", alloc>>20, len(src)>>20)

	// Through the loader, as cairn validate reads it.
	runtime.ReadMemStats(&before)
	cfg, diags := NewLoader(nil).ParseSource(src, "deep.hcl")
	runtime.ReadMemStats(&after)
	assert.Nil(t, cfg)
	require.True(t, diags.HasErrors())
	alloc = after.TotalAlloc - before.TotalAlloc
	assert.Less(t, alloc, uint64(8<<20), "the loader allocated %d MB to refuse a %d MB file", alloc>>20, len(src)>>20)

	// Invalid UTF-8 before the first level too deep: the file is refused
	// for its encoding, where the invalid byte is, in as little memory.
	bad := append([]byte("locals {\n  y = \"a\xffb\"\n"), src[len("locals {\n"):]...)
	runtime.ReadMemStats(&before)
	d = CheckNesting(bad, "deep.hcl")
	runtime.ReadMemStats(&after)
	require.True(t, d.HasErrors())
	assert.Equal(t, "Invalid character encoding", d[0].Summary)
	assert.Equal(t, hcl.Pos{Line: 2, Column: 9, Byte: 17}, d[0].Subject.Start)
	alloc = after.TotalAlloc - before.TotalAlloc
	assert.Less(t, alloc, uint64(8<<20), "allocated %d MB to refuse a %d MB file", alloc>>20, len(bad)>>20)
}

// BenchmarkScanCutsChain scans a chain of 10,000 stage blocks, as bench/gen
// -shape chain writes it, once for its cuts and nesting bound (what
// Loader.Load does before parsing it).
func BenchmarkScanCutsChain(b *testing.B) {
	var src strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&src, "\nstage \"command\" \"c%d\" {\n  run     = [\"sh\", \"-c\", \"echo c%d > out/c%d\"]\n  outputs = [\"out/c%d\"]\n  after   = [stage.c%d]\n}\n", i, i, i, i, i-1)
	}
	buf := []byte(src.String())
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		scanCuts(buf)
	}
}

package dsl

import (
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		most, _ := tokenNesting(src, "x.hcl", math.MaxInt)
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

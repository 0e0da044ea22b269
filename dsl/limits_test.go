package dsl

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

func TestCheckNesting(t *testing.T) {
	deep := func(open, close string, n int) string {
		return "x = " + strings.Repeat(open, n) + "1" + strings.Repeat(close, n) + "\n"
	}
	cases := []struct {
		name string
		src  string
		ok   bool
	}{
		{"parentheses within the limit", deep("(", ")", MaxNesting-1), true},
		{"parentheses", deep("(", ")", MaxNesting+1), false},
		{"lists", deep("[", "]", MaxNesting+1), false},
		{"templates", "x = " + strings.Repeat(`"${`, MaxNesting) + "1" + strings.Repeat(`}"`, MaxNesting) + "\n", false},
		{"unary minus", "x = " + strings.Repeat("-", MaxNesting+1) + "1\n", false},
		{"negation", "x = " + strings.Repeat("!", MaxNesting+1) + "true\n", false},
		{"operator chain", "x = 1" + strings.Repeat(" + 1", MaxNesting+1) + "\n", false},
		{"operator chain across lines in parentheses", "x = (1" + strings.Repeat("\n+ 1", MaxNesting+1) + ")\n", false},
		{"many short expressions", strings.Repeat("x = 1 + 2 + (3 * 4)\n", 10*MaxNesting), true},
		{"many list items", "x = [" + strings.Repeat("-1 + 2, ", 10*MaxNesting) + "]\n", true},
		{"many object items", "x = {\n" + strings.Repeat("  a = !true && false\n", 10*MaxNesting) + "}\n", true},
		{"deep but balanced blocks", strings.Repeat("a {\n", 10) + strings.Repeat("}\n", 10), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := CheckNesting([]byte(c.src), "x.hcl")
			if c.ok {
				assert.False(t, d.HasErrors(), "%s", d.Error())
				return
			}
			require.True(t, d.HasErrors())
			assert.Equal(t, "Expression nested too deeply", d[0].Summary)
			require.NotNil(t, d[0].Subject)
			assert.Equal(t, "x.hcl", d[0].Subject.Filename)
		})
	}
}

// Deep enough nesting (a million levels of unary minus in a 1 MiB file)
// overflows the parser's stack and kills the process; the loader refuses
// it before parsing.
func TestLoaderRefusesDeepNestingBeforeParsing(t *testing.T) {
	src := "locals {\n  x = " + strings.Repeat("-", 1<<18) + "1\n}\n"
	cfg, diags := NewLoader(nil).ParseSource([]byte(src), "deep.hcl")
	assert.Nil(t, cfg)
	require.True(t, diags.HasErrors())
	assert.Equal(t, "Expression nested too deeply", diags[0].Summary)
	assert.Equal(t, 2, diags[0].Subject.Start.Line)
}

// evalLocal loads a one-local pipeline and evaluates it.
func evalLocal(t *testing.T, expr string) (cty.Value, hcl.Diagnostics) {
	t.Helper()
	cfg, diags := NewLoader(nil).ParseSource([]byte("locals {\n  x = "+expr+"\n}\n"), filepath.Join(t.TempDir(), "p.hcl"))
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	s := NewScope(map[string]cty.Value{}, t.TempDir(), ".", nil, nil)
	diags = cfg.EvalLocals(s)
	return s.Locals["x"], diags
}

// lowBudget lowers MaxIterations for one test, so that refusing a loop
// costs milliseconds.
func lowBudget(t *testing.T) {
	old := MaxIterations
	MaxIterations = 1 << 14
	t.Cleanup(func() { MaxIterations = old })
}

func TestForIterationBudget(t *testing.T) {
	lowBudget(t)
	v, diags := evalLocal(t, "length(flatten([for a in range(100) : [for b in range(100) : [a, b]]]))")
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.True(t, v.RawEquals(cty.NumberIntVal(20000)), v.GoString())

	_, diags = evalLocal(t, "[for a in range(1000) : [for b in range(1000) : [for c in range(1000) : c]]]")
	require.True(t, diags.HasErrors())
	require.Len(t, diags, 1, "one report, not one per inner loop: %s", diags.Error())
	assert.Equal(t, "Too many iterations", diags[0].Summary)
	assert.Equal(t, 2, diags[0].Subject.Start.Line)

	// The bound is the elements visited: a loop over exactly
	// MaxIterations elements is allowed, one more is not.
	v, diags = evalLocal(t, "length([for p in setproduct(range(128), range(128)) : p])")
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.True(t, v.RawEquals(cty.NumberIntVal(16384)), v.GoString())
	_, diags = evalLocal(t, "length([for p in setproduct(range(128), range(129)) : p])")
	require.True(t, diags.HasErrors())

	// Loops over empty collections still count: nesting them cannot go on
	// forever for free.
	_, diags = evalLocal(t, strings.Repeat("[for a in range(2) : ", 40)+"1"+strings.Repeat("]", 40))
	require.True(t, diags.HasErrors())
	assert.Equal(t, "Too many iterations", diags[0].Summary)

	// The budget belongs to one evaluation: the next one starts afresh.
	cfg, d := NewLoader(nil).ParseSource([]byte(`locals {
  a = length([for x in range(100) : [for y in range(100) : y]])
  b = length([for x in range(100) : [for y in range(100) : y]])
}
`), "two.hcl")
	require.False(t, d.HasErrors())
	s := NewScope(map[string]cty.Value{}, t.TempDir(), ".", nil, nil)
	require.False(t, cfg.EvalLocals(s).HasErrors())
	assert.True(t, s.Locals["b"].RawEquals(cty.NumberIntVal(100)))
}

// The evaluations of one scope share a larger pool: a loop within the
// per-evaluation bound, repeated in thousands of nodes, stops too.
func TestForIterationPool(t *testing.T) {
	oldN, oldM := MaxIterations, MaxTotalIterations
	MaxIterations, MaxTotalIterations = 1<<11, 1<<13
	t.Cleanup(func() { MaxIterations, MaxTotalIterations = oldN, oldM })

	e, d := hclsyntax.ParseExpression([]byte("[for a in range(1000) : a]"), "pool.hcl", hcl.InitialPos)
	require.False(t, d.HasErrors())
	expr := boundExpr(e)
	s := NewScope(map[string]cty.Value{}, t.TempDir(), ".", nil, nil)
	ok := 0
	var diags hcl.Diagnostics
	for i := 0; i < 20 && !diags.HasErrors(); i++ {
		_, diags = expr.Value(s.Context(nil))
		if !diags.HasErrors() {
			ok++
		}
	}
	assert.Equal(t, 8, ok, "8 evaluations of 1001 fit in 8192")
	require.True(t, diags.HasErrors())
	assert.Contains(t, diags[0].Detail, "over all its nodes")

	// Another scope (another command) has its own pool.
	_, diags = expr.Value(NewScope(map[string]cty.Value{}, t.TempDir(), ".", nil, nil).Context(nil))
	assert.False(t, diags.HasErrors())

	// Once the pool is spent, an evaluation is refused before its
	// collection is made: a thousand nodes do not each make their
	// range(1000) for loops that will not run (FuzzPipeline's
	// nested_for_in_stage took 10 s).
	calls := 0
	s = NewScope(map[string]cty.Value{}, t.TempDir(), ".", nil, nil)
	s.Funcs["counted"] = function.New(&function.Spec{
		Type: function.StaticReturnType(cty.List(cty.Number)),
		Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
			calls++
			return cty.ListVal([]cty.Value{cty.NumberIntVal(1)}), nil
		},
	})
	e, d = hclsyntax.ParseExpression([]byte("[for a in counted() : [for b in range(1000) : b]]"), "pool.hcl", hcl.InitialPos)
	require.False(t, d.HasErrors())
	expr = boundExpr(e)
	for i := 0; i < 1000; i++ {
		_, diags = expr.Value(s.Context(nil))
	}
	require.True(t, diags.HasErrors())
	assert.Contains(t, diags[0].Detail, "over all its nodes")
	assert.Equal(t, 9, calls, "collections made after the pool was spent")
}

// References through a bounded for expression are still found, so that
// dependencies and checks see them.
func TestBoundedForKeepsReferences(t *testing.T) {
	cfg, diags := NewLoader(nil).ParseSource([]byte(`locals {
  x = { for k, v in var.m : k => [for s in local.seeds : "${v}-${s}-${path.root}"] if k != each.key }
}
`), "refs.hcl")
	require.False(t, diags.HasErrors())
	expr := cfg.Locals["x"].Expr
	_, isBounded := expr.(*boundedFor)
	assert.True(t, isBounded)
	refs, diags := References(expr)
	require.False(t, diags.HasErrors())
	var got []string
	for _, r := range refs {
		got = append(got, r.Root+"."+r.Name)
	}
	assert.ElementsMatch(t, []string{"var.m", "local.seeds", "path.root", "each.key"}, got)
	// The iteration variables are not references.
	for _, tr := range expr.Variables() {
		assert.NotContains(t, []string{"k", "v", "s"}, tr.RootName())
	}
}

// A for expression evaluated without any context (a static attribute)
// has a budget too.
func TestBoundedForWithoutContext(t *testing.T) {
	lowBudget(t)
	f, diags := hclsyntax.ParseConfig([]byte("x = [for a in [1, 2, 3] : a * 2]\ny = [for a in [1,2,3,4,5,6,7,8,9,10] : [for b in [1,2,3,4,5,6,7,8,9,10] : [for c in [1,2,3,4,5,6,7,8,9,10] : [for d in [1,2,3,4,5,6,7,8,9,10] : [for e in [1,2,3,4,5,6,7,8,9,10] : [for g in [1,2,3,4,5,6,7,8,9,10] : 1]]]]]]\n"), "static.hcl", hcl.InitialPos)
	require.False(t, diags.HasErrors())
	boundFile(f)
	attrs, _ := f.Body.JustAttributes()
	v, diags := attrs["x"].Expr.Value(nil)
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.Equal(t, 3, v.LengthInt())
	_, diags = attrs["y"].Expr.Value(nil)
	require.True(t, diags.HasErrors())
	assert.Equal(t, "Too many iterations", diags[0].Summary)
}

func TestFunctionGuards(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "big.txt"), make([]byte, 16), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "bin.dat"), []byte{0xff, 0xfe, 0x00}, 0o644))
	fns := Functions(root, nil)
	cases := []struct {
		expr string
		err  string // "" for success
	}{
		{`setproduct(range(100), range(100), range(200))`, "more than 1048576 elements"},
		{`length(setproduct(range(10), range(10)))`, ""},
		{`setproduct([], range(1000), range(1000), range(1000))`, ""},
		{`format("%0999999999d", 1)`, "over 10000"},
		{`format("%.99999f", 1)`, "over 10000"},
		{`format("%[2]d-%[1]s", "a", 1)`, ""},
		{`format("%%%05d%%", 3)`, ""},
		{`formatlist("%099999d", [1])`, "over 10000"},
		{`indent(100000000, "a\nb")`, "at most 10000 spaces"},
		{`indent(2, "a\nb")`, ""},
		{`file("/dev/zero")`, "not a regular file"},
		{`file(".")`, "not a regular file"},
		{`file("big.txt")`, ""},
		{`file("bin.dat")`, "not UTF-8"},
		{`filesha256("bin.dat")`, ""},
		{`filesha256("/dev/null")`, "not a regular file"},
		{`index(["a", "b", "c"], "c")`, ""},
		{`index(["a", "b"], "z")`, "does not hold that value"},
		{`index("abc", "a")`, "must be a list or tuple"},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			e, d := hclsyntax.ParseExpression([]byte(c.expr), "x.hcl", hcl.InitialPos)
			require.False(t, d.HasErrors(), "%s", d.Error())
			_, d = e.Value(&hcl.EvalContext{Functions: fns})
			if c.err == "" {
				assert.False(t, d.HasErrors(), "%s", d.Error())
				return
			}
			require.True(t, d.HasErrors())
			assert.Contains(t, d.Error(), c.err)
		})
	}
}

func TestIndexIsPosition(t *testing.T) {
	v, diags := evalLocal(t, `index(["qwen", "llama", "mistral"], "llama")`)
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.True(t, v.RawEquals(cty.NumberIntVal(1)), v.GoString())
}

func TestTidyDiagnostics(t *testing.T) {
	// Numbers that made cty's modulo panic are refused before it now.
	_, diags := evalLocal(t, "pow(10, 1000000) % 7")
	require.True(t, diags.HasErrors())
	assert.Equal(t, "Number out of range", diags[0].Summary)
	diags = TidyDiagnostics(hcl.Diagnostics{{
		Severity: hcl.DiagError, Summary: "Error in function call",
		Detail: "Call to function \"x\" failed: panic in function implementation: big: bad\ngoroutine 1 [running]:\nmain.main()",
	}})
	assert.NotContains(t, diags[0].Detail, "goroutine")
	assert.NotContains(t, diags[0].Detail, "\n")
	assert.Contains(t, diags[0].Detail, "outside what this operation handles")
}

// An expression that constant takes for one refers to nothing: the walks
// References skips find nothing in it either.
func TestConstantRefersToNothing(t *testing.T) {
	for src, want := range map[string]bool{
		`[[1, 2.5, [3]], [], "a}b", true, null]`: true,
		`"plain"`:                                true,
		`1e400`:                                  true, // a checked literal
		`[1, local.x]`:                           false,
		`"a${local.x}"`:                          false,
		`[stage.a[each.key]]`:                    false,
		`{ a = 1 }`:                              false, // not a form it looks at
		`[for x in [1] : x]`:                     false,
		`upper("a")`:                             false,
		`[1, 2] == [1, 2] ? [3] : [4]`:           false,
	} {
		e, diags := hclsyntax.ParseExpression([]byte(src), "x.hcl", hcl.InitialPos)
		require.Empty(t, diags, src)
		e = boundExpr(e)
		assert.Equal(t, want, constant(e), src)
		if want {
			assert.Empty(t, hclsyntax.Variables(e), src)
			refs, diags := References(e)
			assert.Nil(t, refs, src)
			assert.Nil(t, diags, src)
		}
	}
}

// NumbersInRange takes a number on its own (what a literal is) as it takes
// one inside a collection.
func TestNumbersInRangeOfANumber(t *testing.T) {
	for src, want := range map[string]bool{
		"0": true, "1": true, "-1": true, "1.7e308": true, "4e308": false, "-4e308": false,
		"5e-324": true, "2e-324": false, "-5e-324": true, "1e-400": false, "1e400": false,
		// The edges, as a JSON reader rounds a number to a float64.
		"1.7976931348623157e308": true, "-1.7976931348623157e308": true, "1.7976931348623158e308": true,
		"1.8e308": false, "3e308": false, "-3e308": false, "3.5e308": false, "4.9e-324": true, "2.5e-324": true, "2.4e-324": false,
	} {
		n, err := cty.ParseNumberVal(src)
		require.NoError(t, err)
		assert.Equal(t, want, NumbersInRange(n), src)
		assert.Equal(t, want, NumbersInRange(cty.TupleVal([]cty.Value{n})), "[%s]", src)
	}
	assert.True(t, NumbersInRange(cty.UnknownVal(cty.Number)))
	assert.True(t, NumbersInRange(cty.NullVal(cty.Number)))
	assert.False(t, NumbersInRange(cty.MustParseNumberVal("1e400").Mark("x")))
}

// References of a lone traversal (its fast way) are what the walk finds,
// diagnostics included.
func TestReferencesOfATraversalAreTheWalks(t *testing.T) {
	for _, src := range []string{
		`stage.a`, `stage.a["k"]`, `stage.a.result.x`, `stage.a[0]`, `var.n`, `local.x.y`,
		`path.root`, `each.key`, `self.result`, `bogus.x`, `stage`, `var`, `stage.a["k"].result`,
	} {
		e, diags := hclsyntax.ParseExpression([]byte(src), "x.hcl", hcl.InitialPos)
		require.Empty(t, diags, src)
		_, ok := e.(*hclsyntax.ScopeTraversalExpr)
		require.True(t, ok, src)
		refs, diags := References(e)
		wantRefs, wantDiags := walkReferences(e)
		assert.Equal(t, wantRefs, refs, src)
		assert.Equal(t, wantDiags, diags, src)
	}
}

// AppendReferences appends what References lists, diagnostics included,
// and a lone traversal's reference costs no allocation beyond the slice's
// (it took two: the reference, then a slice of it).
func TestAppendReferencesAppendsTheReferences(t *testing.T) {
	prefix := []Ref{{Root: "var", Name: "p"}}
	for _, src := range []string{
		`stage.a`, `stage.a["k"]`, `bogus.x`, `stage`, `"plain"`, `[1, 2]`, `[stage.a, var.n]`,
		`"a${local.x}"`, `[stage.a[each.key]]`, `[for x in var.l : x if bogus.y]`, `upper(nope.z)`,
	} {
		e, diags := hclsyntax.ParseExpression([]byte(src), "x.hcl", hcl.InitialPos)
		require.Empty(t, diags, src)
		e = boundExpr(e)
		wantRefs, wantDiags := References(e)
		refs, diags := AppendReferences(nil, e)
		assert.Equal(t, wantRefs, refs, src)
		assert.Equal(t, wantDiags, diags, src)
		refs, diags = AppendReferences(slices.Clip(slices.Clone(prefix)), e)
		assert.Equal(t, append(slices.Clone(prefix), wantRefs...), refs, src)
		assert.Equal(t, wantDiags, diags, src)
	}
	e, _ := hclsyntax.ParseExpression([]byte(`stage.a`), "x.hcl", hcl.InitialPos)
	if allocs := testing.AllocsPerRun(10, func() { _, _ = References(e) }); allocs > 1 {
		t.Errorf("References of stage.a made %.0f allocations, want 1", allocs)
	}
	room := make([]Ref, 0, 1)
	if allocs := testing.AllocsPerRun(10, func() { _, _ = AppendReferences(room, e) }); allocs > 0 {
		t.Errorf("AppendReferences of stage.a to a slice with room made %.0f allocations, want 0", allocs)
	}
}

// A value whose type has no room for a number is in range without a walk:
// walking a set sorts it, and toset of a grid's keys was sorted once for
// the check. A number anywhere in a structure is still found.
func TestNumbersInRangeSkipsWhatHoldsNoNumber(t *testing.T) {
	keys := make([]cty.Value, 2000)
	for i := range keys {
		keys[i] = cty.StringVal(fmt.Sprintf("k%d", i))
	}
	set := cty.SetVal(keys)
	assert.True(t, NumbersInRange(set))
	if allocs := testing.AllocsPerRun(5, func() { NumbersInRange(set) }); allocs > 16 {
		t.Errorf("NumbersInRange of a set of strings made %.0f allocations, want none (no walk)", allocs)
	}
	big := cty.MustParseNumberVal("1e400")
	for _, v := range []cty.Value{
		cty.ObjectVal(map[string]cty.Value{"s": cty.StringVal("x"), "n": big}),
		cty.MapVal(map[string]cty.Value{"a": cty.TupleVal([]cty.Value{cty.True, big})}),
		cty.SetVal([]cty.Value{cty.ListVal([]cty.Value{big})}),
		cty.TupleVal([]cty.Value{cty.StringVal("x"), cty.ObjectVal(map[string]cty.Value{"n": big})}),
	} {
		assert.False(t, NumbersInRange(v), "%#v", v)
	}
	for _, v := range []cty.Value{
		cty.ObjectVal(map[string]cty.Value{"s": cty.StringVal("x"), "l": cty.ListValEmpty(cty.Bool)}),
		cty.MapVal(map[string]cty.Value{"a": cty.SetVal([]cty.Value{cty.StringVal("y")})}),
		cty.TupleVal([]cty.Value{cty.StringVal("x"), cty.NumberIntVal(3)}),
	} {
		assert.True(t, NumbersInRange(v), "%#v", v)
	}
}

// Arithmetic computed without the operator's function call has hcl's value
// and diagnostics, whatever the operands: numbers, strings that convert or
// not, unknown, null, marked, infinite, nested.
func TestArithmeticIsHCLs(t *testing.T) {
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{
		"p":    cty.TupleVal([]cty.Value{cty.NumberIntVal(7), cty.NumberFloatVal(0.5)}),
		"n":    cty.NumberIntVal(3),
		"s":    cty.StringVal("4"),
		"bad":  cty.StringVal("x"),
		"u":    cty.UnknownVal(cty.Number),
		"null": cty.NullVal(cty.Number),
		"m":    cty.NumberIntVal(2).Mark("sensitive"),
		"inf":  cty.PositiveInfinity,
		"ninf": cty.NegativeInfinity,
		"big":  cty.MustParseNumberVal("1e300"),
	}}
	for _, src := range []string{
		"p[0] * 50 + p[1]", "n - 1", "n * n - p[0]", "(n + 1) * 2", "s + 1", "1 - s",
		"bad + 1", "u + 1", "null * 2", "m + 1", "inf + 1", "inf + ninf", "0 * inf",
		"big * big * big", "n + missing", "p[5] + 1", "n / 2", "n % 2", "n == 3",
		"-n + 2", "0.1 + 0.2", "n * -2.5",
	} {
		expr, d := hclsyntax.ParseExpression([]byte(src), "t.hcl", hcl.InitialPos)
		require.False(t, d.HasErrors(), "%s: %s", src, d.Error())
		wantV, wantD := boundExpr(expr).(hcl.Expression).Value(ctx)
		// hcl's own evaluation, through checkNumbers as cairn's is.
		hv, hd := expr.Value(ctx)
		hv, hd = checkNumbers(hv, hd, expr.Range())
		assert.True(t, hv.RawEquals(wantV), "%s: %#v, hcl's %#v", src, wantV, hv)
		assert.Equal(t, hd.Error(), wantD.Error(), src)
	}
}

// p[0] * 50 + p[1], a grid key, allocates its operands' numbers and its
// results, not an argument list, conversion and refinement an operation.
func TestArithmeticAllocatesItsResults(t *testing.T) {
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{
		"p": cty.TupleVal([]cty.Value{cty.NumberIntVal(7), cty.NumberIntVal(3)}),
	}}
	expr, _ := hclsyntax.ParseExpression([]byte("p[0] * 50 + p[1]"), "t.hcl", hcl.InitialPos)
	bound := boundExpr(expr)
	v, d := bound.Value(ctx)
	require.False(t, d.HasErrors())
	require.True(t, v.RawEquals(cty.NumberIntVal(353)))
	if allocs := testing.AllocsPerRun(50, func() { _, _ = bound.Value(ctx) }); allocs > 16 {
		t.Errorf("p[0] * 50 + p[1] made %.0f allocations an evaluation, want at most 16", allocs)
	}
}

// walkNumbersInRange is NumbersInRange as cty.Walk finds it: every known,
// non-null number, unmarked, below known, non-null values.
func walkNumbersInRange(v cty.Value) bool {
	ok := true
	_ = cty.Walk(v, func(_ cty.Path, ev cty.Value) (bool, error) {
		ev, _ = ev.Unmark()
		if !ok || !ev.IsKnown() || ev.IsNull() {
			return false, nil
		}
		if ev.Type().Equals(cty.Number) {
			ok = floatInRange(ev.AsBigFloat())
		}
		return ok, nil
	})
	return ok
}

// NumbersInRange finds what a walk of the whole value finds, wherever the
// number is, however the values around it are marked, unknown or null.
func TestNumbersInRangeIsTheWalks(t *testing.T) {
	big, small, one := cty.MustParseNumberVal("1e400"), cty.MustParseNumberVal("1e-400"), cty.NumberIntVal(1)
	var leaves []cty.Value
	for _, n := range []cty.Value{big, small, one} {
		leaves = append(leaves, n, n.Mark("sensitive"))
	}
	leaves = append(leaves, cty.StringVal("s"), cty.True, cty.UnknownVal(cty.Number), cty.NullVal(cty.Number), cty.DynamicVal,
		cty.UnknownVal(cty.Object(map[string]cty.Type{"n": cty.Number})).Mark("m"))
	wraps := []func(cty.Value) cty.Value{
		func(v cty.Value) cty.Value { return v },
		func(v cty.Value) cty.Value {
			return cty.ObjectVal(map[string]cty.Value{"s": cty.StringVal("x"), "l": cty.ListVal([]cty.Value{cty.StringVal("a")}), "v": v})
		},
		func(v cty.Value) cty.Value { return cty.TupleVal([]cty.Value{cty.StringVal("x"), v, cty.False}) },
		func(v cty.Value) cty.Value { return cty.ListVal([]cty.Value{v}) },
		func(v cty.Value) cty.Value { return cty.MapVal(map[string]cty.Value{"a": v}) },
		func(v cty.Value) cty.Value {
			if !v.IsWhollyKnown() || v.IsMarked() {
				return v
			}
			return cty.SetVal([]cty.Value{v})
		},
		func(v cty.Value) cty.Value { return cty.TupleVal([]cty.Value{v}).Mark("outer") },
		func(v cty.Value) cty.Value {
			return cty.ObjectVal(map[string]cty.Value{"o": cty.ObjectVal(map[string]cty.Value{"t": cty.TupleVal([]cty.Value{v})})})
		},
	}
	checked := 0
	for _, leaf := range leaves {
		for _, w1 := range wraps {
			for _, w2 := range wraps {
				v := w2(w1(leaf))
				assert.Equal(t, walkNumbersInRange(v), NumbersInRange(v), "%#v", v)
				checked++
			}
		}
	}
	assert.Greater(t, checked, 500)
}

// A grid job's object (strings, lists of strings, one number) is checked
// without a walk of its strings: what holds no number is not visited, and
// no path is made.
func TestNumbersInRangeVisitsWhatMayHoldNumbers(t *testing.T) {
	strs := func(n int) cty.Value {
		var l []cty.Value
		for i := range n {
			l = append(l, cty.StringVal(fmt.Sprintf("s%d", i)))
		}
		return cty.ListVal(l)
	}
	job := cty.ObjectVal(map[string]cty.Value{
		"method": cty.StringVal("gepa"), "out": cty.StringVal("runs/gepa/1"), "seed": cty.NumberIntVal(1),
		"run": strs(8), "files": cty.ObjectVal(map[string]cty.Value{"data": strs(20), "method": strs(4)}),
		"runtime": cty.ObjectVal(map[string]cty.Value{"runtime": cty.StringVal("single"), "temperature": cty.NumberIntVal(0)}),
	})
	require.True(t, NumbersInRange(job))
	// The walk made 4 allocations for each value it visited.
	if allocs := testing.AllocsPerRun(20, func() { NumbersInRange(job) }); allocs > 4 {
		t.Errorf("NumbersInRange of a job made %.0f allocations, want at most 4", allocs)
	}
}

package stages

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
)

// decodeTargets make the destinations attributes are decoded into, empty
// and already holding a value (encoding/json keeps a map's entries and
// overwrites a slice's).
var decodeTargets = []struct {
	name      string
	make      func() any
	useNumber bool
}{
	{"string", func() any { return new(string) }, false},
	{"string set", func() any { s := "before"; return &s }, false},
	{"int", func() any { return new(int) }, false},
	{"int set", func() any { i := 7; return &i }, false},
	{"bool", func() any { return new(bool) }, false},
	{"[]string", func() any { return new([]string) }, false},
	{"[]string empty", func() any { s := []string{}; return &s }, false},
	{"[]string set", func() any { s := []string{"x", "y", "z"}; return &s }, false},
	{"map[string]string", func() any { return new(map[string]string) }, false},
	{"map[string]string set", func() any { m := map[string]string{"keep": "k", "a": "old"}; return &m }, false},
	{"map[string][]string", func() any { return new(map[string][]string) }, false},
	{"map[string]any", func() any { return new(map[string]any) }, true},
	{"map[string]any set", func() any { m := map[string]any{"keep": 1.0}; return &m }, true},
	{"map[string]any, numbers as float64", func() any { return new(map[string]any) }, false},
	{"map[string]json.RawMessage", func() any { return new(map[string]json.RawMessage) }, false},
	{"struct", func() any { return new(struct{ A string }) }, false},
}

// decodeMismatches decodes v into every target both ways, directly
// (decodeValue) and through the JSON form (decodeJSON), and describes
// each difference in the result or the error. direct counts the targets
// the direct reading took.
func decodeMismatches(v cty.Value) (diffs []string, direct int) {
	for _, tg := range decodeTargets {
		got, want := tg.make(), tg.make()
		if decodeDirect(v, tg.make(), tg.useNumber) {
			direct++
		}
		gerr := decodeValue(v, got, true, tg.useNumber)
		werr := decodeJSON(v, want, true, tg.useNumber)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			diffs = append(diffs, fmt.Sprintf("%#v into %s: error %v, through JSON %v", v, tg.name, gerr, werr))
		}
		if !reflect.DeepEqual(got, want) {
			diffs = append(diffs, fmt.Sprintf("%#v into %s: %#v, through JSON %#v", v, tg.name,
				reflect.ValueOf(got).Elem().Interface(), reflect.ValueOf(want).Elem().Interface()))
		}
	}
	return diffs, direct
}

// randValue is a random value of the shapes attributes take: primitives
// (numbers whole and not, strings with escapes), lists, tuples, sets,
// maps and objects of them, a few nulls and sensitive marks.
func randValue(r *rand.Rand, depth int) cty.Value {
	k := r.IntN(14)
	if depth > 2 && k >= 6 {
		k = r.IntN(6)
	}
	switch k {
	case 0, 1:
		return cty.StringVal([]string{"", "a", "runs/gepa/x/0", "é\u2028<&>\"\\", "data/train.jsonl", "1"}[r.IntN(6)])
	case 2:
		return []cty.Value{
			cty.NumberIntVal(0), cty.NumberIntVal(int64(r.IntN(1000)) - 500), cty.NumberFloatVal(0.7),
			cty.NumberVal(new(big.Float).Neg(big.NewFloat(0))), cty.MustParseNumberVal("1e30"),
			cty.MustParseNumberVal("9223372036854775808"), cty.MustParseNumberVal("2.50"), cty.NumberIntVal(1 << 40),
		}[r.IntN(8)]
	case 3:
		return cty.BoolVal(r.IntN(2) == 0)
	case 4:
		return []cty.Value{cty.NullVal(cty.String), cty.NullVal(cty.DynamicPseudoType), cty.NullVal(cty.Number)}[r.IntN(3)]
	case 5:
		return randValue(r, depth+1).Mark(dsl.SensitiveMark)
	case 6, 7: // a list or set of one element type
		n := r.IntN(4)
		e := randValue(r, depth+1)
		if e.IsMarked() || e.IsNull() {
			e = cty.StringVal("x")
		}
		vs := make([]cty.Value, n)
		for i := range vs {
			vs[i] = sameType(r, e.Type(), depth)
		}
		switch {
		case n == 0:
			return cty.ListValEmpty(e.Type())
		case k == 7 && !e.Type().IsCollectionType() && !e.Type().IsObjectType() && !e.Type().IsTupleType():
			return cty.SetVal(vs)
		}
		return cty.ListVal(vs)
	case 8, 9:
		vs := make([]cty.Value, r.IntN(4))
		for i := range vs {
			vs[i] = randValue(r, depth+1)
		}
		return cty.TupleVal(vs)
	case 10:
		m := map[string]cty.Value{}
		e := randValue(r, depth+1)
		if e.IsMarked() || e.IsNull() {
			e = cty.StringVal("x")
		}
		for i := range r.IntN(4) {
			m[fmt.Sprintf("k%d", i)] = sameType(r, e.Type(), depth)
		}
		if len(m) == 0 {
			return cty.MapValEmpty(e.Type())
		}
		return cty.MapVal(m)
	default:
		m := map[string]cty.Value{}
		for i := range r.IntN(5) {
			m[[]string{"train", "val", "test", "method", "seed", "topology", "keep"}[(i+r.IntN(3))%7]] = randValue(r, depth+1)
		}
		return cty.ObjectVal(m)
	}
}

// sameType is a random value of type ty where one is easily made, else a
// value of ty made from ty's zero parts.
func sameType(r *rand.Rand, ty cty.Type, depth int) cty.Value {
	for range 8 {
		if v := randValue(r, depth+1); v.Type().Equals(ty) && !v.IsMarked() {
			return v
		}
	}
	switch {
	case ty == cty.String:
		return cty.StringVal(fmt.Sprint(r.IntN(3)))
	case ty == cty.Number:
		return cty.NumberIntVal(int64(r.IntN(3)))
	case ty == cty.Bool:
		return cty.True
	}
	return cty.NullVal(ty)
}

func TestDecodeValueMatchesJSON(t *testing.T) {
	edge := []cty.Value{
		cty.StringVal("runs/gepa/hotpotqa/single/qwen/0"),
		cty.StringVal(string([]byte{0xff, 'a'})), // not UTF-8: json.Marshal writes U+FFFD
		cty.NumberIntVal(3), cty.NumberIntVal(-3), cty.NumberFloatVal(1.5),
		cty.NumberVal(new(big.Float).Neg(big.NewFloat(0))),
		cty.MustParseNumberVal("2147483648"), cty.MustParseNumberVal("-2147483649"),
		cty.MustParseNumberVal("9223372036854775807"), cty.MustParseNumberVal("9223372036854775808"),
		cty.MustParseNumberVal("1e30"), cty.PositiveInfinity,
		cty.True, cty.False,
		strs("python3", "-m", "optimizers.gepa"), cty.ListValEmpty(cty.String), cty.EmptyTupleVal,
		cty.SetVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a")}),
		cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(1)}),
		cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NullVal(cty.String)}),
		cty.TupleVal([]cty.Value{cty.StringVal("a").Mark(dsl.SensitiveMark)}),
		cty.ObjectVal(map[string]cty.Value{"train": cty.StringVal("d/train.jsonl"), "val": cty.StringVal("d/val.jsonl")}),
		cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("x"), "b": cty.NullVal(cty.String)}),
		cty.ObjectVal(map[string]cty.Value{"a": cty.NullVal(cty.DynamicPseudoType)}),
		cty.ObjectVal(map[string]cty.Value{"keep": cty.StringVal("new")}),
		cty.ObjectVal(map[string]cty.Value{"method": strs("optimizers/gepa/"), "data": strs("a", "b"), "bundle": cty.EmptyTupleVal}),
		cty.ObjectVal(map[string]cty.Value{"runtime": cty.StringVal("single"), "temperature": cty.NumberIntVal(0), "eval_seed": cty.NumberIntVal(2), "top_p": cty.NumberFloatVal(0.95)}),
		cty.ObjectVal(map[string]cty.Value{"nested": cty.ObjectVal(map[string]cty.Value{"l": cty.TupleVal([]cty.Value{cty.True, cty.NumberIntVal(1), cty.EmptyObjectVal})})}),
		cty.MapVal(map[string]cty.Value{"b": cty.StringVal("2"), "a": cty.StringVal("1")}),
		cty.MapValEmpty(cty.String), cty.EmptyObjectVal,
		cty.ObjectVal(map[string]cty.Value{"A": cty.StringVal("x")}),
		cty.ObjectVal(map[string]cty.Value{"A": cty.StringVal("x"), "B": cty.StringVal("y")}),
		cty.StringVal("s").Mark(dsl.SensitiveMark),
		cty.ObjectVal(map[string]cty.Value{"k": cty.StringVal("s").Mark(dsl.SensitiveMark)}),
	}
	direct := 0
	for _, v := range edge {
		d, n := decodeMismatches(v)
		assert.Empty(t, d)
		direct += n
	}
	require.Greater(t, direct, len(edge), "the direct reading took too few of the values")
	r := rand.New(rand.NewPCG(34, 2))
	direct = 0
	for range 3000 {
		v := randValue(r, 0)
		if v.IsNull() {
			continue
		}
		d, n := decodeMismatches(v)
		if !assert.Empty(t, d) {
			break
		}
		direct += n
	}
	require.Greater(t, direct, 1000, "the direct reading took too few of the random values")
}

// DecodeMismatches is decodeMismatches for the tests of package
// stages_test.
var DecodeMismatches = decodeMismatches

// seedJobNode is a job node of seed 002's experiment grid, its attributes
// as pipelines/optimizer_grid.hcl evaluates them.
func seedJobNode() *Node {
	out := "runs/gepa/hotpotqa/centralized+json/qwen/1"
	split := cty.ObjectVal(map[string]cty.Value{
		"train": cty.StringVal("data/hotpotqa/train.jsonl"),
		"val":   cty.StringVal("data/hotpotqa/val.jsonl"),
		"test":  cty.StringVal("data/hotpotqa/test.jsonl"),
	})
	return &Node{Address: `stage.job["gepa/hotpotqa/centralized+json/qwen/1"]`, Stage: "job", Args: map[string]cty.Value{
		"out": cty.StringVal(out), "method": cty.StringVal("gepa"), "dataset": cty.StringVal("hotpotqa"),
		"runtime": cty.StringVal("centralized+json"), "model": cty.StringVal("qwen"),
		"task_model": cty.StringVal("Qwen/Qwen3.5-9B"), "seed": cty.NumberIntVal(1), "budget": cty.NumberIntVal(600),
		"reflection_model": cty.StringVal(ReflectionModel), "check": cty.NullVal(cty.DynamicPseudoType),
		"in_grid": cty.True, "allow_any_cell": cty.False,
		"command": strs("python", "-m", "optimizers.gepa", "--seed", "1"),
		"worker":  strs("python3", "testdata/workers/chat_worker.py", "--bundle-system-prompt", "system.txt"),
		"splits":  split,
		"files": cty.ObjectVal(map[string]cty.Value{
			"method":   strs("optimizers/gepa/"),
			"data":     strs("data/hotpotqa/test.jsonl", "data/hotpotqa/train.jsonl", "data/hotpotqa/val.jsonl"),
			"worker":   strs("testdata/workers/chat_worker.py"),
			"bundle":   strs("testdata/optimizer/bundles/seed/"),
			"pipeline": strs("pipelines/optimizer_grid.hcl"),
		}),
	}, Ranges: map[string]hcl.Range{}}
}

// A job node is decoded several times while a grid is planned (its check,
// inputs, outputs and out folder): its attributes are read without
// writing and parsing their JSON.
func TestDecodeJobAllocations(t *testing.T) {
	n := seedJobNode()
	s, diags := decodeJob(n)
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	require.True(t, s.known)
	assert.Equal(t, map[string]string{"train": "data/hotpotqa/train.jsonl", "val": "data/hotpotqa/val.jsonl", "test": "data/hotpotqa/test.jsonl"}, s.id.Splits)
	allocs := testing.AllocsPerRun(50, func() { decodeJob(n) })
	t.Logf("decodeJob: %.0f allocations", allocs)
	assert.LessOrEqual(t, allocs, 30.0)
}

func TestUnmarkDeepMatchesCty(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 3))
	marked := 0
	for range 3000 {
		v := randValue(r, 0)
		require.Equal(t, v.ContainsMarked(), hasMarks(v), "%#v", v)
		want, _ := v.UnmarkDeep()
		require.True(t, unmarkDeep(v).RawEquals(want), "%#v", v)
		if hasMarks(v) {
			marked++
		}
	}
	require.Greater(t, marked, 100)
}

// seedEvalNode is a seed_validation node of seed 002's experiment grid as
// plan evaluates it: its endpoints known only once the task model runs.
func seedEvalNode() *Node {
	return &Node{Address: `stage.seed_validation["gepa/hotpotqa/centralized+json/qwen/1"]`, Stage: "seed_validation", Args: map[string]cty.Value{
		"worker":        strs("python3", "testdata/workers/chat_worker.py", "--system-prompt-file", "testdata/optimizer/bundles/seed/system.txt"),
		"items":         cty.StringVal("testdata/optimizer/data/hotpotqa/val.jsonl"),
		"bundle":        strs("testdata/optimizer/bundles/seed/"),
		"model":         cty.StringVal("Qwen/Qwen3.5-9B"),
		"runtime":       cty.ObjectVal(map[string]cty.Value{"runtime": cty.StringVal("centralized+json"), "temperature": cty.NumberIntVal(0), "eval_seed": cty.NumberIntVal(1)}),
		"endpoints":     cty.DynamicVal,
		"max_in_flight": cty.NumberIntVal(8),
		"item_timeout":  cty.StringVal("10m"),
		"env":           cty.EmptyObjectVal,
		"scores":        cty.StringVal("runs/gepa/hotpotqa/centralized+json/qwen/1/validation/seed_scores.jsonl"),
		"needed":        cty.True,
	}, Ranges: map[string]hcl.Range{}}
}

// An evaluate node is decoded several times while a grid is planned: its
// attributes are read without copying them.
func TestDecodeEvaluateAllocations(t *testing.T) {
	n := seedEvalNode()
	s, diags := decodeEvaluate(n)
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.Equal(t, map[string]any{"runtime": "centralized+json", "temperature": json.Number("0"), "eval_seed": json.Number("1")}, s.runtime)
	allocs := testing.AllocsPerRun(50, func() { decodeEvaluate(n) })
	t.Logf("decodeEvaluate: %.0f allocations", allocs)
	assert.LessOrEqual(t, allocs, 20.0)
}

// withUnknowns is v with some of its parts unknown.
func withUnknowns(r *rand.Rand, v cty.Value) cty.Value {
	out, _ := cty.Transform(v, func(_ cty.Path, v cty.Value) (cty.Value, error) {
		if r.IntN(6) == 0 {
			return cty.UnknownVal(v.Type()).WithMarks(v.Marks()), nil
		}
		return v, nil
	})
	return out
}

func TestWhollyKnownMatchesCty(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 4))
	unknown := 0
	for range 3000 {
		v := randValue(r, 0)
		if r.IntN(2) == 0 {
			v = withUnknowns(r, v)
		}
		require.Equal(t, v.IsWhollyKnown(), whollyKnown(v), "%#v", v)
		if !whollyKnown(v) {
			unknown++
		}
	}
	require.Greater(t, unknown, 300)
	require.False(t, whollyKnown(cty.DynamicVal))
	require.False(t, whollyKnown(cty.ObjectVal(map[string]cty.Value{"a": cty.DynamicVal})))
}

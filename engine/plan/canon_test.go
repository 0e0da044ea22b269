package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"sort"
	"strconv"
	"testing"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// A node's keyed arguments are mostly lists of plain strings (run,
// outputs): encoding them for its key costs the buffer's growth, not an
// allocation per string.
func TestCanonicalJSONAllocs(t *testing.T) {
	v := cty.ObjectVal(map[string]cty.Value{
		"run":     cty.TupleVal([]cty.Value{cty.StringVal("sh"), cty.StringVal("-c"), cty.StringVal("echo c1 > out/c1")}),
		"outputs": cty.TupleVal([]cty.Value{cty.StringVal("out/c1")}),
	})
	want := `{"outputs":["out/c1"],"run":["sh","-c","echo c1 \u003e out/c1"]}`
	if got, known := canonicalJSON(v); string(got) != want || !known {
		t.Fatalf("canonicalJSON = %s, %v; want %s", got, known, want)
	}
	n := testing.AllocsPerRun(100, func() { canonicalJSON(v) })
	if n > 8 {
		t.Errorf("canonicalJSON of 2 attributes, 4 strings: %v allocations, want <= 8", n)
	}
	// The bytes it keeps are the encoding's, not a scratch buffer's.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 1000
	for range runs {
		canonicalJSON(v)
	}
	runtime.ReadMemStats(&after)
	if b := (after.TotalAlloc - before.TotalAlloc) / runs; b > 4*uint64(len(want)) {
		t.Errorf("canonicalJSON of a %d-byte encoding: %d bytes allocated a call, want <= %d", len(want), b, 4*len(want))
	}
}

// canonRef is canonicalJSON as it was written first, through json.Marshal
// and a sort of its own: node keys must stay what they were, so the
// encoder is held to it.
func canonRef(b *bytes.Buffer, v cty.Value) bool {
	if v.IsMarked() {
		inner, _ := v.UnmarkDeep()
		var ib bytes.Buffer
		if !canonRef(&ib, inner) {
			return false
		}
		h := sha256.Sum256(ib.Bytes())
		b.WriteString(`{"sensitive_sha256":"` + hex.EncodeToString(h[:]) + `"}`)
		return true
	}
	if !v.IsKnown() {
		return false
	}
	if v.IsNull() {
		b.WriteString("null")
		return true
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		s, _ := json.Marshal(v.AsString())
		b.Write(s)
	case ty == cty.Number:
		s, err := ctyjson.Marshal(v, cty.Number)
		if err != nil {
			return false
		}
		b.Write(s)
	case ty == cty.Bool:
		b.WriteString(strconv.FormatBool(v.True()))
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		b.WriteByte('[')
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			if _, e := it.Element(); !canonRef(b, e) {
				return false
			}
		}
		b.WriteByte(']')
	case ty.IsMapType() || ty.IsObjectType():
		type kv struct {
			k string
			v cty.Value
		}
		var kvs []kv
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			kvs = append(kvs, kv{k.AsString(), e})
		}
		sort.Slice(kvs, func(i, j int) bool { return kvs[i].k < kvs[j].k })
		b.WriteByte('{')
		for i, p := range kvs {
			if i > 0 {
				b.WriteByte(',')
			}
			s, _ := json.Marshal(p.k)
			b.Write(s)
			b.WriteByte(':')
			if !canonRef(b, p.v) {
				return false
			}
		}
		b.WriteByte('}')
	default:
		return false
	}
	return true
}

// randCanonValue makes a value of the shapes node arguments take: plain
// and escaped strings, numbers, bools, nulls, unknowns, sensitive parts,
// lists, sets, tuples, maps and objects nested up to depth.
func randCanonValue(r *rand.Rand, depth int) cty.Value {
	words := []string{"", "a", "out/c1", "sh", "-c", "echo x > y", "a\"b", "<&>", "é", "\u2028", "\xff", "tab\t", "B", "b", "a b", "_", "~", "x<y", "p\\q", "\x00"}
	str := func() cty.Value {
		s := words[r.IntN(len(words))]
		if r.IntN(3) == 0 {
			s += words[r.IntN(len(words))]
		}
		return cty.StringVal(s)
	}
	leaf := func() cty.Value {
		switch r.IntN(9) {
		case 0:
			return cty.NumberIntVal(r.Int64N(1<<40) - 1<<39)
		case 1:
			return cty.NumberFloatVal(r.NormFloat64() * 1e3)
		case 2:
			return cty.MustParseNumberVal("0.1")
		case 3:
			return cty.BoolVal(r.IntN(2) == 0)
		case 4:
			return cty.NullVal(cty.String)
		case 5:
			if r.IntN(8) == 0 {
				return cty.UnknownVal(cty.String)
			}
			return str()
		case 6:
			if r.IntN(4) == 0 {
				return str().Mark("sensitive")
			}
			return str()
		default:
			return str()
		}
	}
	if depth == 0 || r.IntN(3) == 0 {
		return leaf()
	}
	n := r.IntN(5)
	switch r.IntN(5) {
	case 0, 1: // tuple or object of mixed values
		elems := make([]cty.Value, n)
		attrs := map[string]cty.Value{}
		for i := range elems {
			elems[i] = randCanonValue(r, depth-1)
			attrs[words[r.IntN(len(words))]] = elems[i]
		}
		if r.IntN(2) == 0 {
			return cty.TupleVal(elems)
		}
		return cty.ObjectVal(attrs)
	default: // list, set or map of strings
		if n == 0 {
			return cty.ListValEmpty(cty.String)
		}
		elems := make([]cty.Value, n)
		m := map[string]cty.Value{}
		for i := range elems {
			elems[i] = str()
			m[str().AsString()] = elems[i]
		}
		switch r.IntN(3) {
		case 0:
			return cty.ListVal(elems)
		case 1:
			return cty.SetVal(elems)
		}
		return cty.MapVal(m)
	}
}

// canonicalJSON writes the same bytes as the json.Marshal path keys were
// made with, over many random values: every existing key stays valid.
func TestCanonicalJSONMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 10))
	for i := range 20000 {
		v := randCanonValue(r, 3)
		got, known := canonicalJSON(v)
		var want bytes.Buffer
		wknown := canonRef(&want, v)
		if known != wknown || (known && string(got) != want.String()) {
			t.Fatalf("value %d %#v:\ncanonicalJSON: %s (known %v)\nreference:     %s (known %v)", i, v, got, known, want.String(), wknown)
		}
	}
}

package dsl

import (
	"fmt"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// An object constructor ({ k = v, ... }) that gives one key twice keeps
// the last value in HCL, without a word: a grid's
// `{ lr_1e3 = 0.001, lr_1e4 = 0.0001, lr_1e3 = 0.01 }` planned two nodes,
// and the 0.001 run never happened. cairn refuses it where it is
// evaluated, naming the key and both places; keys are compared as they
// are evaluated (keys written as expressions too), as text, in NFC (as
// cairn reads all text: "caf\u00e9" and "cafe\u0301" are one key).

// checkObjectKeys returns what replaces the object constructor x (its
// children bounded already): an object whose keys are all written as
// literals, none twice, as nearly every object is, needs no check at
// evaluation, and its keys are known as it is read (staticObject).
func checkObjectKeys(x *hclsyntax.ObjectConsExpr) hclsyntax.Expression {
	var seen map[string]int // for a large object; a small one is scanned
	if len(x.Items) > 16 {
		seen = make(map[string]int, len(x.Items))
	}
	keys := make([]string, len(x.Items))
	var repeats []repeat
	for i, it := range x.Items {
		k, ok := staticKey(it.KeyExpr)
		if !ok {
			return checkedObject{x}
		}
		keys[i] = k
		j, dup := seen[k]
		if seen == nil {
			j = slices.Index(keys[:i], k)
			dup = j >= 0
		} else if !dup {
			seen[k] = i
		}
		if dup {
			repeats = append(repeats, repeat{k, x.Items[j].KeyExpr.Range(), it.KeyExpr.Range()})
		}
	}
	if repeats != nil {
		return &repeatedKeyObject{x, repeats}
	}
	return staticObject{x, keys}
}

// staticObject is an object constructor whose keys are all written as
// literals, none twice, as nearly every object is ({ method = m, seed = s
// }): its keys are the texts found when the file was read, and its values
// are read through ExprValue, where hcl's ObjectConsExpr evaluates each key
// again (a string value made for each) and reads each value through hcl's
// traversal, which puts a copy of each step on the heap. It is otherwise
// hcl's ObjectConsExpr.Value, with its result and diagnostics
// (TestStaticObjectIsObjectConsExpr holds it to them). It embeds the
// original, so walks over the syntax tree see the same children.
type staticObject struct {
	*hclsyntax.ObjectConsExpr
	keys []string // each item's, in NFC
}

// Value implements hcl.Expression.
func (e staticObject) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	vals := make(map[string]cty.Value, len(e.Items))
	var diags hcl.Diagnostics
	for i, it := range e.Items {
		v, d := ExprValue(it.ValueExpr, ctx)
		diags = append(diags, d...)
		vals[e.keys[i]] = v
	}
	return cty.ObjectVal(vals), diags
}

// ObjectConsOf is the object constructor e (an expression or a syntax
// node) is, hcl's or bound (Syntax), if it is one.
func ObjectConsOf(e any) (*hclsyntax.ObjectConsExpr, bool) {
	x, ok := e.(hcl.Expression)
	if !ok {
		return nil, false
	}
	oc, ok := Syntax(x).(*hclsyntax.ObjectConsExpr)
	return oc, ok
}

// ObjectItem is the item of e, an object constructor (hcl's or bound),
// whose key, written as a constant or a bare name (staticKey), match
// takes: the first. ok is false when e is no object constructor, or no
// item's key is taken. Errors about one entry of an object point at it.
func ObjectItem(e hcl.Expression, match func(key string) bool) (hclsyntax.ObjectConsItem, bool) {
	oc, ok := ObjectConsOf(e)
	if !ok {
		return hclsyntax.ObjectConsItem{}, false
	}
	for _, it := range oc.Items {
		if k, ok := staticKey(it.KeyExpr); ok && match(k) {
			return it, true
		}
	}
	return hclsyntax.ObjectConsItem{}, false
}

// staticKey is the key k an object item's key expression gives in any
// context: a bare name, or a constant (a quoted string, a number, a
// bool). ok is false for a key computed from references or calls, and
// for a constant that is no key (null): HCL says what is wrong with it.
func staticKey(e hclsyntax.Expression) (k string, ok bool) {
	ke, isKey := e.(*hclsyntax.ObjectConsKeyExpr)
	if !isKey {
		return "", false
	}
	if !ke.ForceNonLiteral {
		if name := hcl.ExprAsKeyword(ke.Wrapped); name != "" {
			return cty.StringVal(name).AsString(), true // in NFC
		}
	}
	if !constant(ke.Wrapped) {
		return "", false
	}
	v, diags := ke.Wrapped.Value(nil)
	if diags.HasErrors() {
		return "", false
	}
	return keyText(v)
}

// keyText is the text of an evaluated key, as HCL makes it a key: false
// for a key HCL refuses or cannot know yet (null, unknown, not a string).
func keyText(v cty.Value) (string, bool) {
	v, _ = v.UnmarkDeep()
	if !v.IsKnown() || v.IsNull() {
		return "", false
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil || !s.IsKnown() || s.IsNull() {
		return "", false
	}
	return s.AsString(), true
}

// duplicateKey is the error for key k given at first and again at again;
// a sensitive key is not shown.
func duplicateKey(k string, sensitive bool, first, again hcl.Range) *hcl.Diagnostic {
	what := fmt.Sprintf("The key %q is", k)
	if sensitive {
		what = "A key (sensitive, so not shown) is"
	}
	detail := fmt.Sprintf("%s given twice in this object: at %s, and again at %s. An object holds one value for each key, so one of the two would be dropped without a word. Rename one of the keys, or remove one of the items.", what, Pos(first), Pos(again))
	for _, r := range k {
		if r >= 0x80 {
			detail += " Keys are compared as text in Unicode's composed form (NFC), as cairn reads all text: \"\\u00e9\" and \"e\\u0301\" (e and a combining accent) are one key."
			break
		}
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Duplicate object key",
		Detail:   detail,
		Subject:  again.Ptr(),
		Context:  hcl.RangeBetween(first, again).Ptr(),
	}
}

// repeatedKeyObject is an object constructor that writes a key twice as
// a literal: its evaluation is that error, for each key given again. It
// embeds the original, so walks over the syntax tree see the same
// children.
type repeatedKeyObject struct {
	*hclsyntax.ObjectConsExpr
	repeats []repeat
}

// A repeat is a key given again.
type repeat struct {
	key          string
	first, again hcl.Range
}

// Value implements hcl.Expression.
func (e *repeatedKeyObject) Value(*hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	diags := make(hcl.Diagnostics, len(e.repeats))
	for i, r := range e.repeats {
		diags[i] = duplicateKey(r.key, false, r.first, r.again)
	}
	return cty.DynamicVal, diags
}

// checkedObject is an object constructor with a key written as an
// expression: its keys are evaluated once, compared, and then given to
// the constructor as the values they are.
type checkedObject struct{ *hclsyntax.ObjectConsExpr }

// Value implements hcl.Expression.
func (e checkedObject) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	items := make([]hclsyntax.ObjectConsItem, len(e.Items))
	seen := make(map[string]int, len(e.Items))
	marked := make([]bool, len(e.Items))
	for i, it := range e.Items {
		k, d := it.KeyExpr.Value(ctx)
		if d.HasErrors() {
			// HCL says what is wrong, as it does without the check.
			return e.ObjectConsExpr.Value(ctx)
		}
		diags = append(diags, d...)
		items[i] = hclsyntax.ObjectConsItem{
			KeyExpr:   &hclsyntax.LiteralValueExpr{Val: k, SrcRange: it.KeyExpr.Range()},
			ValueExpr: it.ValueExpr,
		}
		text, ok := keyText(k)
		if !ok {
			continue
		}
		marked[i] = k.ContainsMarked()
		if j, dup := seen[text]; dup {
			return cty.DynamicVal, append(diags, duplicateKey(text, marked[i] || marked[j], e.Items[j].KeyExpr.Range(), it.KeyExpr.Range()))
		}
		seen[text] = i
	}
	oc := *e.ObjectConsExpr
	oc.Items = items
	v, d := oc.Value(ctx)
	return v, append(diags, d...)
}

// repeatedKey finds the first key written twice as a literal in an
// object constructor of e, a value given outside a file (--var), which
// is evaluated as it is parsed, not bounded.
func repeatedKey(e hclsyntax.Expression) (r repeat, dup bool) {
	_ = hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		x, ok := n.(*hclsyntax.ObjectConsExpr)
		if !ok || dup {
			return nil
		}
		if o, ok := checkObjectKeys(x).(*repeatedKeyObject); ok {
			r, dup = o.repeats[0], true
		}
		return nil
	})
	return r, dup
}

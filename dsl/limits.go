package dsl

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"sync/atomic"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Limits that keep a pipeline file from stalling or crashing cairn. A real
// pipeline stays far below each; they exist so that a mistake (or a fuzzer)
// gets a diagnostic instead of a hang, an exhausted memory or a stack
// overflow.
const (
	// MaxNesting bounds how deeply brackets, templates and operator
	// chains may nest in one expression. The parser and the evaluator
	// recurse once per level.
	MaxNesting = 256
)

// MaxIterations bounds the elements that for expressions may visit in one
// evaluation (one local value, one node's attributes, ...), nested loops
// counted by their product. Fuzzing lowers it to keep each input fast.
var MaxIterations int64 = 1 << 18

// MaxTotalIterations bounds the for-expression elements of all the
// evaluations of one scope (one cairn command): a loop within
// MaxIterations, repeated in each of thousands of nodes, is stopped too.
var MaxTotalIterations int64 = 1 << 26

// CheckNesting scans src token by token and reports an expression nested
// deeper than MaxNesting, before the parser recurses into it. Each open
// bracket, quote or template sequence counts one level, and so does each
// operator chained at one bracket level (a + b + c nests as (a + b) + c).
func CheckNesting(src []byte, filename string) hcl.Diagnostics {
	if b, ok := nestingBound(src); ok && b <= MaxNesting {
		return nil // no token can be deeper than the bound
	}
	return checkNestingTokens(src, filename)
}

// checkNestingTokens is CheckNesting on the lexer's tokens.
func checkNestingTokens(src []byte, filename string) hcl.Diagnostics {
	_, over, invalid := tokenNesting(src, filename, MaxNesting)
	if invalid != nil {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid character encoding",
			Detail:   "All input files must be UTF-8 encoded. Ensure that UTF-8 encoding is selected in your editor.",
			Subject:  invalid,
		}}
	}
	if over == nil {
		return nil
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Expression nested too deeply",
		Detail: fmt.Sprintf("This expression nests brackets, templates or operators more than %d levels deep: level %d starts at line %d, column %d. Split it into local values.",
			MaxNesting, MaxNesting+1, over.Start.Line, over.Start.Column),
		Subject: over,
	}}
}

// nestingWindow is about how many bytes of a file tokenNesting lexes at a
// time: memory for the tokens of that many, not of the whole file.
var nestingWindow = 8 << 10

// tokenNesting returns the deepest nesting of src's tokens and the first
// token nested deeper than limit (nil if none), where it stops. It lexes
// src a window at a time, cut where the byte scan knows the lexer starts
// afresh (scanNesting's lexCut), and stops lexing at the first window
// that holds a token too deep: a huge file with an error near its start
// costs the memory of the start only. Past where the byte scan gives up
// (a heredoc, a block comment), the rest is lexed at once.
//
// The byte scan does not know how the lexer reads invalid UTF-8, which
// no pipeline file may hold: only the bytes before the first invalid
// sequence are checked, and when none of them is too deep, invalid is
// where that sequence starts.
func tokenNesting(src []byte, filename string, limit int) (most int, over, invalid *hcl.Range) {
	valid := len(src)
	if !utf8.Valid(src) {
		valid = InvalidUTF8At(src)
	}
	type level struct {
		open hclsyntax.TokenType
		ops  int
	}
	stack := []level{{}}
	depth := 0 // len(stack)-1 plus the ops of every level
	start, pos := 0, hcl.InitialPos
	// lex counts the tokens of src[start:end] and moves start to end; it
	// reports whether no token was too deep.
	lex := func(end int) bool {
		toks, _ := hclsyntax.LexConfig(src[start:end], filename, pos)
		start, pos = end, toks[len(toks)-1].Range.Start // the end of file
		for _, t := range toks {
			top := &stack[len(stack)-1]
			switch t.Type {
			case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
				hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl,
				hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
				stack = append(stack, level{open: t.Type})
				depth++
			case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
				hclsyntax.TokenTemplateSeqEnd, hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
				if len(stack) > 1 {
					depth -= 1 + top.ops
					stack = stack[:len(stack)-1]
				}
			case hclsyntax.TokenComma:
				depth -= top.ops
				top.ops = 0
			case hclsyntax.TokenNewline:
				// A newline ends an expression in a body or an object, not
				// inside parentheses or a list.
				if top.open == 0 || top.open == hclsyntax.TokenOBrace {
					depth -= top.ops
					top.ops = 0
				}
			case hclsyntax.TokenPlus, hclsyntax.TokenMinus, hclsyntax.TokenStar, hclsyntax.TokenSlash,
				hclsyntax.TokenPercent, hclsyntax.TokenAnd, hclsyntax.TokenOr, hclsyntax.TokenBang,
				hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual, hclsyntax.TokenLessThan,
				hclsyntax.TokenLessThanEq, hclsyntax.TokenGreaterThan, hclsyntax.TokenGreaterThanEq,
				hclsyntax.TokenQuestion:
				top.ops++
				depth++
			}
			most = max(most, depth)
			if depth > limit {
				over = t.Range.Ptr()
				return false
			}
		}
		return true
	}
	scanNesting(src[:valid], nil, func(i int) bool {
		return i-start < nestingWindow || lex(i)
	})
	if over == nil && lex(valid) && valid < len(src) {
		end := pos
		end.Byte++
		end.Column++
		invalid = &hcl.Range{Filename: filename, Start: pos, End: end}
	}
	return most, over, invalid
}

// encodingDiag is the one error for a file (src) the parser found not
// UTF-8 (diags hold its "Invalid character encoding" errors; bytes that
// are not UTF-8 in a comment pass): the first place, and UTF-16 named
// when the file starts with its byte-order mark. nil when diags hold none.
func encodingDiag(src []byte, diags hcl.Diagnostics) *hcl.Diagnostic {
	for _, d := range diags {
		if d.Summary != "Invalid character encoding" || d.Subject == nil {
			continue
		}
		detail := "Pipeline files are UTF-8 text; this one holds a byte that is not UTF-8 here. Save it as UTF-8 in your editor."
		if bytes.HasPrefix(src, []byte{0xFF, 0xFE}) || bytes.HasPrefix(src, []byte{0xFE, 0xFF}) {
			detail = "This file is UTF-16 (it starts with UTF-16's byte-order mark); pipeline files are UTF-8 text. Save it as UTF-8 in your editor (iconv -f UTF-16 -t UTF-8 also converts it)."
		}
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: d.Summary, Detail: detail, Subject: d.Subject}
	}
	return nil
}

// InvalidUTF8At is the offset of the first invalid UTF-8 sequence in src,
// len(src) when there is none.
func InvalidUTF8At(src []byte) int {
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(src)
}

// iterBudget counts the for-expression elements left to one evaluation.
type iterBudget struct {
	left     atomic.Int64
	pool     *atomic.Int64 // shared by a scope's evaluations; nil for none
	reported atomic.Bool
}

var budgetType = cty.Capsule("evaluation budget", reflect.TypeOf(iterBudget{}))

// budgetName is the budget's name in an evaluation context: not an
// identifier, so no expression can refer to it.
const budgetName = "\x00budget"

func newBudget(pool *atomic.Int64) cty.Value {
	b := &iterBudget{pool: pool}
	b.left.Store(MaxIterations)
	return cty.CapsuleVal(budgetType, b)
}

func budgetOf(ctx *hcl.EvalContext) *iterBudget {
	for c := ctx; c != nil; c = c.Parent() {
		if v, ok := c.Variables[budgetName]; ok {
			return v.EncapsulatedValue().(*iterBudget)
		}
	}
	return nil
}

// boundedFor is a for expression that charges the elements it visits to
// the evaluation's budget and refuses to run past it. It embeds the
// original, so walks over the syntax tree (references, diagnostics) see
// the same children.
type boundedFor struct {
	*hclsyntax.ForExpr
}

// Value implements hcl.Expression.
func (e *boundedFor) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	b := budgetOf(ctx)
	if b == nil {
		// Evaluation without a context (static attributes): give the
		// expression a budget of its own, shared by loops nested in it.
		ctx = &hcl.EvalContext{Variables: map[string]cty.Value{budgetName: newBudget(nil)}}
		b = budgetOf(ctx)
	}
	if b.left.Load() < 0 {
		// Over budget and reported: the loops around this one end
		// quickly instead of evaluating more.
		return cty.DynamicVal, nil
	}
	var coll cty.Value
	var diags hcl.Diagnostics
	// Once the scope's budget is spent, each evaluation is refused before
	// its collection is made: a node's range(1000), made again for each
	// of a thousand nodes, cost seconds for loops that would not run.
	over := b.pool != nil && b.pool.Load() < 0
	if over {
		b.left.Store(-1)
	} else {
		coll, diags = e.CollExpr.Value(ctx)
		if diags.HasErrors() {
			return cty.DynamicVal, diags
		}
		// Each element visited costs one; a loop over nothing costs one
		// too, so that loops of empty loops still end.
		n := int64(1)
		if raw, _ := coll.Unmark(); raw.IsKnown() && !raw.IsNull() && raw.CanIterateElements() {
			n = max(1, int64(raw.LengthInt()))
		}
		over = b.left.Add(-n) < 0
		if b.pool != nil && b.pool.Add(-n) < 0 {
			over = true
			b.left.Store(-1)
		}
	}
	if over {
		if b.reported.Swap(true) {
			// Reported once for this evaluation: the loops around this
			// one end quickly instead of repeating the error.
			return cty.DynamicVal, diags
		}
		detail := fmt.Sprintf("The for expressions of this evaluation visit more than %d elements in all (nested loops multiply). Narrow the collections or split the work into stages.", MaxIterations)
		if b.pool != nil && b.pool.Load() < 0 {
			detail = fmt.Sprintf("The for expressions of this pipeline, over all its nodes, visit more than %d elements. Narrow the collections or split the work into stages.", MaxTotalIterations)
		}
		return cty.DynamicVal, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Too many iterations",
			Detail:   detail,
			Subject:  e.CollExpr.Range().Ptr(),
			Context:  e.SrcRange.Ptr(),
		})
	}
	if v, ok := e.parallelFor(ctx, coll, b); ok {
		return v, diags
	}
	fe := *e.ForExpr
	fe.CollExpr = &hclsyntax.LiteralValueExpr{Val: coll, SrcRange: e.CollExpr.Range()}
	v, d := fe.Value(ctx)
	return v, append(diags, d...)
}

// boundBody replaces every for expression in a parsed body with one that
// respects the iteration budget.
func boundBody(b *hclsyntax.Body) {
	if b == nil {
		return
	}
	for _, a := range b.Attributes {
		a.Expr = boundExpr(a.Expr)
	}
	for _, blk := range b.Blocks {
		boundBody(blk.Body)
	}
}

// boundFile applies boundBody to a parsed native-syntax file.
func boundFile(f *hcl.File) {
	if f == nil {
		return
	}
	if b, ok := f.Body.(*hclsyntax.Body); ok {
		boundBody(b)
	}
}

func boundExpr(e hclsyntax.Expression) hclsyntax.Expression {
	if w := boundWrap(e); w != nil {
		return w
	}
	return e
}

// boundIn bounds *e in place, writing only what is replaced: most nodes
// stay, and a large syntax tree is not written over.
func boundIn(e *hclsyntax.Expression) {
	if w := boundWrap(*e); w != nil {
		*e = w
	}
}

// boundWrap bounds e's children in place and returns what replaces e, or
// nil where e stays.
func boundWrap(e hclsyntax.Expression) hclsyntax.Expression {
	switch x := e.(type) {
	case nil:
		return nil
	case *hclsyntax.ForExpr:
		boundIn(&x.CollExpr)
		boundIn(&x.KeyExpr)
		boundIn(&x.ValExpr)
		boundIn(&x.CondExpr)
		return &boundedFor{x}
	case *hclsyntax.ParenthesesExpr:
		boundIn(&x.Expression)
	case *hclsyntax.RelativeTraversalExpr:
		boundIn(&x.Source)
		return relTraversal{x}
	case *hclsyntax.FunctionCallExpr:
		for i := range x.Args {
			boundIn(&x.Args[i])
		}
		return checkedCall{x}
	case *hclsyntax.ConditionalExpr:
		boundIn(&x.Condition)
		boundIn(&x.TrueResult)
		boundIn(&x.FalseResult)
		if mayBeTuple(x.TrueResult) && mayBeTuple(x.FalseResult) {
			return tupleCond{x}
		}
	case *hclsyntax.IndexExpr:
		boundIn(&x.Collection)
		boundIn(&x.Key)
		return indexed{x}
	case *hclsyntax.TupleConsExpr:
		for i := range x.Exprs {
			boundIn(&x.Exprs[i])
		}
		return tupleCons{x}
	case *hclsyntax.ObjectConsExpr:
		for i := range x.Items {
			boundIn(&x.Items[i].KeyExpr)
			boundIn(&x.Items[i].ValueExpr)
		}
		return checkObjectKeys(x)
	case *hclsyntax.ObjectConsKeyExpr:
		boundIn(&x.Wrapped)
	case *hclsyntax.SplatExpr:
		boundIn(&x.Source)
		boundIn(&x.Each)
	case *hclsyntax.BinaryOpExpr:
		boundIn(&x.LHS)
		boundIn(&x.RHS)
		switch x.Op {
		case hclsyntax.OpAdd, hclsyntax.OpSubtract, hclsyntax.OpMultiply, hclsyntax.OpDivide, hclsyntax.OpModulo:
			return checkedOp{x}
		}
	case *hclsyntax.LiteralValueExpr:
		if !NumbersInRange(x.Val) {
			return checkedLiteral{x}
		}
	case *hclsyntax.UnaryOpExpr:
		boundIn(&x.Val)
	case *hclsyntax.TemplateExpr:
		for i := range x.Parts {
			boundIn(&x.Parts[i])
		}
		if w := boundTemplate(x); w != nil {
			return w
		}
	case *hclsyntax.TemplateJoinExpr:
		boundIn(&x.Tuple)
	case *hclsyntax.TemplateWrapExpr:
		boundIn(&x.Wrapped)
	}
	return nil
}

// Numbers are bounded to a float64's range (about 1.8e308 at most, 4.9e-324
// at least when not zero): cty's numbers are arbitrary-precision, and
// writing one like 1e10000000 as text, in a template or an argument, takes
// minutes.
const (
	maxNumberExp = 1024  // big.Float's exponent of the largest float64
	minNumberExp = -1073 // of the smallest nonzero one
)

// NumbersInRange reports whether every known number in v is within a
// float64's range.
func NumbersInRange(v cty.Value) bool {
	if v == cty.NilVal {
		return true
	}
	ty := v.Type()
	if ty.Equals(cty.String) || ty.Equals(cty.Bool) {
		return true
	}
	if ty.Equals(cty.Number) && !v.IsMarked() {
		// A number, as every number literal is: no walk.
		return !v.IsKnown() || v.IsNull() || floatInRange(v.AsBigFloat())
	}
	if !mayHoldNumber(ty) {
		// No walk where the type has no room for a number: walking a
		// set (toset of a grid's keys) sorts it.
		return true
	}
	return numbersInRange(v)
}

// numbersInRange is NumbersInRange for a value whose type may hold a
// number: it visits what cty.Walk visits (the known, non-null values,
// unmarked, below the known, non-null ones), but only the attributes and
// elements whose types may hold a number, and makes no path: a job's
// object of strings and lists of strings, merged for each of a grid's
// jobs, is not walked for its one number.
func numbersInRange(v cty.Value) bool {
	v, _ = v.Unmark()
	if !v.IsKnown() || v.IsNull() {
		return true
	}
	ty := v.Type()
	switch {
	case ty == cty.Number:
		return floatInRange(v.AsBigFloat())
	case ty.IsObjectType():
		for name, aty := range ty.AttributeTypes() {
			if mayHoldNumber(aty) && !numbersInRange(v.GetAttr(name)) {
				return false
			}
		}
	case ty.IsTupleType() || ty.IsListType():
		for e := range Elements(v) {
			if mayHoldNumber(e.Type()) && !numbersInRange(e) {
				return false
			}
		}
	case ty.IsSetType() || ty.IsMapType():
		for it := v.ElementIterator(); it.Next(); {
			if _, e := it.Element(); !numbersInRange(e) {
				return false
			}
		}
	}
	return true
}

// mayHoldNumber reports whether a value of type ty can hold a number:
// its type is number, or has one (or a type known only with the value)
// among its elements' or attributes' types.
func mayHoldNumber(ty cty.Type) bool {
	switch {
	case ty == cty.String || ty == cty.Bool:
		return false
	case ty.IsListType() || ty.IsSetType() || ty.IsMapType():
		return mayHoldNumber(ty.ElementType())
	case ty.IsTupleType():
		for _, et := range ty.TupleElementTypes() {
			if mayHoldNumber(et) {
				return true
			}
		}
		return false
	case ty.IsObjectType():
		for _, at := range ty.AttributeTypes() {
			if mayHoldNumber(at) {
				return true
			}
		}
		return false
	}
	return true // number, dynamic, capsule
}

// floatInRange is NumbersInRange for one number.
func floatInRange(f *big.Float) bool {
	if f.IsInf() {
		return false
	}
	if f.Sign() == 0 {
		return true
	}
	if e := f.MantExp(nil); e < maxNumberExp && e > minNumberExp {
		return true // well inside
	}
	// At the edges, as a JSON reader would read it: rounded to the
	// nearest float64, which must be neither infinite nor zero.
	x, _ := f.Float64()
	return !math.IsInf(x, 0) && x != 0
}

// checkedCall, checkedOp and checkedLiteral refuse a number out of a
// float64's range that a function call, arithmetic or a literal yields,
// before anything writes it out as text. Each embeds the original, so
// walks over the syntax tree (and static analysis: a type expression is a
// call) see the same expression.
type checkedCall struct{ *hclsyntax.FunctionCallExpr }

type checkedOp struct{ *hclsyntax.BinaryOpExpr }

type checkedLiteral struct{ *hclsyntax.LiteralValueExpr }

// Value implements hcl.Expression.
func (e checkedCall) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	v, diags := e.call(ctx)
	return checkNumbers(v, diags, e.Range())
}

// Value implements hcl.Expression.
func (e checkedOp) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if v, ok := e.arithmetic(ctx); ok {
		return checkNumbers(v, nil, e.Range())
	}
	v, diags := e.BinaryOpExpr.Value(ctx)
	return checkNumbers(v, diags, e.Range())
}

// arithmetic is the sum, difference or product of two known, non-null,
// unmarked numbers, from operands that evaluate without effects (literals,
// references, such operations of them): the value hcl computes through the
// operator's function (which converts, unmarks and refines before calling
// the same cty.Value method), without that call's checks and allocations,
// which cost the most of a grid's keys (p[0] * 50 + p[1] for each of
// thousands of p). ok is false for anything else, opposing infinities
// included: hcl then evaluates the operation as always (the operands
// again, which have no effects) and reports what is wrong.
func (e checkedOp) arithmetic(ctx *hcl.EvalContext) (v cty.Value, ok bool) {
	var op func(a, b cty.Value) cty.Value
	switch e.Op {
	case hclsyntax.OpAdd:
		op = cty.Value.Add
	case hclsyntax.OpSubtract:
		op = cty.Value.Subtract
	case hclsyntax.OpMultiply:
		op = cty.Value.Multiply
	default:
		return cty.NilVal, false
	}
	if !effectless(e.LHS) || !effectless(e.RHS) {
		return cty.NilVal, false
	}
	a, diags := ExprValue(e.LHS, ctx)
	if len(diags) > 0 || !plainNumber(a) {
		return cty.NilVal, false
	}
	b, diags := ExprValue(e.RHS, ctx)
	if len(diags) > 0 || !plainNumber(b) {
		return cty.NilVal, false
	}
	defer func() {
		// big.Float panics on opposing infinities (+Inf + -Inf, 0 * Inf).
		if recover() != nil {
			v, ok = cty.NilVal, false
		}
	}()
	return op(a, b), true
}

// effectless reports whether evaluating e has no effect beyond its value:
// a literal, a reference, or arithmetic of such.
func effectless(e hcl.Expression) bool {
	switch x := e.(type) {
	case checkedLiteral, *hclsyntax.LiteralValueExpr, *hclsyntax.ScopeTraversalExpr:
		return true
	case checkedOp:
		return effectless(x.LHS) && effectless(x.RHS)
	}
	return false
}

// plainNumber reports whether v is a known, non-null, unmarked number.
func plainNumber(v cty.Value) bool {
	return v.Type().Equals(cty.Number) && v.IsKnown() && !v.IsNull() && !v.IsMarked()
}

// Value implements hcl.Expression.
func (e checkedLiteral) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	v, diags := e.LiteralValueExpr.Value(ctx)
	return checkNumbers(v, diags, e.Range())
}

func checkNumbers(v cty.Value, diags hcl.Diagnostics, rng hcl.Range) (cty.Value, hcl.Diagnostics) {
	if diags.HasErrors() || NumbersInRange(v) {
		return v, diags
	}
	return cty.DynamicVal, append(diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Number out of range",
		Detail:   "This expression yields a number beyond what cairn handles (about 1.8e308 in size at most, 4.9e-324 at least when not zero).",
		Subject:  rng.Ptr(),
	})
}

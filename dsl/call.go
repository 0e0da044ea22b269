package dsl

import (
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/customdecode"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
)

// callSpec is what a call needs of a function's signature, read once for
// the language's own functions: hcl asks the function for copies of its
// parameters on every call (Params, VarParam).
type callSpec struct {
	params   []function.Parameter
	varParam *function.Parameter
	// decoded is true when a parameter takes its argument as an
	// expression (try, can): hcl alone evaluates such calls.
	decoded bool
}

// callSpecs are the callSpecs of the functions every function table
// holds alike (the language's own, made once): a table's file functions
// and a kind's are made for each scope, and theirs are read at each call,
// as hcl does, rather than kept for every scope a process ever makes.
var callSpecs = sync.OnceValue(func() map[function.Function]*callSpec {
	specs := map[function.Function]*callSpec{}
	for _, f := range ownFunctions() {
		specs[f] = newCallSpec(f)
	}
	return specs
})

// callSpecOf is f's callSpec.
func callSpecOf(f function.Function) *callSpec {
	if s, ok := callSpecs()[f]; ok {
		return s
	}
	return newCallSpec(f)
}

func newCallSpec(f function.Function) *callSpec {
	s := &callSpec{params: f.Params(), varParam: f.VarParam()}
	for _, p := range s.params {
		s.decoded = s.decoded || customdecode.CustomExpressionDecoderForType(p.Type) != nil
	}
	if s.varParam != nil {
		s.decoded = s.decoded || customdecode.CustomExpressionDecoderForType(s.varParam.Type) != nil
	}
	return s
}

// call is the call's value and diagnostics, as FunctionCallExpr.Value
// gives them, evaluated without hcl's copies where it can be: hcl copies
// the function's parameters, and each step of an argument's traversal,
// on every call. The function is the one named in the innermost context
// that has a function table; each argument's value (ExprValue) is
// converted to its parameter's type, and the function called with them.
// Anything else is FunctionCallExpr.Value's to decide, diagnostics and
// all: before any argument is evaluated, a call with an argument
// expanded (f(xs...)), a parameter taking an expression (try, can), a
// function that is not there or a count of arguments it does not take;
// after, an argument with something to say, one that does not convert or
// a call that fails, with the arguments' values and diagnostics standing
// in for them (each argument is evaluated once, as hcl does: a for
// expression charges the evaluation's budget once).
func (e checkedCall) call(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if e.ExpandFinal {
		return e.FunctionCallExpr.Value(ctx)
	}
	var f function.Function
	found := false
	for c := ctx; c != nil && !found; c = c.Parent() {
		if c.Functions != nil {
			f, found = c.Functions[e.Name]
		}
	}
	if !found {
		return e.FunctionCallExpr.Value(ctx)
	}
	s := callSpecOf(f)
	if s.decoded || len(e.Args) < len(s.params) || (s.varParam == nil && len(e.Args) > len(s.params)) {
		return e.FunctionCallExpr.Value(ctx)
	}
	args := make([]cty.Value, len(e.Args))
	var argDiags []hcl.Diagnostics // each argument's, where one has any
	for i, a := range e.Args {
		v, diags := ExprValue(a, ctx)
		if len(diags) > 0 && argDiags == nil {
			argDiags = make([]hcl.Diagnostics, len(e.Args))
		}
		if argDiags != nil {
			argDiags[i] = diags
		}
		args[i] = v
	}
	if argDiags != nil {
		return e.evaluatedCall(ctx, args, argDiags)
	}
	// Converted in place: a value converted to its parameter's type
	// converts to itself, where hcl converts the stand-ins again.
	for i, v := range args {
		param := s.varParam
		if i < len(s.params) {
			param = &s.params[i]
		}
		cv, err := convert.Convert(v, param.Type)
		if err != nil {
			return e.evaluatedCall(ctx, args, nil)
		}
		args[i] = cv
	}
	v, err := f.Call(args)
	if err != nil {
		return e.evaluatedCall(ctx, args, nil)
	}
	return v, nil
}

// evaluatedCall is FunctionCallExpr.Value of the call with its arguments
// already evaluated (args, and diags where any has some): what it
// reports names the expressions written.
func (e checkedCall) evaluatedCall(ctx *hcl.EvalContext, args []cty.Value, diags []hcl.Diagnostics) (cty.Value, hcl.Diagnostics) {
	in := *e.FunctionCallExpr
	stand := make([]evaluatedExpr, len(args))
	in.Args = make([]hclsyntax.Expression, len(args))
	for i, v := range args {
		stand[i] = evaluatedExpr{Expression: e.Args[i], val: v}
		if diags != nil {
			stand[i].diags = diags[i]
		}
		in.Args[i] = &stand[i]
	}
	v, out := in.Value(ctx)
	for _, d := range out {
		switch de := d.Expression.(type) {
		case *hclsyntax.FunctionCallExpr:
			if de == &in {
				d.Expression = e.FunctionCallExpr
			}
		case *evaluatedExpr:
			d.Expression = de.Expression
		}
	}
	// Their ranges are copies: past the count of arguments, no diagnostic
	// points into the stand-in call.
	return v, out
}

package dsl

import "github.com/hashicorp/hcl/v2"

// Syntax is hcl's syntax node under e, where e is one of the expressions
// the loader binds in its place (a tuple, a call, a template, a
// conditional bound to the evaluation's budget or read faster): a check
// that tells expressions apart by their syntax sees hcl's types. Any
// other expression is returned as it is.
func Syntax(e hcl.Expression) hcl.Expression {
	switch x := e.(type) {
	case tupleCons:
		return x.TupleConsExpr
	case tupleCond:
		return x.ConditionalExpr
	case indexed:
		return x.IndexExpr
	case relTraversal:
		return x.RelativeTraversalExpr
	case *boundedFor:
		return x.ForExpr
	case checkedCall:
		return x.FunctionCallExpr
	case checkedOp:
		return x.BinaryOpExpr
	case checkedLiteral:
		return x.LiteralValueExpr
	case staticObject:
		return x.ObjectConsExpr
	case *repeatedKeyObject:
		return x.ObjectConsExpr
	case checkedObject:
		return x.ObjectConsExpr
	case plainTemplate:
		return x.TemplateExpr
	case *textTemplate:
		return x.TemplateExpr
	case *evaluatedExpr:
		return Syntax(x.Expression)
	}
	return e
}

package dsl

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// SensitiveMark marks values of sensitive variables and everything derived
// from them. Marked values never appear in plan output, logs, journals or
// keys (keys hold their digest).
const SensitiveMark = "sensitive"

// VarArg is one --var or --var-file flag, in command-line order.
type VarArg struct {
	File  bool   // --var-file
	Value string // "name=value" for --var, a path for --var-file
}

// VarInputs are the places variable values come from. Precedence, lowest
// first: the declared default, CAIRN_VAR_<name> environment variables, then
// --var-file and --var in the order given (a later one wins).
type VarInputs struct {
	Env  []string // os.Environ() form
	Args []VarArg
	// Unknown makes a variable without a default and without a value
	// unknown, of its declared type, instead of an error: validate checks
	// what does not need the value, as terraform validate does.
	Unknown bool
}

type varValue struct {
	val    cty.Value
	source string
	rng    *hcl.Range
}

// ResolveVariables computes every variable's value and runs its validations.
func (c *Config) ResolveVariables(in VarInputs, parser *hclparse.Parser) (map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	set := map[string]varValue{}

	parseRaw := func(name, raw, source string) {
		v, ok := c.Variables[name]
		if !ok {
			return
		}
		var val cty.Value
		if v.Type.IsPrimitiveType() || v.Type == cty.DynamicPseudoType && !looksLikeExpr(raw) {
			val = cty.StringVal(raw)
		} else {
			expr, d := hclsyntax.ParseExpression([]byte(raw), source, hcl.InitialPos)
			if d.HasErrors() {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  fmt.Sprintf("Invalid value for variable %q", name),
					Detail:   fmt.Sprintf("The value from %s is not a valid expression for type %s: %s", source, v.Type.FriendlyName(), d.Error()),
					Extra:    ValueInput{Source: source},
				})
				return
			}
			ev, d := expr.Value(nil)
			if d.HasErrors() {
				// A bare word ("not-a-list") parses as a reference; say
				// what a value of the type looks like instead.
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  fmt.Sprintf("Invalid value for variable %q", name),
					Detail: fmt.Sprintf("The value from %s is not a literal value of type %s (%s). Write it in HCL syntax, like [\"a\", \"b\"] for a list or { key = \"value\" } for a map or object.",
						source, v.Type.FriendlyNameForConstraint(), strings.TrimSuffix(d[0].Summary, ".")),
					Extra: ValueInput{Source: source},
				})
				return
			}
			val = ev
		}
		set[name] = varValue{val: val, source: source}
	}

	for _, kv := range in.Env {
		if !strings.HasPrefix(kv, "CAIRN_VAR_") {
			continue
		}
		k, val, _ := strings.Cut(strings.TrimPrefix(kv, "CAIRN_VAR_"), "=")
		parseRaw(k, val, "environment variable CAIRN_VAR_"+k)
	}
	for _, a := range in.Args {
		if !a.File {
			k, val, ok := strings.Cut(a.Value, "=")
			if !ok || k == "" {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid --var",
					Detail:   fmt.Sprintf("--var takes name=value; got %q.", a.Value),
					Extra:    ValueInput{Source: "--var"},
				})
				continue
			}
			k = strings.TrimSpace(k)
			if _, ok := c.Variables[k]; !ok {
				dg := undeclared(k, "--var", c)
				dg.Extra = ValueInput{Source: "--var " + k}
				diags = append(diags, dg)
				continue
			}
			parseRaw(k, val, "--var "+k)
			continue
		}
		var f *hcl.File
		var d hcl.Diagnostics
		c.Reads.Note(a.Value)
		if strings.HasSuffix(a.Value, ".json") {
			f, d = parser.ParseJSONFile(a.Value)
		} else if src, err := os.ReadFile(a.Value); err != nil {
			d = hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Cannot read variable file",
				Detail:   fmt.Sprintf("%s. --var-file takes an HCL (.hcl, .tfvars) or JSON (.json) file of name = value lines.", err),
			}}
		} else if d = CheckNesting(src, a.Value); !d.HasErrors() {
			f, d = parser.ParseHCL(src, a.Value)
			boundFile(f)
		}
		diags = append(diags, d...)
		if f == nil || d.HasErrors() {
			if len(d) == 0 {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read variable file", Detail: a.Value})
			}
			continue
		}
		attrs, d := f.Body.JustAttributes()
		diags = append(diags, d...)
		for name, attr := range attrs {
			if _, ok := c.Variables[name]; !ok {
				dg := undeclared(name, "the variable file "+a.Value, c)
				dg.Subject = attr.NameRange.Ptr()
				dg.Extra = ValueInput{Source: a.Value}
				diags = append(diags, dg)
				continue
			}
			val, d := attr.Expr.Value(nil)
			diags = append(diags, d...)
			if !d.HasErrors() {
				set[name] = varValue{val: val, source: a.Value, rng: attr.Expr.Range().Ptr()}
			}
		}
	}

	vals := map[string]cty.Value{}
	for _, name := range c.VarOrder {
		v := c.Variables[name]
		given, ok := set[name]
		var val cty.Value
		switch {
		case ok:
			val = given.val
			if v.TypeDefaults != nil {
				val = v.TypeDefaults.Apply(val)
			}
			conv, err := convert.Convert(val, v.Type)
			if err != nil {
				what := err.Error()
				var pe cty.PathError
				if errors.As(err, &pe) && len(pe.Path) > 0 {
					what = fmt.Sprintf("at %s, %s", pathString(name, pe.Path), what)
				}
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  fmt.Sprintf("Invalid value for variable %q", name),
					Detail:   fmt.Sprintf("The value from %s does not fit the type %s: %s.", given.source, v.Type.FriendlyName(), what),
					Subject:  given.rng,
					Context:  v.DeclRange.Ptr(),
					Extra:    ValueInput{Source: given.source},
				})
				continue
			}
			if !NumbersInRange(conv) {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  fmt.Sprintf("Invalid value for variable %q", name),
					Detail:   fmt.Sprintf("The value from %s holds a number beyond what cairn handles (about 1.8e308 in size at most, 4.9e-324 at least when not zero).", given.source),
					Subject:  given.rng,
					Context:  v.DeclRange.Ptr(),
					Extra:    ValueInput{Source: given.source},
				})
				continue
			}
			val = conv
		case v.HasDefault:
			val = v.Default
		case in.Unknown:
			val = cty.UnknownVal(v.Type)
		default:
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("No value for required variable %q", name),
				Detail:   fmt.Sprintf("The variable %q has no default. Set it with --var %s=VALUE, a --var-file, or the environment variable CAIRN_VAR_%s.", name, name, name),
				Subject:  v.DeclRange.Ptr(),
			})
			continue
		}
		if val.IsNull() && !v.Nullable {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Invalid value for variable %q", name),
				Detail:   "The variable is declared nullable = false and must not be null.",
				Subject:  v.DeclRange.Ptr(),
			})
			continue
		}
		if v.Sensitive {
			val = val.Mark(SensitiveMark)
		}
		vals[name] = val
	}
	if diags.HasErrors() {
		return vals, diags
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(vals), budgetName: newBudget(nil)}, Functions: FunctionsReading(c.root(), c.Reads, c.Funcs)}
	for _, name := range c.VarOrder {
		v := c.Variables[name]
		for _, chk := range v.Validations {
			diags = append(diags, evalCheck(chk, ctx, fmt.Sprintf("Invalid value for variable %q", name))...)
		}
	}
	return vals, diags
}

// ValueInput is the Extra of a diagnostic about a variable value given on
// the command line, in a variable file or in the environment, rather than
// about the pipeline: Source names where the value came from.
type ValueInput struct{ Source string }

// pathString writes a path into a variable's value as HCL would index it:
// sizes["small"], runs[0].name.
func pathString(name string, p cty.Path) string {
	var b strings.Builder
	b.WriteString(name)
	for _, st := range p {
		switch st := st.(type) {
		case cty.GetAttrStep:
			b.WriteString("." + st.Name)
		case cty.IndexStep:
			switch {
			case !st.Key.IsKnown() || st.Key.IsNull():
				b.WriteString("[?]")
			case st.Key.Type() == cty.String:
				b.WriteString("[" + strconv.Quote(st.Key.AsString()) + "]")
			case st.Key.Type() == cty.Number:
				b.WriteString("[" + st.Key.AsBigFloat().Text('f', -1) + "]")
			default:
				b.WriteString("[?]")
			}
		}
	}
	return b.String()
}

func looksLikeExpr(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "[") || strings.HasPrefix(s, "{")
}

func undeclared(name, where string, c *Config) *hcl.Diagnostic {
	detail := fmt.Sprintf("%s sets %q, but the pipeline declares no such variable.", where, name)
	if sug := Suggest(name, c.VarOrder); sug != "" {
		detail += fmt.Sprintf(" Did you mean %q?", sug)
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value for undeclared variable", Detail: detail}
}

// evalCheck evaluates a condition; false yields one error with the
// evaluated error_message.
func evalCheck(chk *Check, ctx *hcl.EvalContext, summary string) hcl.Diagnostics {
	cond, diags := chk.Condition.Value(ctx)
	if diags.HasErrors() {
		return diags
	}
	cond, _ = cond.Unmark()
	if !cond.IsKnown() {
		return nil
	}
	if cond.IsNull() || !cond.Type().Equals(cty.Bool) {
		if c, err := convert.Convert(cond, cty.Bool); err == nil && !c.IsNull() {
			cond = c
		} else {
			return hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Invalid condition",
				Detail:   "The condition must be true or false.",
				Subject:  chk.Condition.Range().Ptr(),
			}}
		}
	}
	if cond.True() {
		return nil
	}
	msg := CheckMessage(chk, ctx)
	return hcl.Diagnostics{{
		Severity:    hcl.DiagError,
		Summary:     summary,
		Detail:      msg,
		Subject:     chk.Condition.Range().Ptr(),
		Expression:  chk.Condition,
		EvalContext: ctx,
	}}
}

// CheckMessage evaluates a check's error_message; sensitive parts are
// redacted.
func CheckMessage(chk *Check, ctx *hcl.EvalContext) string {
	mv, d := chk.ErrorMessage.Value(ctx)
	if d.HasErrors() || !mv.IsKnown() {
		return "(the error_message could not be evaluated: " + d.Error() + ")"
	}
	if mv.IsMarked() {
		return "(error message hidden: it contains a sensitive value)"
	}
	if s, err := convert.Convert(mv, cty.String); err == nil && !s.IsNull() {
		return s.AsString()
	}
	return "(error_message is not a string)"
}

// Environ returns the process environment; a seam for tests.
var Environ = os.Environ

package dsl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"golang.org/x/text/unicode/norm"
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

// Name is the variable a --var sets, as the pipeline's names are read
// (trimmed, in NFC); "" for a --var-file.
func (v VarArg) Name() string {
	if v.File {
		return ""
	}
	name, _, _ := strings.Cut(v.Value, "=")
	return norm.NFC.String(strings.TrimSpace(name))
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
	rng    *hcl.Range     // where a variable file writes it; nil for a value given as text
	expr   hcl.Expression // what it was read from: HCL or JSON
	text   string         // the value given as text (--var, the environment)
	// failed is set for a value given that could not be read (its error
	// is said): the variable has none, and is not also called required.
	failed bool
}

// ResolveVariables computes every variable's value and runs its validations.
func (c *Config) ResolveVariables(in VarInputs, parser *hclparse.Parser) (map[string]cty.Value, hcl.Diagnostics) {
	set, unread, diags := c.givenValues(in, parser)
	vals := map[string]cty.Value{}
	for _, name := range c.VarOrder {
		if set[name].failed {
			continue // its error is said: it is not also required
		}
		// A variable file that could not be read may hold a value for
		// any variable: none is called required then.
		val, d := c.variableValue(name, set, in.Unknown || unread)
		if d != nil {
			diags = append(diags, d)
			continue
		}
		vals[name] = val
	}
	if diags.HasErrors() {
		return vals, diags
	}
	return vals, append(diags, c.validateVariables(vals)...)
}

// givenValues are the values given for the variables, by name: from the
// environment, then the command line's --var and --var-file in order (a
// later one wins). unread is set when a variable file could not be read
// (its error is among diags).
func (c *Config) givenValues(in VarInputs, parser *hclparse.Parser) (_ map[string]varValue, unread bool, diags hcl.Diagnostics) {
	set := map[string]varValue{}
	raw := func(name, raw, source string) {
		if v, d, ok := c.parseRaw(name, raw, source); d != nil {
			diags = append(diags, d)
			set[name] = varValue{source: source, failed: true}
		} else if ok {
			set[name] = v
		}
	}
	for _, kv := range in.Env {
		if !strings.HasPrefix(kv, "CAIRN_VAR_") {
			continue
		}
		k, val, _ := strings.Cut(strings.TrimPrefix(kv, "CAIRN_VAR_"), "=")
		raw(k, val, "environment variable CAIRN_VAR_"+k)
	}
	for _, a := range in.Args {
		if a.File {
			d, ok := c.varFile(a.Value, set, parser)
			diags = append(diags, d...)
			unread = unread || !ok
			continue
		}
		k, val, ok := strings.Cut(a.Value, "=")
		if !ok || k == "" {
			if _, declared := c.Variables[strings.TrimSpace(k)]; declared {
				set[strings.TrimSpace(k)] = varValue{source: "--var", failed: true}
			}
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid --var",
				Detail:   fmt.Sprintf("--var takes name=value; got %q.", a.Value),
				Extra:    ValueInput{Source: "--var"},
			})
			continue
		}
		k = a.Name()
		if _, ok := c.Variables[k]; !ok {
			dg := undeclared(k, "--var", c)
			dg.Extra = ValueInput{Source: "--var " + k}
			diags = append(diags, dg)
			continue
		}
		raw(k, val, "--var "+k)
	}
	return set, unread, diags
}

// parseRaw reads the text value of variable name (from the environment or
// --var, which source names): as it is for a primitive type, else as an
// HCL literal. ok is false for a variable the pipeline does not declare.
func (c *Config) parseRaw(name, raw, source string) (_ varValue, _ *hcl.Diagnostic, ok bool) {
	v, ok := c.Variables[name]
	if !ok {
		return varValue{}, nil, false
	}
	if at := InvalidUTF8At([]byte(raw)); at < len(raw) {
		// Text is UTF-8 everywhere else: a file of the pipeline, a
		// variable file.
		return varValue{}, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid character encoding",
			Detail:   fmt.Sprintf("The value from %s holds a byte that is not UTF-8 at byte %d: cairn reads all text as UTF-8. Give the value in UTF-8 (a shell's locale other than UTF-8 may have encoded it).", source, at+1),
			Extra:    ValueInput{Source: source},
		}, true
	}
	if v.Type.IsPrimitiveType() || v.Type == cty.DynamicPseudoType && !looksLikeExpr(raw) {
		return varValue{val: cty.StringVal(raw), source: source}, nil, true
	}
	// The value as a message quotes it: a sensitive one is not shown.
	shown, key := strconv.Quote(raw), strconv.Quote
	if v.Sensitive {
		shown = "the value (sensitive, so not shown)"
		key = func(string) string { return "(sensitive, so not shown)" }
	}
	forType := " for type " + v.Type.FriendlyName()
	if v.Type == cty.DynamicPseudoType {
		forType = "" // an untyped variable: any value
	}
	expr, d := hclsyntax.ParseExpression([]byte(raw), source, hcl.InitialPos)
	if d.HasErrors() {
		// The parser's place reads like a file's ("--var m:1,1-2"): a
		// column in the value says it for a flag.
		first := d.Errs()[0].(*hcl.Diagnostic)
		where := ""
		if first.Subject != nil {
			where = fmt.Sprintf(" at column %d of %s", first.Subject.Start.Column, shown)
		}
		return varValue{}, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Invalid value for variable %q", name),
			Detail: fmt.Sprintf("The value from %s is not a valid expression%s: %s%s. Write it in HCL syntax, like [\"a\", \"b\"] for a list or { key = \"value\" } for a map or object.",
				source, forType, strings.ToLower(strings.TrimSuffix(first.Summary, ".")), where),
			Extra: ValueInput{Source: source},
		}, true
	}
	ev, d := expr.Value(nil)
	if d.HasErrors() {
		// A bare word ("not-a-list") parses as a reference; say what a
		// value of the type looks like instead.
		return varValue{}, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Invalid value for variable %q", name),
			Detail: fmt.Sprintf("The value from %s is not a literal value of type %s (%s). Write it in HCL syntax, like [\"a\", \"b\"] for a list or { key = \"value\" } for a map or object.",
				source, v.Type.FriendlyNameForConstraint(), strings.TrimSuffix(d[0].Summary, ".")),
			Extra: ValueInput{Source: source},
		}, true
	}
	if r, dup := repeatedKey(expr); dup {
		return varValue{}, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Invalid value for variable %q", name),
			Detail: fmt.Sprintf("The value from %s gives the key %s twice, at columns %d and %d of %s: an object holds one value for each key, so one of the two would be dropped without a word. Rename one of the keys, or remove one of the items.",
				source, key(r.key), r.first.Start.Column, r.again.Start.Column, shown),
			Extra: ValueInput{Source: source},
		}, true
	}
	return varValue{val: ev, source: source, expr: expr, text: raw}, nil, true
}

// varFile reads the --var-file at path (HCL, or JSON for .json) into set.
// ok is false when the file could not be read whole: it may hold values
// that are not in set.
func (c *Config) varFile(path string, set map[string]varValue, parser *hclparse.Parser) (diags hcl.Diagnostics, ok bool) {
	// Every error here is in the variable file, not in the pipeline.
	defer func() {
		for _, dg := range diags {
			if dg.Severity == hcl.DiagError && dg.Extra == nil {
				dg.Extra = ValueInput{Source: path}
			}
		}
	}()
	c.Reads.Note(path)
	f, d := readVarFile(path, parser)
	diags = append(diags, d...)
	if f == nil || d.HasErrors() {
		if len(d) == 0 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read variable file", Detail: path})
		}
		return diags, false
	}
	attrs, d := f.Body.JustAttributes()
	diags = append(diags, d...)
	for name, attr := range attrs {
		if _, ok := c.Variables[name]; !ok {
			dg := undeclared(name, "the variable file "+path, c)
			dg.Subject = attr.NameRange.Ptr()
			dg.Extra = ValueInput{Source: path}
			diags = append(diags, dg)
			continue
		}
		val, d := attr.Expr.Value(nil)
		// A number past what cairn handles (1e400) would become a
		// string of 401 digits for a variable of type string.
		val, d = checkNumbers(val, d, attr.Expr.Range())
		diags = append(diags, d...)
		if d.HasErrors() {
			set[name] = varValue{source: path, failed: true}
		} else {
			set[name] = varValue{val: val, source: path, rng: attr.Expr.Range().Ptr(), expr: attr.Expr}
		}
	}
	if strings.HasSuffix(path, ".json") && !diags.HasErrors() {
		// What JSON readers change without a word (half a surrogate
		// pair read as U+FFFD), refused as jsondecode refuses it.
		if _, _, refusal := decodeJSONChecked(f.Bytes); refusal != "" {
			return append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid JSON variable file",
				Detail:   fmt.Sprintf("The file %s %s.", path, refusal),
			}), false
		}
	}
	return diags, !d.HasErrors()
}

// readVarFile reads and parses the --var-file at path: JSON for .json,
// else HCL.
func readVarFile(path string, parser *hclparse.Parser) (*hcl.File, hcl.Diagnostics) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read variable file",
			Detail:   fmt.Sprintf("%s. --var-file takes an HCL (.hcl, .tfvars) or JSON (.json) file of name = value lines.", err),
		}}
	}
	if !strings.HasSuffix(path, ".json") {
		src = toNFC(lfLineEnds(src))
		if d := CheckNesting(src, path); d.HasErrors() {
			return nil, d
		}
		f, d := parser.ParseHCL(src, path)
		boundFile(f)
		for _, e := range d {
			if e.Summary == "Invalid character encoding" {
				// What follows it ("Unterminated template string") is
				// its consequence.
				return f, hcl.Diagnostics{e}
			}
		}
		return f, d
	}
	if e := jsonVarFileText(src, path); e != nil {
		parser.ParseJSON(src, path) // the file's text, for the snippet of the error
		return nil, hcl.Diagnostics{e}
	}
	f, d := parser.ParseJSON(toNFC(src), path)

	if d.HasErrors() {
		// A syntax error is followed by its consequences ("Root value
		// must be object"): the first error says it.
		d = hcl.Diagnostics{d.Errs()[0].(*hcl.Diagnostic)}
	}
	return f, d
}

// jsonVarFileText is the error for the text of a JSON variable file, src,
// that JSON readers change without a word, or refuse pointing nowhere
// useful: a byte-order mark at its start (every JSON reader of cairn
// refuses one, naming it), a byte that is not UTF-8 (hcl's reader makes
// it U+FFFD). nil when there is neither.
func jsonVarFileText(src []byte, path string) *hcl.Diagnostic {
	at := func(off int) *hcl.Range {
		line, col := JSONLineCol(src, off)
		start := hcl.Pos{Line: line, Column: col, Byte: off}
		end := start
		end.Column++
		end.Byte = min(off+1, len(src))
		return &hcl.Range{Filename: path, Start: start, End: end}
	}
	switch {
	case bytes.HasPrefix(src, JSONBOM):
		return &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Byte-order mark in a JSON variable file",
			Detail:   fmt.Sprintf("The file %s; sed -i '1s/^\\xEF\\xBB\\xBF//' %s removes it. (An HCL variable file may have one, as pipeline files may.)", JSONBOMMessage, path),
			Subject:  at(0),
		}
	case !utf8.Valid(src):
		off := InvalidUTF8At(src)
		detail := "JSON variable files are UTF-8 text; this one holds a byte that is not UTF-8 here, which a JSON reader would read as U+FFFD (the value changed without a word). Save the file as UTF-8 in your editor (iconv -f LATIN1 -t UTF-8 converts a Latin-1 file)."
		if bytes.HasPrefix(src, []byte{0xFF, 0xFE}) || bytes.HasPrefix(src, []byte{0xFE, 0xFF}) {
			detail = "This file is UTF-16 (it starts with UTF-16's byte-order mark); JSON variable files are UTF-8 text. Save it as UTF-8 in your editor (iconv -f UTF-16 -t UTF-8 also converts it)."
		}
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid character encoding", Detail: detail, Subject: at(off)}
	}
	return nil
}

// variableValue is variable name's value: the one given, converted to its
// type; else its default; else unknown (when unknown is set). It is marked
// when the variable is sensitive.
func (c *Config) variableValue(name string, set map[string]varValue, unknown bool) (cty.Value, *hcl.Diagnostic) {
	v := c.Variables[name]
	given, ok := set[name]
	var val cty.Value
	switch {
	case ok:
		var d *hcl.Diagnostic
		if val, d = givenValue(name, v, given); d != nil {
			return cty.NilVal, d
		}
	case v.HasDefault:
		val = v.Default
	case unknown:
		val = cty.UnknownVal(v.Type)
	default:
		return cty.NilVal, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("No value for required variable %q", name),
			Detail:   fmt.Sprintf("The variable %q has no default. Set it with --var %s=VALUE, a --var-file, or the environment variable CAIRN_VAR_%s.", name, name, name),
			Subject:  v.DeclRange.Ptr(),
		}
	}
	if val.IsNull() && !v.Nullable {
		return cty.NilVal, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Invalid value for variable %q", name),
			Detail:   "The variable is declared nullable = false and must not be null.",
			Subject:  v.DeclRange.Ptr(),
		}
	}
	if v.Sensitive {
		val = val.Mark(SensitiveMark)
	}
	return val, nil
}

// givenValue is the value given for variable v, with its type's defaults
// and converted to its type, with numbers cairn handles.
func givenValue(name string, v *Variable, given varValue) (cty.Value, *hcl.Diagnostic) {
	if d := strayAttrDiag(v, given); d != nil {
		return cty.NilVal, d
	}
	val := given.val
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
		return cty.NilVal, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Invalid value for variable %q", name),
			Detail:   fmt.Sprintf("The value from %s does not fit the type %s: %s.", given.source, v.Type.FriendlyName(), what),
			Subject:  given.rng,
			Context:  v.DeclRange.Ptr(),
			Extra:    ValueInput{Source: given.source},
		}
	}
	if !NumbersInRange(conv) {
		return cty.NilVal, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Invalid value for variable %q", name),
			Detail:   fmt.Sprintf("The value from %s holds a number beyond what cairn handles (about 1.8e308 in size at most, 4.9e-324 at least when not zero).", given.source),
			Subject:  given.rng,
			Context:  v.DeclRange.Ptr(),
			Extra:    ValueInput{Source: given.source},
		}
	}
	return conv, nil
}

// validateVariables runs every variable's validation blocks on vals. A
// variable a validation refuses is taken out of vals: what the pipeline
// computes from it is then unknown, rather than a second error of its own
// about the value the validation said is wrong (a grid file's field).
func (c *Config) validateVariables(vals map[string]cty.Value) hcl.Diagnostics {
	var diags hcl.Diagnostics
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(vals), budgetName: newBudget(nil)}, Functions: FunctionsReading(c.root(), c.Reads, c.Funcs)}
	var refused []string
	for _, name := range c.VarOrder {
		v := c.Variables[name]
		for _, chk := range v.Validations {
			d := evalCheck(chk, ctx, fmt.Sprintf("Invalid value for variable %q", name))
			if d.HasErrors() {
				refused = append(refused, name)
			}
			diags = append(diags, d...)
		}
	}
	for _, name := range refused {
		delete(vals, name)
	}
	return diags
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
	if d.HasErrors() {
		return "(the error_message could not be evaluated: " + DiagsText(d) + ")"
	}
	if !mv.IsKnown() {
		return "(the error_message could not be evaluated: " + Pos(chk.ErrorMessage.Range()) + ": it reads values not known)"
	}
	if mv.IsMarked() {
		return "(error message hidden: it contains a sensitive value)"
	}
	if s, err := convert.Convert(mv, cty.String); err == nil && !s.IsNull() {
		return s.AsString()
	}
	return "(error_message is not a string)"
}

package dsl

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/gocty"

	"github.com/cairn-run/cairn/dsl/addrs"
	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/dsl/par"
)

// Kinds tells the decoder which stage kinds exist and what attributes each
// adds to the generic stage schema.
type Kinds interface {
	// KindSchema returns the kind's own attributes and blocks.
	KindSchema(kind string) (*hcl.BodySchema, bool)
	// KindNames lists the known kinds, sorted.
	KindNames() []string
}

var fileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "pipeline", LabelNames: []string{"name"}},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "stage", LabelNames: []string{"kind", "name"}},
		{Type: "seal", LabelNames: []string{"name"}},
	},
}

var pipelineSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "description"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "executor", LabelNames: []string{"name"}}},
}

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "type"}, {Name: "default"}, {Name: "description"},
		{Name: "sensitive"}, {Name: "nullable"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var checkSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "condition", Required: true},
		{Name: "error_message", Required: true},
	},
}

var retrySchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "max", Required: true}, {Name: "on"}},
}

// GenericAttributes are the attributes every stage kind accepts.
var GenericAttributes = []string{
	"description", "for_each", "after", "wait_for", "inputs", "result", "outputs", "env",
	"cpus", "memory", "gpus", "timeout", "kill_grace", "concurrency", "on_interrupt",
	"on_upstream_failure", "classify",
}

func stageSchema(kind *hcl.BodySchema) *hcl.BodySchema {
	s := &hcl.BodySchema{
		Blocks: []hcl.BlockHeaderSchema{{Type: "retry"}, {Type: "postcondition"}},
	}
	for _, n := range GenericAttributes {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: n})
	}
	if kind != nil {
		s.Attributes = append(s.Attributes, kind.Attributes...)
		s.Blocks = append(s.Blocks, kind.Blocks...)
	}
	return s
}

// Loader parses pipeline files and keeps them for diagnostic output.
type Loader struct {
	Parser *hclparse.Parser
	Kinds  Kinds
	// Reads records the pipeline files read, and is handed to the
	// Config for what evaluation reads.
	Reads *FileReads
	// Funcs are functions of pipeline expressions that the language does
	// not define itself, given by the loader's caller (the stage kinds'
	// decisionslots); the Config keeps them for its evaluations.
	Funcs map[string]FileFunc
}

// NewLoader returns a loader that validates stage kinds against kinds.
func NewLoader(kinds Kinds) *Loader {
	return &Loader{Parser: hclparse.NewParser(), Kinds: kinds, Reads: NewFileReads()}
}

// Load reads one .hcl file, or every .hcl file of a directory (sorted by
// name), and decodes it.
func (l *Loader) Load(path string) (*Config, hcl.Diagnostics) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read pipeline",
			Detail:   fmt.Sprintf("%s. Pass a pipeline file (.hcl) or a directory holding some.", err),
		}}
	}
	var paths []string
	dir := path
	if st.IsDir() {
		// Its listing decides which files are the pipeline.
		l.Reads.Note(path)
		names, err := PipelineFiles(path)
		if err != nil {
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read pipeline directory", Detail: err.Error()}}
		}
		l.Reads.NoteListing(path, names)
		for _, name := range names {
			paths = append(paths, filepath.Join(path, name))
		}
		if len(paths) == 0 {
			return nil, hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "No pipeline files",
				Detail:   fmt.Sprintf("The directory %s holds no .hcl files. Write the pipeline in a .hcl file there, or pass a pipeline file (.hcl) itself.", path),
			}}
		}
	} else {
		paths = []string{path}
		dir = filepath.Dir(path)
	}
	var diags hcl.Diagnostics
	var files []*hcl.File
	for _, p := range paths {
		if why := pipelineFileProblem(p, st.IsDir()); why != "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read pipeline file", Detail: why})
			continue
		}
		l.Reads.Note(p)
		src, err := os.ReadFile(p)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read pipeline file", Detail: err.Error()})
			continue
		}
		src = lfLineEnds(src)
		if w := nfcWarning(src, p); w != nil {
			diags = append(diags, w)
			src = toNFC(src)
		}
		// A large file is scanned once, for its nesting and for where
		// it can be cut to parse in pieces.
		var cuts *fileCuts
		if len(src) >= splitParseMin {
			cuts = scanCuts(src)
		}
		if !cuts.nestingChecked() {
			if d := CheckNesting(src, p); d.HasErrors() {
				// The source, for the diagnostic's snippet.
				l.Parser.AddFile(p, &hcl.File{Bytes: src})
				diags = append(diags, d...)
				continue
			}
		}
		f, d := parseConfigCut(l.Parser, src, p, cuts)
		if e := encodingDiag(src, d); e != nil {
			// One error for a file that is not UTF-8, not one for each
			// character the parser then trips over.
			d = hcl.Diagnostics{e}
		}
		diags = append(diags, d...)
		if f != nil {
			files = append(files, f)
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	cfg, d := l.Decode(files)
	if st.IsDir() && len(files) > 1 && HasDiag(d, "Duplicate pipeline block") {
		return nil, folderOfPipelines(path, files)
	}
	diags = append(diags, d...)
	if cfg != nil {
		cfg.Dir = dir
		cfg.Paths = paths
		if cfg.Name == "" {
			abs, err := filepath.Abs(path)
			if err != nil {
				abs = path
			}
			cfg.Name = strings.TrimSuffix(filepath.Base(abs), ".hcl")
		}
	}
	return cfg, diags
}

// ParseSource parses and decodes one in-memory file; used by tests and
// fuzzing.
func (l *Loader) ParseSource(src []byte, filename string) (*Config, hcl.Diagnostics) {
	src = toNFC(lfLineEnds(src))
	if d := CheckNesting(src, filename); d.HasErrors() {
		return nil, d
	}
	f, diags := l.Parser.ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, diags
	}
	settleFile(f)
	cfg, d := l.Decode([]*hcl.File{f})
	diags = append(diags, d...)
	if cfg != nil {
		cfg.Dir = filepath.Dir(filename)
		cfg.Paths = []string{filename}
		if cfg.Name == "" {
			cfg.Name = strings.TrimSuffix(filepath.Base(filename), ".hcl")
		}
	}
	return cfg, diags
}

// Decode decodes parsed files into one Config.
func (l *Loader) Decode(files []*hcl.File) (*Config, hcl.Diagnostics) {
	cfg := &Config{
		Reads:     l.Reads,
		Funcs:     l.Funcs,
		Variables: map[string]*Variable{},
		Locals:    map[string]*Local{},
		Files:     l.Parser.Files(),
	}
	var diags hcl.Diagnostics
	var pipelineRange *hcl.Range
	contents := make([]*hcl.BodyContent, len(files))
	contentDiags := make([]hcl.Diagnostics, len(files))
	var stageBlocks []*hcl.Block
	for i, f := range files {
		contents[i], contentDiags[i] = f.Body.Content(fileSchema)
		for _, b := range contents[i].Blocks {
			if b.Type == "stage" {
				stageBlocks = append(stageBlocks, b)
			}
		}
	}
	cfg.StageMap = make(map[string]*Stage, len(stageBlocks)) // sized once
	decoded := l.decodeStages(stageBlocks)
	for i := range files {
		content, d := contents[i], contentDiags[i]
		for _, dg := range d {
			if dg.Summary == "Unsupported block type" && !strings.Contains(dg.Detail, "Did you mean") {
				dg.Detail += " A pipeline file holds pipeline, variable, locals, stage and seal blocks."
			}
		}
		diags = append(diags, d...)
		for _, b := range content.Blocks {
			switch b.Type {
			case "pipeline":
				if pipelineRange != nil {
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Duplicate pipeline block",
						Detail:   fmt.Sprintf("A pipeline has one pipeline block; the first is at %s.", Pos(*pipelineRange)),
						Subject:  b.DefRange.Ptr(),
					})
					continue
				}
				r := b.DefRange
				pipelineRange = &r
				cfg.Name = b.Labels[0]
				diags = append(diags, validName(b.Labels[0], "pipeline", b.LabelRanges[0])...)
				c, d := b.Body.Content(pipelineSchema)
				diags = append(diags, d...)
				if a := c.Attributes["description"]; a != nil {
					diags = append(diags, decodeLiteral(a, &cfg.Description, "description", stringLiteral)...)
				}
				for _, eb := range c.Blocks {
					if cfg.Executor != nil {
						diags = append(diags, &hcl.Diagnostic{
							Severity: hcl.DiagError,
							Summary:  "Duplicate executor block",
							Detail:   fmt.Sprintf("A pipeline runs on one executor; the first executor block is at %s.", Pos(cfg.Executor.DeclRange)),
							Subject:  eb.DefRange.Ptr(),
						})
						continue
					}
					e, d := decodeExecutor(eb)
					diags = append(diags, d...)
					cfg.Executor = e
				}
			case "variable":
				v, d := decodeVariable(b)
				diags = append(diags, d...)
				if v == nil {
					continue
				}
				if old, ok := cfg.Variables[v.Name]; ok {
					diags = append(diags, duplicate("variable", v.Name, old.DeclRange, b.LabelRanges[0]))
					continue
				}
				cfg.Variables[v.Name] = v
				cfg.VarOrder = append(cfg.VarOrder, v.Name)
			case "locals":
				attrs, d := b.Body.JustAttributes()
				diags = append(diags, d...)
				names := make([]string, 0, len(attrs))
				for n := range attrs {
					names = append(names, n)
				}
				sort.Slice(names, func(i, j int) bool {
					return attrs[names[i]].Range.Start.Byte < attrs[names[j]].Range.Start.Byte
				})
				for _, n := range names {
					a := attrs[n]
					if old, ok := cfg.Locals[n]; ok {
						diags = append(diags, duplicate("local value", n, old.DeclRange, a.NameRange))
						continue
					}
					cfg.Locals[n] = &Local{Name: n, Expr: a.Expr, DeclRange: a.Range}
					cfg.LocalOrd = append(cfg.LocalOrd, n)
				}
			case "seal":
				s, d := decodeSeal(b)
				diags = append(diags, d...)
				if old := cfg.seal(s.Name); old != nil {
					diags = append(diags, duplicate("seal", s.Name, old.NameRange, s.NameRange))
					continue
				}
				cfg.Seals = append(cfg.Seals, s)
			case "stage":
				s, d := decoded[0].stage, decoded[0].diags
				decoded = decoded[1:]
				diags = append(diags, d...)
				if s == nil {
					continue
				}
				if old, ok := cfg.StageMap[s.Name]; ok {
					diags = append(diags, duplicate("stage", s.Name, old.NameRange, s.NameRange))
					continue
				}
				cfg.StageMap[s.Name] = s
				cfg.Stages = append(cfg.Stages, s)
			}
		}
	}
	return cfg, diags
}

// decodeLiteral decodes a, an attribute the docs give as a literal, into
// dst: the value as the file writes it, of dst's own type. HCL would take
// more: a value it converts (description = 5 as "5", max = "2" as 2) and
// an expression of literals (a template with ${...}, arithmetic, a
// conditional), which reads as one value yet is not what the docs
// promise the file holds. Both are refused at the value, saying what the
// attribute takes (want, in words; the summary is "Invalid "+name). A
// reference or a function call is reported once, in hcl's words, not
// again as a value of the wrong type.
func decodeLiteral(a *hcl.Attribute, dst any, name, want string) hcl.Diagnostics {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return diags
	}
	if !Constant(a.Expr) {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError, Summary: "Invalid " + name, Subject: a.Expr.Range().Ptr(),
			Detail: fmt.Sprintf("%s must be %s, written as it is: a literal, not computed (no ${...}, operators or conditionals).", a.Name, want),
		}}
	}
	ty, err := gocty.ImpliedType(dst)
	if err != nil || !literalOf(v, ty) || gohcl.DecodeExpression(a.Expr, nil, dst).HasErrors() {
		return notLiteral(a, v, name, want)
	}
	return nil
}

// notLiteral says that a's value v is not what a takes: want, in words.
func notLiteral(a *hcl.Attribute, v cty.Value, name, want string) hcl.Diagnostics {
	return hcl.Diagnostics{{
		Severity: hcl.DiagError, Summary: "Invalid " + name, Subject: a.Expr.Range().Ptr(),
		Detail: fmt.Sprintf("%s must be %s, not %s.", a.Name, want, literalText(v)),
	}}
}

// literalOf reports whether v, a literal's value, is of type ty as written:
// a string for a string, a list of strings for a list of them; not a
// value HCL would convert to ty (a number or a bool to a string, a string
// of digits to a number), nor null.
func literalOf(v cty.Value, ty cty.Type) bool {
	switch {
	case v.IsNull() || !v.IsKnown():
		return false
	case ty.IsPrimitiveType():
		return v.Type() == ty
	case ty.IsListType() || ty.IsSetType():
		if !v.CanIterateElements() || v.Type().IsMapType() || v.Type().IsObjectType() {
			return false
		}
		for it := v.ElementIterator(); it.Next(); {
			if _, e := it.Element(); !literalOf(e, ty.ElementType()) {
				return false
			}
		}
		return true
	}
	return false
}

// DiagsText is diags' errors in words, each at its file:line:col as
// validate names places ("main.hcl:6:32: Unsupported attribute: ..."),
// not in hcl's "main.hcl:6,32-41" form, joined by "; ".
func DiagsText(diags hcl.Diagnostics) string {
	var parts []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		p := d.Summary
		if d.Detail != "" {
			p += ": " + d.Detail
		}
		if d.Subject != nil {
			p = Pos(*d.Subject) + ": " + p
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// Pos formats a range's start as file:line:col.
func Pos(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

func duplicate(what, name string, first, again hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Duplicate %s %q", what, name),
		Detail:   fmt.Sprintf("A %s named %q was already declared at %s. Names must be unique within a pipeline.", what, name, Pos(first)),
		Subject:  again.Ptr(),
	}
}

func validName(n, what string, r hcl.Range) hcl.Diagnostics {
	if addrs.ValidIdentifier(n) {
		return nil
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Invalid %s name", what),
		Detail:   fmt.Sprintf("%q is not a valid name: use letters, digits, underscores and dashes, starting with a letter or an underscore.", n),
		Subject:  r.Ptr(),
	}}
}

func decodeVariable(b *hcl.Block) (*Variable, hcl.Diagnostics) {
	v := &Variable{Name: b.Labels[0], Type: cty.DynamicPseudoType, Nullable: true, DeclRange: b.DefRange}
	diags := validName(v.Name, "variable", b.LabelRanges[0])
	content, d := b.Body.Content(variableSchema)
	diags = append(diags, d...)
	if a := content.Attributes["description"]; a != nil {
		diags = append(diags, decodeLiteral(a, &v.Description, "description", stringLiteral)...)
	}
	if a := content.Attributes["sensitive"]; a != nil {
		diags = append(diags, decodeLiteral(a, &v.Sensitive, "sensitive", "true or false")...)
	}
	if a := content.Attributes["nullable"]; a != nil {
		diags = append(diags, decodeLiteral(a, &v.Nullable, "nullable", "true or false")...)
	}
	if a := content.Attributes["type"]; a != nil {
		ty, defs, d := typeexpr.TypeConstraintWithDefaults(a.Expr)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.Type = ty
			if defs != nil {
				v.TypeDefaults = defs
			}
		}
	}
	if a := content.Attributes["default"]; a != nil {
		diags = append(diags, decodeDefault(v, a)...)
	}
	for _, vb := range content.Blocks {
		c, d := decodeCheck(vb, "var."+v.Name+" != \"\"")
		diags = append(diags, d...)
		if c != nil {
			ok := true
			for _, t := range c.Condition.Variables() {
				if t.RootName() != "var" {
					ok = false
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Invalid reference in variable validation",
						Detail:   "A variable's validation condition may refer only to input variables (var.*).",
						Subject:  t.SourceRange().Ptr(),
					})
				}
			}
			if ok {
				// A bad one is not evaluated: that would only report the
				// same reference again.
				v.Validations = append(v.Validations, c)
			}
		}
	}
	return v, diags
}

// decodeDefault sets v's default from a, its default attribute: a's
// value converted to v's type, with the type's defaults.
func decodeDefault(v *Variable, a *hcl.Attribute) hcl.Diagnostics {
	val, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		// A default that is not a literal (a function call, a
		// reference): it is one error, and the variable is not also
		// reported as required.
		v.Default, v.HasDefault = cty.UnknownVal(v.Type), true
		return diags
	}
	bad := func(detail string, subject *hcl.Range) hcl.Diagnostics {
		// The variable has a default, a bad one: an unknown value stands
		// in so that it is not also reported as required.
		v.Default, v.HasDefault = cty.UnknownVal(v.Type), true
		return append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid default value for variable",
			Detail:   detail,
			Subject:  subject,
		})
	}
	if s, ok := findStrayAttr(val, v.Type, nil); ok {
		return bad(strayAttrDetail(v.Name, s, "The default value"), strayAttrRange(a.Expr, s))
	}
	if v.TypeDefaults != nil {
		val = v.TypeDefaults.Apply(val)
	}
	conv, err := convert.Convert(val, v.Type)
	if err != nil {
		return bad(fmt.Sprintf("This default value does not fit the variable's type constraint %s: %s.", v.Type.FriendlyNameForConstraint(), err), a.Expr.Range().Ptr())
	}
	v.Default, v.HasDefault = conv, true
	return diags
}

// decodeCheck decodes a validation or postcondition block; example is a
// condition of that place, for the message about one that is constant.
func decodeCheck(b *hcl.Block, example string) (*Check, hcl.Diagnostics) {
	c, diags := b.Body.Content(checkSchema)
	if diags.HasErrors() {
		return nil, diags
	}
	cond := c.Attributes["condition"].Expr
	if constant(cond) {
		// A condition of literals only is the same value every time: one
		// that is not true or false can never be checked.
		if v, d := cond.Value(nil); !d.HasErrors() && (v.IsNull() || !v.Type().Equals(cty.Bool)) {
			return nil, append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError, Summary: "Invalid condition",
				Detail:  fmt.Sprintf("condition must be true or false; this one is always %s. Write an expression that compares something, such as %s.", constantText(v), example),
				Subject: cond.Range().Ptr(),
			})
		}
	}
	return &Check{
		Condition:    cond,
		ErrorMessage: c.Attributes["error_message"].Expr,
		DeclRange:    b.DefRange,
	}, diags
}

// constantText is a constant value as a message shows it: a string
// quoted, anything else by its type.
func constantText(v cty.Value) string {
	switch {
	case v.IsNull():
		return "null"
	case v.Type().Equals(cty.String):
		return fmt.Sprintf("the string %q", v.AsString())
	case v.Type().Equals(cty.Number):
		return "the number " + v.AsBigFloat().Text('g', -1)
	}
	return "a " + v.Type().FriendlyName()
}

// A stageKind is what decoding a stage block needs of its kind: its
// block schema, or, for a kind that is not known, the error's detail.
type stageKind struct {
	schema  *hcl.BodySchema
	index   *schemaIndex
	unknown string
}

// decodedStage is a stage block decoded, with its diagnostics.
type decodedStage struct {
	stage *Stage
	diags hcl.Diagnostics
}

// decodeStages decodes stage blocks, in their order. Each block's decoding
// depends on nothing but the block and its kind, so a pipeline of many
// stages has them decoded on every core.
func (l *Loader) decodeStages(blocks []*hcl.Block) []decodedStage {
	kinds := map[string]*stageKind{}
	for _, b := range blocks {
		kind := b.Labels[0]
		if kinds[kind] != nil {
			continue
		}
		k := &stageKind{}
		var kindSchema *hcl.BodySchema
		if l.Kinds != nil {
			ks, ok := l.Kinds.KindSchema(kind)
			if !ok {
				names := l.Kinds.KindNames()
				k.unknown = fmt.Sprintf("There is no stage kind %q. Known kinds: %s.", kind, strings.Join(names, ", "))
				if sug := Suggest(kind, names); sug != "" {
					k.unknown = fmt.Sprintf("There is no stage kind %q. Did you mean %q? Known kinds: %s.", kind, sug, strings.Join(names, ", "))
				}
			}
			kindSchema = ks
		}
		k.schema = stageSchema(kindSchema)
		k.index = indexSchema(k.schema)
		kinds[kind] = k
	}
	out := make([]decodedStage, len(blocks))
	par.Chunks(len(blocks), 64, 256, func(i int) {
		s, d := decodeStage(blocks[i], kinds[blocks[i].Labels[0]])
		out[i] = decodedStage{s, d}
	})
	return out
}

// decodeStage decodes a stage block of the kind given (made once per kind
// by decodeStages, not once a block).
func decodeStage(b *hcl.Block, kind *stageKind) (*Stage, hcl.Diagnostics) {
	s := &Stage{
		Kind: b.Labels[0], Name: b.Labels[1],
		DeclRange: b.DefRange, KindRange: b.LabelRanges[0], NameRange: b.LabelRanges[1],
		Attrs:       map[string]*hcl.Attribute{},
		OnInterrupt: "rerun", OnUpstreamFailure: "skip",
	}
	diags := validName(s.Name, "stage", s.NameRange)
	if kind.unknown != "" {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unknown stage kind",
			Detail:   kind.unknown,
			Subject:  s.KindRange.Ptr(),
		})
		s.UnknownKind = true
	}
	schema := kind.schema
	var d hcl.Diagnostics
	// The attributes and blocks, as Content gives them (the index's
	// items where it takes the body: the same, without their map).
	var items []hcl.Attribute
	var blocks hcl.Blocks
	fast := false
	if !s.UnknownKind {
		items, blocks, fast = kind.index.items(b.Body)
	}
	var content *hcl.BodyContent
	switch {
	case fast:
	case s.UnknownKind:
		// Keep the generic part, so that references to this stage and
		// in its generic attributes are checked; the kind's own
		// attributes cannot be.
		content, _, d = b.Body.PartialContent(schema)
		blocks = content.Blocks
	default:
		content, d = b.Body.Content(schema)
		blocks = content.Blocks
	}
	diags = append(diags, betterSuggestions(d, schema)...)
	attr := func(a *hcl.Attribute) {
		var d hcl.Diagnostics
		switch n := a.Name; n {
		case "for_each":
			s.ForEach = a.Expr
		case "after", "wait_for":
			exprs, d := hcl.ExprList(a.Expr)
			if d.HasErrors() {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid " + n,
					Detail:   n + " takes a list of stage references, e.g. " + n + " = [stage.preflight, stage.build[\"a\"]].",
					Subject:  a.Expr.Range().Ptr(),
				})
				return
			}
			if n == "after" {
				s.After = exprs
			} else {
				s.WaitFor = exprs
			}
		case "description":
			diags = append(diags, decodeLiteral(a, &s.Description, "description", stringLiteral)...)
		case "on_interrupt":
			s.OnInterrupt, d = staticChoice(a, "rerun", "fail")
			diags = append(diags, d...)
		case "on_upstream_failure":
			s.OnUpstreamFailure, d = staticChoice(a, "skip", "run")
			diags = append(diags, d...)
		default:
			s.Attrs[n] = a
		}
	}
	if fast {
		for i := range items {
			attr(&items[i])
		}
	} else {
		for _, a := range content.Attributes {
			attr(a)
		}
	}
	for _, blk := range blocks {
		switch blk.Type {
		case "retry":
			if s.Retry != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate retry block",
					Detail:   fmt.Sprintf("A stage has at most one retry block; the first of %s is at %s. Put every retry setting in that one.", addrs.Stage(s.Name), Pos(s.Retry.DeclRange)),
					Subject:  blk.DefRange.Ptr(),
				})
				continue
			}
			r, d := decodeRetry(blk)
			diags = append(diags, d...)
			s.Retry = r
		case "postcondition":
			c, d := decodeCheck(blk, "self.result.accuracy >= 0.9")
			diags = append(diags, d...)
			if c != nil {
				s.Postconditions = append(s.Postconditions, c)
			}
		default:
			s.KindBlocks = append(s.KindBlocks, blk)
		}
	}
	return s, diags
}

// stringLiteral is what an attribute documented as a string literal takes.
const stringLiteral = `a quoted string ("...")`

// staticChoice is a's value, a literal that is one of choices (the first
// is the default, taken when it is not one).
func staticChoice(a *hcl.Attribute, choices ...string) (string, hcl.Diagnostics) {
	var s string
	diags := decodeLiteral(a, &s, a.Name, "one of "+quoteList(choices))
	if diags.HasErrors() {
		return choices[0], diags
	}
	for _, c := range choices {
		if s == c {
			return s, nil
		}
	}
	return choices[0], hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Invalid %s", a.Name),
		Detail:   fmt.Sprintf("%s must be one of %s; got %q.", a.Name, quoteList(choices), s),
		Subject:  a.Expr.Range().Ptr(),
	}}
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

// literalText is a literal value as a pipeline writes it, for a message:
// 1.5, "yes", or its type (a list, an object).
func literalText(v cty.Value) string {
	switch {
	case v.IsNull():
		return "null"
	case v.Type() == cty.Number:
		return v.AsBigFloat().Text('g', -1)
	case v.Type() == cty.String:
		return fmt.Sprintf("%q", v.AsString())
	case v.Type() == cty.Bool:
		return fmt.Sprint(v.True())
	}
	return "a " + v.Type().FriendlyName()
}

// retryMaxWant is what a retry block's max takes, in words.
const retryMaxWant = "a whole number, 0 or more (the extra attempts after the first)"

func decodeRetry(b *hcl.Block) (*Retry, hcl.Diagnostics) {
	r := &Retry{DeclRange: b.DefRange}
	c, diags := b.Body.Content(retrySchema)
	if a := c.Attributes["max"]; a != nil {
		d := decodeLiteral(a, &r.Max, "retry max", retryMaxWant)
		if !d.HasErrors() && r.Max < 0 {
			v, _ := a.Expr.Value(nil)
			d = notLiteral(a, v, "retry max", retryMaxWant)
		}
		diags = append(diags, d...)
	}
	if a := c.Attributes["on"]; a != nil {
		d := decodeLiteral(a, &r.On, "retry on", fmt.Sprintf(`a list of failure classes, like ["exit"] or ["timeout", "infrastructure"] (the classes are: %s)`, strings.Join(failclass.All, ", ")))
		diags = append(diags, d...)
		if !d.HasErrors() {
			for i, cl := range r.On {
				if !failclass.Valid(cl) {
					detail := fmt.Sprintf("%q is not a failure class. The classes are: %s.", cl, strings.Join(failclass.All, ", "))
					if sug := Suggest(cl, failclass.All); sug != "" {
						detail = fmt.Sprintf("%q is not a failure class. Did you mean %q? The classes are: %s.", cl, sug, strings.Join(failclass.All, ", "))
					}
					at := a.Expr.Range()
					if t, ok := TupleConsOf(a.Expr); ok && i < len(t.Exprs) {
						at = t.Exprs[i].Range() // the class, not the list
					}
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError, Summary: "Unknown failure class",
						Detail: detail, Subject: at.Ptr(),
					})
				}
			}
		}
	} else {
		r.On = []string{failclass.Exit, failclass.Timeout, failclass.Killed, failclass.Infra}
	}
	return r, diags
}

// betterSuggestions replaces hcl's "Did you mean" for unsupported
// arguments with the closest attribute name of the schema.
func betterSuggestions(diags hcl.Diagnostics, schema *hcl.BodySchema) hcl.Diagnostics {
	var names []string
	for _, d := range diags {
		if d.Summary != "Unsupported argument" || d.Subject == nil {
			continue
		}
		if names == nil {
			for _, a := range schema.Attributes {
				names = append(names, a.Name)
			}
		}
		name, _, ok := strings.Cut(strings.TrimPrefix(d.Detail, "An argument named \""), "\"")
		if !ok {
			continue
		}
		d.Detail = fmt.Sprintf("An argument named %q is not expected here.", name)
		if s := Suggest(name, names); s != "" {
			d.Detail += fmt.Sprintf(" Did you mean %q?", s)
		} else if f, ok := foreignAttrs[name]; ok && slices.Contains(names, f.attr) {
			d.Detail += " " + f.hint
		}
	}
	return diags
}

// foreignAttrs are the attributes of other tools' languages (Terraform's)
// that a stage has under another name: an unknown attribute of these
// names says which one.
var foreignAttrs = map[string]struct{ attr, hint string }{
	"depends_on": {"after", "A stage waits for others with after = [stage.NAME] (their outputs key this stage), or wait_for = [stage.NAME] (to order it only)."},
	"count":      {"for_each", "A stage makes several nodes with for_each: a map, or a set or list of strings, one node each (for_each = toset([\"a\", \"b\"]))."},
}

// Suggest returns the candidate closest to s, or "" when none is close:
// at most two edits away, and at most one edit per two characters of s (a
// one-letter name is not a typo of another one-letter name).
func Suggest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := levenshtein.Distance(s, c, nil)
		if d < bestD && 2*d <= len(s) {
			best, bestD = c, d
		}
	}
	return best
}

// HasDiag reports whether one of diags has the summary given.
func HasDiag(diags hcl.Diagnostics, summary string) bool {
	for _, d := range diags {
		if d.Summary == summary {
			return true
		}
	}
	return false
}

// folderOfPipelines is the error for loading, as one pipeline, a directory
// whose files declare several pipeline blocks: a folder of pipelines.
func folderOfPipelines(dir string, files []*hcl.File) hcl.Diagnostics {
	var lines []string
	var first *hcl.Range
	example := ""
	for _, f := range files {
		b := pipelineBlock(f)
		if b == nil || len(b.Labels) != 1 {
			continue
		}
		r := b.DefRange()
		if first == nil {
			first = &r
			example = r.Filename
		}
		lines = append(lines, fmt.Sprintf("  %s declares pipeline %q", r.Filename, b.Labels[0]))
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "A folder of pipelines",
		Detail: fmt.Sprintf("cairn reads every .hcl file of a directory as one pipeline, which has one pipeline block, but %d files of %s declare one:\n%s\nName the file of the pipeline you mean, such as %s (cairn validate %s checks them all, each on its own).",
			len(lines), dir, strings.Join(lines, "\n"), example, dir),
		Subject: first,
	}}
}

// pipelineBlock is the first top-level pipeline block of f, or nil.
func pipelineBlock(f *hcl.File) *hclsyntax.Block {
	if f == nil {
		return nil
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	for _, b := range body.Blocks {
		if b.Type == "pipeline" {
			return b
		}
	}
	return nil
}

// PipelineFolder reports whether dir is a folder of pipelines rather than
// one pipeline: more than one of its .hcl files declares a pipeline block
// (a pipeline has one). It then returns the names of all its .hcl files,
// each a pipeline of its own; otherwise nil. A directory of fewer than two
// .hcl files is one pipeline without a file read: validating a large
// pipeline's folder parses its file once, not twice.
func PipelineFolder(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".hcl") {
			names = append(names, e.Name())
		}
	}
	if len(names) < 2 {
		return nil
	}
	declaring := 0
	for _, name := range names {
		p := filepath.Join(dir, name)
		if pipelineFileProblem(p, true) != "" {
			continue // Load says what it is, and does not read it
		}
		src, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if CheckNesting(src, name).HasErrors() {
			continue
		}
		if f, _ := hclsyntax.ParseConfig(src, name, hcl.InitialPos); pipelineBlock(f) != nil {
			declaring++
		}
	}
	if declaring < 2 {
		return nil
	}
	return names
}

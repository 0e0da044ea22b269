package dsl

import (
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

// trainPipeline declares variables of object types, with optional
// attributes, and of a map type.
const trainPipeline = `variable "train" {
  type    = object({ lr = number, steps = optional(number, 1000) })
  default = { lr = 0.1 }
}
variable "runs" {
  type    = map(object({ lr = number, seed = optional(number, 0) }))
  default = {}
}
variable "sched" {
  type    = list(object({ at = number, opt = optional(object({ lr = number })) }))
  default = []
}
variable "tags" {
  type    = map(string)
  default = {}
}
variable "free" {
  default = {}
}
variable "key" {
  type      = object({ user = string, secret = string })
  default   = null
  sensitive = true
}
`

// aFolder, as a file's text for resolveIn, makes a folder of that name.
const aFolder = "\x00folder"

// resolveIn resolves the variables of pipeline (p.hcl) in a folder that
// holds files, the current directory while it runs, with env and args.
func resolveIn(t *testing.T, pipeline string, files map[string]string, env []string, args ...VarArg) (map[string]cty.Value, hcl.Diagnostics) {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	for name, text := range files {
		if text == aFolder {
			require.NoError(t, os.Mkdir(name, 0o755))
			continue
		}
		require.NoError(t, os.WriteFile(name, []byte(text), 0o644))
	}
	loader := NewLoader(nil)
	cfg, diags := loader.ParseSource([]byte(pipeline), "p.hcl")
	require.False(t, diags.HasErrors(), diags.Error())
	return cfg.ResolveVariables(VarInputs{Env: env, Args: args}, loader.Parser)
}

// oneError is the one error of diags, as a person reads it: its place
// (file:line:col; "" for none), its summary and its detail.
func oneError(t *testing.T, diags hcl.Diagnostics) (place, summary, detail string) {
	t.Helper()
	errs := diags.Errs()
	require.Len(t, errs, 1, diags.Error())
	d := errs[0].(*hcl.Diagnostic)
	if d.Subject != nil {
		place = Pos(*d.Subject)
	}
	return place, d.Summary, d.Detail
}

// An attribute an object type does not have is refused wherever the
// value comes from, naming it, the variable (the object in it) and the
// place, where conversion to the type would drop it without a word.
func TestVariableValueAttributeNotInType(t *testing.T) {
	for _, c := range []struct {
		name   string
		var_   string
		files  map[string]string
		env    []string
		args   []VarArg
		place  string // of the attribute, file:line:col
		says   string
		source string
	}{
		{
			name:   "--var",
			var_:   "train",
			args:   []VarArg{{Value: "train={lr=0.1, step=10}"}},
			says:   `The value from --var train (at column 10 of "{lr=0.1, step=10}") sets "step", but "step" is not an attribute of var.train's type, which has only lr and steps: converted to the type, the value would lose it without a word. Did you mean "steps"?`,
			source: "--var train",
		},
		{
			name:   "sensitive --var",
			var_:   "key",
			args:   []VarArg{{Value: `key={user="u", secert="hunter2"}`}},
			says:   `The value from --var key (at column 12 of the value, which is sensitive, so not shown) sets "secert", but "secert" is not an attribute of var.key's type, which has only secret and user: converted to the type, the value would lose it without a word. Did you mean "secret"?`,
			source: "--var key",
		},
		{
			name:   "environment",
			var_:   "train",
			env:    []string{"CAIRN_VAR_train={lr=0.1, step=10}"},
			says:   `The value from environment variable CAIRN_VAR_train (at column 10 of "{lr=0.1, step=10}") sets "step"`,
			source: "environment variable CAIRN_VAR_train",
		},
		{
			name:   "JSON variable file",
			var_:   "train",
			files:  map[string]string{"v.json": `{"train": {"lr": 0.1, "step": 10}}`},
			args:   []VarArg{{File: true, Value: "v.json"}},
			place:  "v.json:1:23",
			says:   `The value from v.json sets "step", but "step" is not an attribute of var.train's type, which has only lr and steps`,
			source: "v.json",
		},
		{
			name:   "HCL variable file",
			var_:   "train",
			files:  map[string]string{"v.tfvars": "train = {\n  lr   = 0.1\n  step = 10\n}\n"},
			args:   []VarArg{{File: true, Value: "v.tfvars"}},
			place:  "v.tfvars:3:3",
			says:   `"step" is not an attribute of var.train's type`,
			source: "v.tfvars",
		},
		{
			name:   "map of objects",
			var_:   "runs",
			files:  map[string]string{"v.json": "{\"runs\": {\n  \"a\": {\"lr\": 1},\n  \"b b\": {\"lr\": 2, \"sede\": 3}\n}}"},
			args:   []VarArg{{File: true, Value: "v.json"}},
			place:  "v.json:3:20",
			says:   `sets "sede", but "sede" is not an attribute of var.runs["b b"]'s type, which has only lr and seed: converted to the type, the value would lose it without a word. Did you mean "seed"?`,
			source: "v.json",
		},
		{
			name:   "list of objects, and an object in one",
			var_:   "sched",
			files:  map[string]string{"v.hcl": "sched = [\n  { at = 0 },\n  { at = 5, opt = { lr = 1, momentum = 0.9 } },\n]\n"},
			args:   []VarArg{{File: true, Value: "v.hcl"}},
			place:  "v.hcl:3:29",
			says:   `sets "momentum", but "momentum" is not an attribute of var.sched[1].opt's type, which has only lr`,
			source: "v.hcl",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, diags := resolveIn(t, trainPipeline, c.files, c.env, c.args...)
			place, summary, detail := oneError(t, diags)
			assert.Equal(t, c.place, place)
			assert.Equal(t, `Invalid value for variable "`+c.var_+`"`, summary)
			assert.Contains(t, detail, c.says)
			assert.NotContains(t, detail, "hunter2")
			assert.Contains(t, detail, "Correct the attribute's name, remove it, or add it to the variable's type")
			assert.Equal(t, ValueInput{Source: c.source}, diags.Errs()[0].(*hcl.Diagnostic).Extra, "an error in the value given, not in the pipeline")
		})
	}
}

// A default with an attribute its type does not have is refused as the
// pipeline is read (by validate too), at the attribute.
func TestVariableDefaultAttributeNotInType(t *testing.T) {
	src := "variable \"train\" {\n  type    = object({ lr = number, steps = optional(number, 1000) })\n  default = { lr = 0.1, step = 5 }\n}\n"
	_, diags := NewLoader(nil).ParseSource([]byte(src), "p.hcl")
	place, summary, detail := oneError(t, diags)
	assert.Equal(t, "p.hcl:3:25", place)
	assert.Equal(t, "Invalid default value for variable", summary)
	assert.Contains(t, detail, `The default value sets "step", but "step" is not an attribute of var.train's type, which has only lr and steps: converted to the type, the value would lose it without a word. Did you mean "steps"?`)

	// A map's keys are its own; an object type without attributes has none.
	src = "variable \"m\" {\n  type    = map(object({ a = string }))\n  default = { x = { a = \"1\" }, y = { a = \"2\", b = \"3\" } }\n}\nvariable \"e\" {\n  type    = object({})\n  default = { a = 1 }\n}\n"
	_, diags = NewLoader(nil).ParseSource([]byte(src), "p.hcl")
	require.Len(t, diags.Errs(), 2, diags.Error())
	assert.Equal(t, "p.hcl:3:47", Pos(*diags.Errs()[0].(*hcl.Diagnostic).Subject))
	assert.Contains(t, diags.Errs()[0].Error(), `"b" is not an attribute of var.m["y"]'s type, which has only a:`)
	assert.Contains(t, diags.Errs()[1].Error(), `"a" is not an attribute of var.e's type, which has no attributes:`)
}

// Values that fit their types are taken as before: optional attributes
// filled with their defaults, a map's keys and an untyped variable's
// attributes all kept.
func TestVariableValuesThatFitTheirTypes(t *testing.T) {
	vals, diags := resolveIn(t, trainPipeline, map[string]string{
		"v.json": `{"runs": {"a": {"lr": 1}, "b": {"lr": 2, "seed": 7}}, "tags": {"any": "x", "key": "y"}}`,
	}, nil,
		VarArg{Value: "train={lr=0.2}"},
		VarArg{File: true, Value: "v.json"},
		VarArg{Value: `sched=[{at=1}, {at=2, opt={lr=3}}]`},
		VarArg{Value: `free={anything=1, goes={x=2}}`},
	)
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, `{lr = 0.2, steps = 1000}`, valueString(vals["train"]))
	assert.Equal(t, `{a = {lr = 1, seed = 0}, b = {lr = 2, seed = 7}}`, valueString(vals["runs"]))
	assert.Equal(t, `{any = "x", key = "y"}`, valueString(vals["tags"]))
	assert.Equal(t, `[{at = 1, opt = null}, {at = 2, opt = {lr = 3}}]`, valueString(vals["sched"]))
	assert.Equal(t, `{anything = 1, goes = {x = 2}}`, valueString(vals["free"]))

	vals, diags = resolveIn(t, trainPipeline, nil, nil)
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, `{lr = 0.1, steps = 1000}`, valueString(vals["train"]))
}

// valueString writes v as HCL would, for a test's comparison.
func valueString(v cty.Value) string {
	switch {
	case v.IsNull():
		return "null"
	case v.Type() == cty.String:
		return `"` + v.AsString() + `"`
	case v.Type() == cty.Number:
		return v.AsBigFloat().Text('g', -1)
	case v.Type().IsObjectType() || v.Type().IsMapType():
		var parts []string
		for _, k := range valueKeys(v) {
			parts = append(parts, k+" = "+valueString(member(v, k)))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case v.CanIterateElements():
		var parts []string
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			parts = append(parts, valueString(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return v.GoString()
}

// A JSON variable file holding a byte that is not UTF-8 is refused at
// the byte, where it was read as U+FFFD: the value would have changed.
func TestJSONVarFileNotUTF8(t *testing.T) {
	_, diags := resolveIn(t, `variable "s" { type = string }`, map[string]string{
		"latin1.json": "{\n  \"s\": \"caf\xe9\"\n}",
	}, nil, VarArg{File: true, Value: "latin1.json"})
	place, summary, detail := oneError(t, diags)
	assert.Equal(t, "latin1.json:2:12", place)
	assert.Equal(t, "Invalid character encoding", summary)
	assert.Contains(t, detail, "JSON variable files are UTF-8 text; this one holds a byte that is not UTF-8 here, which a JSON reader would read as U+FFFD")
	assert.Equal(t, ValueInput{Source: "latin1.json"}, diags.Errs()[0].(*hcl.Diagnostic).Extra)

	// UTF-16 is named.
	_, diags = resolveIn(t, `variable "s" { type = string }`, map[string]string{
		"u16.json": "\xff\xfe{\x00}\x00",
	}, nil, VarArg{File: true, Value: "u16.json"})
	place, _, detail = oneError(t, diags)
	assert.Equal(t, "u16.json:1:1", place)
	assert.Contains(t, detail, "This file is UTF-16")
}

// A JSON variable file that starts with a byte-order mark is refused
// saying so and how to remove it, as every JSON reader of cairn does; an
// HCL one is read, as HCL pipeline files are.
func TestVarFileByteOrderMark(t *testing.T) {
	pipeline := `variable "n" { type = number }`
	_, diags := resolveIn(t, pipeline, map[string]string{"v.json": "\xef\xbb\xbf{\"n\": 3}"}, nil, VarArg{File: true, Value: "v.json"})
	place, _, detail := oneError(t, diags)
	assert.Equal(t, "v.json:1:1", place)
	assert.Contains(t, detail, "The file starts with a UTF-8 byte-order mark (bytes EF BB BF), which JSON does not have: save the file without it (UTF-8 without BOM); sed -i '1s/^\\xEF\\xBB\\xBF//' v.json removes it.")
	assert.NotContains(t, detail, "must start with a brace")

	vals, diags := resolveIn(t, pipeline, map[string]string{"v.hcl": "\xef\xbb\xbfn = 3\n"}, nil, VarArg{File: true, Value: "v.hcl"})
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, "3", valueString(vals["n"]))
}

// A variable file that cannot be read, or whose value for a variable
// cannot be, is the one error: the variable is not also called required.
func TestUnreadVarFileIsTheOneError(t *testing.T) {
	pipeline := "variable \"n\" { type = number }\nvariable \"m\" {\n  type = map(number)\n}\n"
	for _, c := range []struct{ file, text, summary string }{
		{"missing.json", "", "Cannot read variable file"},
		{"missing.tfvars", "", "Cannot read variable file"},
		{"dir.json", aFolder, "Cannot read variable file"},
		{"syntax.json", `{"n": 1, "m": `, "Missing value"},
		{"syntax.tfvars", "n = = 1\n", "Invalid expression"},
		{"bom.json", "\xef\xbb\xbf{\"n\": 1, \"m\": {}}", "Byte-order mark in a JSON variable file"},
		{"latin1.json", "{\"n\": 1, \"m\": {\"caf\xe9\": 1}}", "Invalid character encoding"},
		{"latin1.tfvars", "n = 1\nm = { \"caf\xe9\" = 1 }\n", "Invalid character encoding"},
		{"surrogate.json", `{"n": 1, "m": {"a\ud800b": 1}}`, "Invalid JSON variable file"},
		{"huge.json", `{"n": 1e400, "m": {}}`, "Number out of range"},
		{"tiny.json", `{"n": 1, "m": {"a": -1e-400}}`, "Number out of range"},
	} {
		t.Run(c.file, func(t *testing.T) {
			files := map[string]string{}
			if c.text != "" {
				files[c.file] = c.text
			}
			_, diags := resolveIn(t, pipeline, files, nil, VarArg{File: true, Value: c.file})
			_, summary, _ := oneError(t, diags)
			assert.Equal(t, c.summary, summary)
			assert.NotContains(t, diags.Error(), "No value for required variable")
		})
	}

	// A value that cannot be read is its one error; a variable the file
	// does not set is still required.
	_, diags := resolveIn(t, pipeline, map[string]string{"v.json": `{"m": {"a": 1, "a": 2}}`}, nil, VarArg{File: true, Value: "v.json"})
	require.Len(t, diags.Errs(), 2, diags.Error())
	assert.Equal(t, "Duplicate object attribute", diags.Errs()[0].(*hcl.Diagnostic).Summary)
	assert.Equal(t, `No value for required variable "n"`, diags.Errs()[1].(*hcl.Diagnostic).Summary)
	_, diags = resolveIn(t, pipeline, nil, nil, VarArg{Value: "n=1"}, VarArg{Value: "m={a=[1"})
	_, summary, _ := oneError(t, diags)
	assert.Equal(t, `Invalid value for variable "m"`, summary)
}

// A JSON variable file's number beyond what cairn handles is refused for
// a variable of type string too (it became a string of 401 digits), as in
// an HCL file.
func TestHugeNumberInAJSONVarFileForAString(t *testing.T) {
	pipeline := "variable \"s\" { type = string }\n"
	for file, text := range map[string]string{"v.json": `{"s": 1e400}`, "v.tfvars": "s = 1e400\n"} {
		_, diags := resolveIn(t, pipeline, map[string]string{file: text}, nil, VarArg{File: true, Value: file})
		place, summary, _ := oneError(t, diags)
		assert.Equal(t, "Number out of range", summary, file)
		assert.Contains(t, place, file+":1:", file)
	}
}

// A sensitive variable's value given on the command line that does not
// parse, or gives a key twice, is not quoted in the error, nor is its
// key; an untyped variable's is said without "type dynamic".
func TestBadValueOfASensitiveVariableIsNotShown(t *testing.T) {
	for _, arg := range []string{`key={user="u", user="SECRET"}`, `key={user="SECRET", secret=}`, `key=[1, "SECRET"`} {
		_, diags := resolveIn(t, trainPipeline, nil, nil, VarArg{Value: arg})
		_, _, detail := oneError(t, diags)
		assert.NotContains(t, detail, "SECRET", arg)
		assert.NotContains(t, detail, `"user"`, arg)
		assert.Contains(t, detail, "(sensitive, so not shown)", arg)
	}
	_, diags := resolveIn(t, trainPipeline, nil, nil, VarArg{Value: `free=[1,`})
	_, _, detail := oneError(t, diags)
	assert.Contains(t, detail, `The value from --var free is not a valid expression: missing expression at column 4 of "[1,"`)
	assert.NotContains(t, detail, "dynamic")
}

// A value from the command line or the environment that is not UTF-8 is
// refused, as a pipeline or variable file that is not; it would reach the
// node changed.
func TestValueNotUTF8IsRefused(t *testing.T) {
	_, diags := resolveIn(t, trainPipeline+"variable \"s\" {\n  type = string\n}\n", nil, nil, VarArg{Value: "s=caf\xe9"})
	_, summary, detail := oneError(t, diags)
	assert.Equal(t, "Invalid character encoding", summary)
	assert.Contains(t, detail, "The value from --var s holds a byte that is not UTF-8 at byte 4")
	_, diags = resolveIn(t, trainPipeline+"variable \"s\" {\n  type = string\n}\n", nil, []string{"CAIRN_VAR_s=\xff"})
	_, _, detail = oneError(t, diags)
	assert.Contains(t, detail, "holds a byte that is not UTF-8 at byte 1")
}

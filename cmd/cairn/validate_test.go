package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sizesPipeline = `variable "sizes" {
  type    = map(number)
  default = { small = 10 }
}

stage "command" "s" {
  for_each = var.sizes
  run      = ["echo", "${each.value}"]
}
`

// A bad --var value names the key that is wrong and says the error is in
// the value given, not in the pipeline.
func TestBadVarValueNamesKeyAndSource(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": sizesPipeline})
	r := runCLI(t, "--chdir", root, "plan", "p.hcl", "--var", `sizes={small="ten"}`)
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, `at sizes["small"], a number is`)
	assert.Contains(t, r.stderr, "1 error(s) in the variable values from --var sizes; nothing was run")
	assert.NotContains(t, r.stderr, "in the pipeline")

	r = runCLI(t, "--chdir", root, "plan", "p.hcl", "--var", "sizez={}")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "error(s) in the variable values from --var sizez")

	// A mistake in the pipeline is still one.
	root = cliWorkspace(t, map[string]string{"p.hcl": sizesPipeline + "stage \"command\" \"t\" {\n  run = [local.nope]\n}\n"})
	r = runCLI(t, "--chdir", root, "plan", "p.hcl", "--var", `sizes={small="ten"}`)
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "2 error(s) in the pipeline")
}

// cairn show with a key prefix shorter than the minimum says the minimum.
func TestShowShortKeyPrefix(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": sizesPipeline})
	r := runCLI(t, "--chdir", root, "show", "3fa9c1")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, `"3fa9c1" is too short to name a key: a key prefix needs at least 8 hex digits`)
}

// Every shipped pipeline validates without values, as terraform validate
// does: what needs a value waits for one.
func TestShippedPipelinesValidateWithoutValues(t *testing.T) {
	cliWorkspace(t, nil) // clears CAIRN_VAR_*
	repo, err := filepath.Abs("../..")
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(repo, "pipelines", "*.hcl"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 2)
	for _, f := range files {
		r := runCLI(t, "--chdir", repo, "validate", f)
		assert.Equal(t, exitOK, r.code, "%s:\n%s%s", f, r.stdout, r.stderr)
		assert.Contains(t, r.stdout, "Valid: pipeline ", f)
	}
	// The folder holds several pipelines: validate checks each.
	r := runCLI(t, "--chdir", repo, "validate", "pipelines")
	assert.Equal(t, exitOK, r.code, "%s%s", r.stdout, r.stderr)
	for _, f := range files {
		rel, _ := filepath.Rel(repo, f)
		assert.Contains(t, r.stdout, rel+": Valid: pipeline ")
	}

	r = runCLI(t, "--chdir", repo, "validate", "pipelines/aime24_batch.hcl")
	assert.Contains(t, r.stdout, "Checked without values for var.tag, var.variants")
	assert.Regexp(t, `stage\.preflight \(\S*pipelines/aime24_batch\.hcl:\d+:\d+\)`, r.stdout)
	assert.Contains(t, r.stdout, "its instances wait for var.variants")

	valid := filepath.Join(repo, "testdata", "valid")
	ents, err := os.ReadDir(valid)
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		if e.Name() == "data" || !e.IsDir() && !strings.HasSuffix(e.Name(), ".hcl") {
			continue
		}
		n++
		r := runCLI(t, "--chdir", valid, "validate", e.Name())
		assert.Equal(t, exitOK, r.code, "%s:\n%s%s", e.Name(), r.stdout, r.stderr)
	}
	assert.GreaterOrEqual(t, n, 12)
}

// A required variable of another .hcl file in the folder names its file
// and says how to load one file.
func TestFolderPipelineNamesTheOtherFile(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"main.hcl":  "stage \"command\" \"a\" {\n  run = [\"true\"]\n}\n",
		"extra.hcl": "variable \"x\" {\n  type = string\n}\n",
	})
	r := runCLI(t, "--chdir", root, "plan")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, `No value for required variable "x"`)
	assert.Contains(t, r.stderr, "It comes from extra.hcl, one of the 2 .hcl files in the folder")
	assert.Contains(t, r.stderr, "cairn apply FILE")
	r = runCLI(t, "--chdir", root, "plan", "main.hcl")
	assert.Equal(t, exitOK, r.code, r.stderr)
}

// A folder in which two files declare a pipeline block holds two
// pipelines: validate checks each on its own and says which fail; plan
// refuses the folder with one error naming the files, not one per clash
// between them.
func TestFolderOfPipelines(t *testing.T) {
	a := "pipeline \"a\" {}\nvariable \"v\" {\n  default = 1\n}\nstage \"command\" \"s\" {\n  run = [\"true\"]\n}\n"
	b := "pipeline \"b\" {}\nvariable \"v\" {\n  default = 2\n}\nstage \"command\" \"s\" {\n  run = [\"echo\", var.v]\n}\n"
	root := cliWorkspace(t, map[string]string{"ps/a.hcl": a, "ps/b.hcl": b})
	r := runCLI(t, "--chdir", root, "validate", "ps")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `ps/a.hcl: Valid: pipeline "a": 1 stage`)
	assert.Contains(t, r.stdout, `ps/b.hcl: Valid: pipeline "b": 1 stage`)
	assert.Empty(t, r.stderr)

	r = runCLI(t, "--chdir", root, "validate", "ps", "--json")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"valid": true`)

	r = runCLI(t, "--chdir", root, "plan", "ps")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "A folder of pipelines")
	assert.Contains(t, r.stderr, `ps/a.hcl declares pipeline "a"`)
	assert.Contains(t, r.stderr, `ps/b.hcl declares pipeline "b"`)
	assert.NotContains(t, r.stderr, "Duplicate")
	assert.Contains(t, r.stderr, "1 error(s)")

	// One broken file: validate names it and fails; the other still
	// reads as valid.
	root = cliWorkspace(t, map[string]string{"ps/a.hcl": a, "ps/b.hcl": strings.Replace(b, "var.v", "var.w", 1)})
	r = runCLI(t, "--chdir", root, "validate", "ps")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stdout, `ps/a.hcl: Valid: pipeline "a"`)
	assert.Contains(t, r.stderr, `Reference to undeclared variable`)
	assert.Contains(t, r.stderr, "ps/b.hcl: 1 error(s) in the pipeline")
	assert.Contains(t, r.stderr, "1 of the 2 pipelines in ps have errors")

	// A folder whose second file declares no pipeline block is one
	// pipeline, as before.
	root = cliWorkspace(t, map[string]string{"one/a.hcl": a, "one/more.hcl": "stage \"command\" \"t\" {\n  run = [\"true\"]\n}\n"})
	r = runCLI(t, "--chdir", root, "validate", "one")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `Valid: pipeline "a": 2 stages`)
}

// An expression nested too deeply shows its snippet and column in text
// mode, as --json gives its line and column.
func TestTooDeeplyNestedShowsSnippet(t *testing.T) {
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	root := cliWorkspace(t, map[string]string{"p.hcl": "stage \"command\" \"a\" {\n  run = [\"echo\", " + deep + "]\n}\n"})
	r := runCLI(t, "--chdir", root, "validate", "p.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "Expression nested too deeply")
	assert.NotContains(t, r.stderr, "source code not available")
	assert.Contains(t, r.stderr, "p.hcl:2:272:\n   2: …[[[[")
	assert.Contains(t, r.stderr, "line 2, column 272")
}

// A --var number beyond a float64's range is refused, naming the flag.
func TestVarNumberOutOfRange(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": sizesPipeline})
	r := runCLI(t, "--chdir", root, "validate", "p.hcl", "--var", "sizes={small=1e99999999}")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "The value from --var sizes holds a number beyond what cairn handles")
}

// Text diagnostics give the place as FILE:LINE:COL, the line and column
// --json gives; a snippet line is cut around the column, so an error
// after a 2 MB argument is a few hundred bytes, not the argument again.
func TestDiagnosticsShowColumnAndCutLongLines(t *testing.T) {
	long := strings.Repeat("x", 2<<20)
	root := cliWorkspace(t, map[string]string{
		"p.hcl":    "stage \"command\" \"a\" {\n  run  = [\"echo\"]\n  gpus = \"two\"\n}\n",
		"long.hcl": "stage \"command\" \"a\" {\n  run = [\"echo\", \"" + long + "\", 1 + \"b\", \"" + long + "\"]\n}\n",
	})
	r := runCLI(t, "--chdir", root, "validate", "p.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "on "+filepath.Join(root, "p.hcl")+":3:10, in stage \"command\" \"a\":\n   3:   gpus = \"two\"\n")
	j := runCLI(t, "--chdir", root, "validate", "--json", "p.hcl")
	assert.Contains(t, strings.Join(strings.Fields(j.stdout), " "), `"start": { "line": 3, "column": 10,`)

	r = runCLI(t, "--chdir", root, "validate", "long.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.Less(t, len(r.stderr), 2000, "the error text repeats the argument")
	col := len(`  run = ["echo", "`) + len(long) + len(`", 1 + `) + 1
	assert.Contains(t, r.stderr, fmt.Sprintf("long.hcl:2:%d, in stage", col))
	assert.Contains(t, r.stderr, "   2: …"+strings.Repeat("x", 40))
	assert.Contains(t, r.stderr, `", 1 + "b", "xxx`)
	assert.Contains(t, r.stderr, "x…\n")
}

// What fails only when the program starts is refused by validate, with
// its position: an env value holding a NUL byte, and arguments over the
// system's limit on a program's arguments and environment (ARG_MAX),
// though each argument is within the per-argument limit. gpus beyond its
// range says the range.
func TestValidateRefusesWhatCannotStart(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"nul.hcl": "stage \"command\" \"a\" {\n  run = [\"env\"]\n  env = {\n    OK  = \"x\"\n    BAD = \"a\\u0000b\"\n  }\n}\n",
		"big.hcl": `locals {
  c1    = join("", [for j in range(1000) : "0123456789"])
  chunk = join("", [for j in range(10) : local.c1])
}
stage "command" "a" {
  run = concat(["echo"], [for i in range(70) : "${local.chunk}${i}"])
}
`,
		"small.hcl": `locals {
  c1    = join("", [for j in range(1000) : "0123456789"])
  chunk = join("", [for j in range(10) : local.c1])
}
stage "command" "a" {
  run = concat(["echo"], [for i in range(2) : "${local.chunk}${i}"])
}
`,
		"gpus.hcl": "stage \"command\" \"a\" {\n  run  = [\"echo\"]\n  gpus = 1048577\n}\n",
	})
	r := runCLI(t, "--chdir", root, "validate", "nul.hcl")
	assert.Equal(t, exitBadInput, r.code, r.stderr)
	assert.Contains(t, r.stderr, "nul.hcl:5:5, in stage")
	assert.Contains(t, r.stderr, "env.BAD holds a NUL byte (at byte 1)")

	r = runCLI(t, "--chdir", root, "validate", "big.hcl")
	assert.Equal(t, exitBadInput, r.code, r.stderr)
	assert.Contains(t, r.stderr, "big.hcl:6:9, in stage")
	assert.Contains(t, strings.Join(strings.Fields(r.stderr), " "), "(ARG_MAX): it would fail to start with \"argument list too long\"")

	r = runCLI(t, "--chdir", root, "validate", "small.hcl")
	assert.Equal(t, exitOK, r.code, r.stderr)

	r = runCLI(t, "--chdir", root, "validate", "gpus.hcl")
	assert.Equal(t, exitBadInput, r.code, r.stderr)
	assert.Contains(t, r.stderr, "gpus must be a whole number from 0 to 1048576.")
}

// A kind's own attribute known at validate time is checked then, not
// first at apply: needed of the wrong type, an inline items list with
// one id twice. Both are bad input (exit 2) at file:line:col, for plan
// too.
func TestValidateChecksKindAttributes(t *testing.T) {
	eval := func(items, needed string) string {
		return "stage \"evaluate\" \"val\" {\n  worker = [\"python3\", \"w.py\"]\n  items  = " + items +
			"\n  model  = \"m\"\n  scores = \"out/s.jsonl\"\n  needed = " + needed + "\n}\n"
	}
	root := cliWorkspace(t, map[string]string{
		"yes.hcl":  eval(`[{ id = "a" }]`, `"yes"`),
		"five.hcl": eval(`[{ id = "a" }]`, "5"),
		"dup.hcl":  eval(`[{ id = "a" }, { id = "a" }]`, "true"),
		"ok.hcl":   eval(`[{ id = "a" }, { id = "b" }]`, `!fileexists("selection.json")`),
	})
	for _, cmd := range []string{"validate", "plan"} {
		r := runCLI(t, "--chdir", root, cmd, "yes.hcl")
		assert.Equal(t, exitBadInput, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stderr, "yes.hcl:6:12, in stage")
		assert.Contains(t, r.stderr, `needed must be true or false (like !fileexists("selection.json")), not the string "yes".`)
	}
	r := runCLI(t, "--chdir", root, "validate", "five.hcl")
	assert.Equal(t, exitBadInput, r.code, r.stderr)
	assert.Contains(t, r.stderr, "not the number 5.")
	r = runCLI(t, "--chdir", root, "validate", "dup.hcl")
	assert.Equal(t, exitBadInput, r.code, r.stderr)
	assert.Contains(t, r.stderr, "dup.hcl:3:12, in stage")
	assert.Contains(t, strings.Join(strings.Fields(r.stderr), " "), `item 0 of the items list and item 1 of the items list have the same id "a"`)
	r = runCLI(t, "--chdir", root, "validate", "ok.hcl")
	assert.Equal(t, exitOK, r.code, r.stderr)
}

// An error found as a node is prepared, or as its postcondition is
// evaluated, names its place as validate does: file:line:col.
func TestRunTimeErrorsNameFileLineCol(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `stage "command" "t" {
  run    = ["sh", "-c", "echo '{\"acc\": 0.9}' > t.json"]
  result = "t.json"
}

stage "command" "u" {
  run = ["echo", stage.t.result.accuracy]
}

stage "command" "w" {
  run = ["echo", "x"]
  postcondition {
    condition     = self.result.acc > 1
    error_message = "no result"
  }
}
`})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	assert.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	out := r.stdout + r.stderr
	assert.Regexp(t, `cannot evaluate its attributes: \S*p\.hcl:7:32: Unsupported attribute: This object does not have an attribute named "accuracy"\.`, out)
	assert.Regexp(t, `the postcondition could not be evaluated: \S*p\.hcl:13:32: Attempt to get attribute from null value`, out)
	assert.NotRegexp(t, `p\.hcl:\d+,\d+-\d+`, out, "hcl's own range form")
}

// A --var-file among the *.hcl files of a folder pipeline is refused as
// what it is, before the folder is read: it would be part of the pipeline.
func TestVarFileInsidePipelineFolderRefused(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"p/main.hcl": "variable \"tag\" {\n  type = string\n}\n\nstage \"command\" \"s\" {\n  run = [\"echo\", var.tag]\n}\n",
		"p/dev.hcl":  "tag = \"x\"\n",
		"dev.hcl":    "tag = \"y\"\n",
	})
	for _, cmd := range []string{"validate", "plan", "apply"} {
		r := runCLI(t, "--chdir", root, cmd, "p", "--var-file", "p/dev.hcl")
		assert.Equal(t, exitBadInput, r.code, cmd)
		assert.Contains(t, r.stderr, "Variable file inside the pipeline folder", cmd)
		assert.Contains(t, strings.Join(strings.Fields(r.stderr), " "), "Rename it dev.vars (or write it as .json), or move it out of the folder.", cmd)
	}
	// The same file outside the folder is a variable file, and a plan.
	r := runCLI(t, "--chdir", root, "plan", filepath.Join("p", "main.hcl"), "--var-file", "dev.hcl")
	assert.Equal(t, 0, r.code, r.stderr)
}

// A pipeline file that is not UTF-8 is one error, at its first bad byte,
// naming UTF-16 when the file is; bytes that are not UTF-8 in a comment
// pass, as before.
func TestPipelineFileEncoding(t *testing.T) {
	src := "stage \"command\" \"a\" {\n  run = [\"true\"]\n}\n"
	var u16 []byte
	u16 = append(u16, 0xFF, 0xFE)
	for _, r := range src {
		u16 = append(u16, byte(r), 0)
	}
	root := cliWorkspace(t, map[string]string{
		"u16.hcl":     string(u16),
		"latin1.hcl":  "stage \"command\" \"a\" {\n  run = [\"caf\xe9\"]\n}\n",
		"comment.hcl": "# caf\xe9\n" + src,
	})
	r := runCLI(t, "--chdir", root, "validate", "u16.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.Equal(t, 1, strings.Count(r.stderr, "Error: Invalid character encoding"), r.stderr)
	assert.Contains(t, strings.Join(strings.Fields(r.stderr), " "), "This file is UTF-16")
	assert.Contains(t, r.stderr, "1 error(s) in the pipeline")

	r = runCLI(t, "--chdir", root, "validate", "latin1.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "latin1.hcl:2:14")
	assert.Contains(t, r.stderr, "1 error(s) in the pipeline")

	r = runCLI(t, "--chdir", root, "validate", "comment.hcl")
	assert.Equal(t, exitOK, r.code, r.stderr)
}

// A reference that every instance of a stage checks is reported once, not
// once per instance, on the terminal and in validate --json.
func TestOneMistakeIsReportedOnce(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `stage "command" "b" {
  for_each = toset(["x", "y"])
  run      = ["true"]
}

stage "command" "a" {
  for_each = toset([for i in range(50) : tostring(i)])
  run      = ["echo", stage.b["w"].key]
  after    = [stage.b["z"]]
}
`})
	r := runCLI(t, "--chdir", root, "validate", "p.hcl", "--no-color")
	assert.Equal(t, exitBadInput, r.code)
	assert.Equal(t, 1, strings.Count(r.stderr, `stage.b has no instance "z"`), r.stderr)
	assert.Equal(t, 1, strings.Count(r.stderr, `stage.b has no instance "w"`), r.stderr)
	assert.Contains(t, r.stderr, "2 error(s) in the pipeline")
	r = runCLI(t, "--chdir", root, "validate", "p.hcl", "--json")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stdout, `"error_count": 2`)
}

// A stage that names one of its own instances is told that once: not
// also that it has no for_each, which it has.
func TestSelfReferenceToAnInstanceIsOneError(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `stage "command" "a" {
  for_each = toset(["x", "y"])
  run      = ["true"]
  wait_for = [stage.a["x"]]
}
`})
	r := runCLI(t, "--chdir", root, "validate", "p.hcl", "--no-color")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "stage.a cannot refer to itself")
	assert.NotContains(t, r.stderr, "has no for_each")
	assert.Contains(t, r.stderr, "1 error(s) in the pipeline")
}

// A value a validation refuses is the one error: what the pipeline
// computes from it is not evaluated into errors of its own.
func TestRefusedValueIsTheOneError(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `variable "cfg" {
  type = string
  validation {
    condition     = can(jsondecode(var.cfg).lr)
    error_message = "cfg must give lr."
  }
}

locals {
  lr = jsondecode(var.cfg).lr * 2
}

stage "command" "s" {
  run = ["echo", local.lr]
}
`})
	r := runCLI(t, "--chdir", root, "plan", "p.hcl", "--var", `cfg={"rate": 1}`, "--no-color")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "cfg must give lr.")
	assert.NotContains(t, r.stderr, "Unsupported attribute")
	assert.Contains(t, r.stderr, "1 error(s)")
}

// A variable's default that is not a literal (a function call) is one
// error in plan: the variable is not also reported as required, as if it
// had no default.
func TestDefaultNotALiteralIsOneError(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "variable \"d\" {\n  default = upper(\"x\")\n}\nstage \"command\" \"a\" {\n  run = [\"echo\", var.d]\n}\n"})
	r := runCLI(t, "--chdir", root, "plan", "p.hcl")
	assert.Equal(t, exitBadInput, r.code, r.stdout)
	assert.Contains(t, r.stderr, "Function calls not allowed")
	assert.NotContains(t, r.stderr, "No value for required variable")
	assert.Contains(t, r.stderr, "1 error(s) in the pipeline")
}

// A misspelt attribute of a stage's instance gets the closest one it has,
// and the list, as a misspelt self attribute does.
func TestMisspeltInstanceAttributeIsSuggested(t *testing.T) {
	for _, ref := range []string{`stage.train.stauts`, `stage.each["a"].stauts`} {
		root := cliWorkspace(t, map[string]string{"p.hcl": "stage \"command\" \"train\" {\n  run = [\"true\"]\n}\nstage \"command\" \"each\" {\n  for_each = toset([\"a\"])\n  run      = [\"true\"]\n}\nstage \"command\" \"b\" {\n  run = [\"echo\", " + ref + "]\n}\n"})
		r := runCLI(t, "--chdir", root, "validate", "p.hcl")
		assert.Equal(t, exitBadInput, r.code, r.stdout)
		flat := strings.Join(strings.Fields(r.stderr), " ")
		assert.Contains(t, flat, `This object does not have an attribute named "stauts". Did you mean "status"? An instance has key, value, result, status`, ref)
	}
}

// A value known only at plan is checked by its type at validate: one of
// the attribute's own type passes (an unset number for cpus, an unset
// string for memory, run's strings), one of another type is refused.
func TestValidateChecksUnknownValuesByType(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "variable \"n\" {\n  type = number\n}\nvariable \"m\" {\n  type = string\n}\nvariable \"l\" {\n  type = list(string)\n}\nstage \"command\" \"a\" {\n  run     = [\"echo\", var.m, var.n]\n  cpus    = var.n\n  gpus    = var.n\n  memory  = var.m\n  timeout = var.m\n}\n"})
	r := runCLI(t, "--chdir", root, "validate", "p.hcl")
	assert.Equal(t, exitOK, r.code, r.stderr)

	root = cliWorkspace(t, map[string]string{"p.hcl": "variable \"l\" {\n  type = list(string)\n}\nstage \"command\" \"a\" {\n  run    = [\"echo\"]\n  cpus   = var.l\n  memory = var.l\n}\n"})
	r = runCLI(t, "--chdir", root, "validate", "p.hcl")
	assert.Equal(t, exitBadInput, r.code, r.stdout)
	assert.Contains(t, r.stderr, "cpus must be a whole number, not list of string.")
	assert.Contains(t, r.stderr, `memory must be a memory size like "16G", not list of string.`)
}

// fileexists() (or file(), filesha256()) of a path another stage writes,
// in a value that enters a key, reads the file before that stage runs:
// validate and plan warn at the call, naming the stage and what to use
// instead, and still exit 0. A call whose value stays out of every key
// (concurrency here; an evaluation's needed) is left alone.
func TestFileReadOfAStagesOutputWarns(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"p.hcl": `locals {
  done = fileexists("out/done.txt")
}

stage "command" "gen" {
  run     = ["sh", "-c", "mkdir -p out && echo hi > out/done.txt"]
  outputs = ["out/done.txt"]
}

stage "command" "use" {
  run = ["echo", local.done ? "again" : "first"]
}
`,
		"q.hcl": `stage "command" "gen" {
  run     = ["sh", "-c", "mkdir -p out && echo hi > out/done.txt"]
  outputs = ["out/done.txt"]
}

stage "command" "use" {
  run         = ["echo", "x"]
  concurrency = fileexists("out/done.txt") ? 1 : 2
}
`,
	})
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, cmd := range []string{"validate", "plan"} {
		r := runCLI(t, "--chdir", root, cmd, "p.hcl", "--no-color")
		assert.Equal(t, exitOK, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stderr, "Warning: File read before the stage that writes it", cmd)
		assert.Regexp(t, `on \S*p\.hcl:2:10`, r.stderr, cmd)
		assert.Regexp(t, `fileexists\(\) reads out/done\.txt when the pipeline is evaluated, and stage\.gen writes it \(outputs, at \S*p\.hcl:7:14\)\.`, flat(r.stderr), cmd)
		assert.Contains(t, flat(r.stderr), "list it in inputs (the node then waits for stage.gen and is keyed by the file's content)", cmd)

		r = runCLI(t, "--chdir", root, cmd, "q.hcl", "--no-color")
		assert.Equal(t, exitOK, r.code, r.stdout+r.stderr)
		assert.NotContains(t, r.stderr, "Warning", cmd)
	}
}

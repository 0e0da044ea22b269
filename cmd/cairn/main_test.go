package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
)

// cliResult is one in-process cairn invocation.
type cliResult struct {
	code           int
	stdout, stderr string
}

// assertNoDefaultCache asserts that root, a workspace, holds no cache of
// its own (.cairn): an apply on another cache makes only the workspace's
// lock file of the paths nodes write there, .cairn/locks/paths
// (docs/durability.md).
func assertNoDefaultCache(t *testing.T, root string, msgAndArgs ...any) {
	t.Helper()
	var found []string
	filepath.WalkDir(filepath.Join(root, ".cairn"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	for _, f := range found {
		if f != ".cairn/locks/paths" {
			assert.Fail(t, "the workspace holds a cache of its own: "+strings.Join(found, ", "), msgAndArgs...)
			return
		}
	}
}

func runCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return cliResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// cliWorkspace makes a temporary workspace holding files, with cairn's
// environment variables cleared so that the host's settings do not leak
// in.
func cliWorkspace(t *testing.T, files map[string]string) string {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "CAIRN_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	t.Setenv("CAIRN_NO_FSYNC", "1")
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return root
}

const goodPipeline = `pipeline "demo" {}

variable "models" {
  type    = list(string)
  default = ["llama", "qwen"]
}

variable "token" {
  type      = string
  default   = "tok-cli-secret"
  sensitive = true
}

stage "command" "prepare" {
  run = ["echo", "prepare"]
}

stage "command" "eval" {
  for_each = toset(var.models)
  after    = [stage.prepare]
  run      = ["echo", each.key]
  env      = { TOKEN = var.token }
}

stage "command" "report" {
  run = ["echo", jsonencode([for k, v in stage.eval : v.key])]
}
`

const badPipeline = `stage "command" "train" {
  run  = ["python", "train.py"]
  gpus = "two"
}

stage "command" "eval" {
  after = [stage.trian]
  run   = ["python", "eval.py"]
}
`

func TestExitCodes(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"good.hcl": goodPipeline, "bad.hcl": badPipeline})

	r := runCLI(t, "--chdir", root, "validate", "good.hcl")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "Valid: pipeline \"demo\": 3 stages, 4 nodes.\n", r.stdout)
	assert.Empty(t, r.stderr)

	r = runCLI(t, "--chdir", root, "validate", "bad.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.Empty(t, r.stdout)
	// Every problem at once, each with its file and line.
	assert.Contains(t, r.stderr, "Error: Reference to undeclared stage")
	assert.Contains(t, r.stderr, `Did you mean "train"?`)
	assert.Regexp(t, `on .*bad\.hcl:7:12, in stage`, r.stderr)
	// gpus = "two" is a value error, reported in the same pass.
	assert.Contains(t, r.stderr, "Error: Invalid gpus")
	assert.Regexp(t, `on .*bad\.hcl:3:10, in stage`, r.stderr)
	assert.Contains(t, r.stderr, "Error: 2 error(s) in the pipeline; nothing was run")
	assert.Less(t, strings.Index(r.stderr, "Invalid gpus"), strings.Index(r.stderr, "undeclared stage"), "in file order")

	r = runCLI(t, "--chdir", root, "validate", "--no-such-flag", "good.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "unknown flag: --no-such-flag")

	r = runCLI(t, "frobnicate")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, `unknown command "frobnicate"`)
	// So is help on one, or a completion for a shell cairn does not know.
	r = runCLI(t, "help", "frobnicate")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, `no command "frobnicate": 'cairn --help' lists the commands`)
	r = runCLI(t, "completion", "nosh")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, `unknown command "nosh" for "cairn completion"`)
	for _, args := range [][]string{{"help"}, {"help", "apply"}, {"completion"}, {"completion", "bash"}} {
		r = runCLI(t, args...)
		assert.Equal(t, exitOK, r.code, "%v: %s", args, r.stderr)
		assert.NotEmpty(t, r.stdout, args)
	}

	r = runCLI(t, "--chdir", root, "validate", "missing.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "Cannot read pipeline")

	r = runCLI(t, "--chdir", root, "plan", "bad.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.Empty(t, r.stdout)
}

func TestValidateOneError(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"bad.hcl": strings.Replace(badPipeline, "stage.trian", "stage.train", 1)})
	r := runCLI(t, "--chdir", root, "validate", "bad.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "Error: Invalid gpus")
	assert.Contains(t, r.stderr, "bad.hcl:3:10")
	assert.Contains(t, r.stderr, "Error: 1 error(s) in the pipeline; nothing was run")
	assert.NotContains(t, r.stderr, "undeclared")
}

type validateJSON struct {
	Valid       bool `json:"valid"`
	ErrorCount  int  `json:"error_count"`
	Diagnostics []struct {
		Severity string     `json:"severity"`
		Summary  string     `json:"summary"`
		Detail   string     `json:"detail"`
		Range    *jsonRange `json:"range"`
	} `json:"diagnostics"`
	Waiting []struct {
		Stage    string    `json:"stage"`
		WaitsFor string    `json:"waits_for"`
		Range    jsonRange `json:"range"`
	} `json:"waiting_for_values"`
}

type jsonRange struct {
	Filename string `json:"filename"`
	Start    struct {
		Line   int `json:"line"`
		Column int `json:"column"`
	} `json:"start"`
}

func TestValidateJSON(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"good.hcl": goodPipeline, "bad.hcl": badPipeline})

	r := runCLI(t, "--chdir", root, "validate", "--json", "good.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	var ok validateJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ok), r.stdout)
	assert.True(t, ok.Valid)
	assert.Zero(t, ok.ErrorCount)
	assert.Empty(t, ok.Diagnostics)

	r = runCLI(t, "--chdir", root, "validate", "-json", "bad.hcl")
	require.Equal(t, exitBadInput, r.code)
	var bad validateJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &bad), r.stdout)
	assert.False(t, bad.Valid)
	require.Equal(t, 2, bad.ErrorCount)
	require.Len(t, bad.Diagnostics, 2)
	lines := map[string][2]int{}
	for _, d := range bad.Diagnostics {
		assert.Equal(t, "error", d.Severity)
		assert.NotEmpty(t, d.Detail)
		require.NotNil(t, d.Range, d.Summary)
		assert.Equal(t, "bad.hcl", filepath.Base(d.Range.Filename))
		lines[d.Summary] = [2]int{d.Range.Start.Line, d.Range.Start.Column}
	}
	assert.Equal(t, "Invalid gpus", bad.Diagnostics[0].Summary, "in file order")
	// The range's names are lower case, as every other name in the object
	// (Go's decoder above would take either).
	assert.Contains(t, r.stdout, `"filename": "`)
	assert.Contains(t, r.stdout, `"start": {`)
	assert.NotContains(t, r.stdout, `"Filename"`)
	assert.NotContains(t, r.stdout, `"Line"`)

	// A stage waiting for a variable's value, and where its for_each is.
	wait := cliWorkspace(t, map[string]string{"w.hcl": "pipeline \"p\" {}\nvariable \"n\" { type = list(string) }\nstage \"command\" \"a\" {\n  for_each = toset(var.n)\n  run = [\"true\"]\n}\n"})
	r = runCLI(t, "--chdir", wait, "validate", "--json", "w.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	var w validateJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &w), r.stdout)
	require.Len(t, w.Waiting, 1)
	assert.Equal(t, "stage.a", w.Waiting[0].Stage)
	assert.Equal(t, "var.n", w.Waiting[0].WaitsFor)
	assert.Equal(t, [2]int{4, 14}, [2]int{w.Waiting[0].Range.Start.Line, w.Waiting[0].Range.Start.Column})
	assert.NotContains(t, r.stdout, `"Filename"`)
	assert.Equal(t, map[string][2]int{
		"Reference to undeclared stage": {7, 12},
		"Invalid gpus":                  {3, 10},
	}, lines)
}

func TestPlanJSON(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"good.hcl": goodPipeline})
	r := runCLI(t, "--chdir", root, "plan", "--json", "good.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	var p plan.JSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &p), r.stdout)
	assert.Equal(t, 1, p.Format)
	assert.Equal(t, "demo", p.Pipeline)
	assert.Equal(t, 1, p.ToRun)
	assert.Equal(t, 3, p.MayRun, "their keys wait for prepare's output")
	assert.Zero(t, p.Cached)
	byAddr := map[string]plan.NodeJSON{}
	var order []string
	for _, n := range p.Nodes {
		byAddr[n.Address] = n
		order = append(order, n.Address)
	}
	assert.Equal(t, []string{"stage.prepare", `stage.eval["llama"]`, `stage.eval["qwen"]`, "stage.report"}, order)
	prep := byAddr["stage.prepare"]
	assert.Equal(t, "run", prep.Action)
	assert.Equal(t, "command", prep.Kind)
	assert.Regexp(t, `^[0-9a-f]{64}$`, prep.Key)
	assert.Equal(t, []string{"new"}, prep.Reasons)
	ev := byAddr[`stage.eval["qwen"]`]
	assert.Empty(t, ev.Key, "known only after prepare runs")
	assert.Equal(t, "may_run", ev.Action)
	assert.Equal(t, []string{"depends on the output of stage.prepare"}, ev.Reasons)
	assert.Equal(t, []string{"stage.prepare"}, ev.Deps)
	assert.Equal(t, []string{`stage.eval["llama"]`, `stage.eval["qwen"]`}, byAddr["stage.report"].Deps)
	assert.NotContains(t, r.stdout, "tok-cli-secret")

	// The human plan says the same.
	r = runCLI(t, "--chdir", root, "plan", "good.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `cairn plan: pipeline "demo": 3 stages, 4 nodes`)
	assert.Regexp(t, `\+ stage\.prepare\s+run: new`, r.stdout)
	assert.Regexp(t, `\? stage\.eval\["llama"\]\s+may run: depends on the output of stage\.prepare`, r.stdout)
	assert.Contains(t, r.stdout, "Plan: 1 to run, 3 may run, 0 cached.")
	assert.NotContains(t, r.stdout, "tok-cli-secret")
}

// varsPipeline shows the value of tag in a node address, so a plan tells
// which source won.
const varsPipeline = `variable "tag" {
  type    = string
  default = "from-default"
}

variable "models" {
  type    = list(string)
  default = ["m0"]
}

stage "command" "show" {
  for_each = toset(concat([var.tag], var.models))
  run      = ["echo", each.key]
}
`

// planKeys returns the instance keys of stage.show in the JSON plan.
func planKeys(t *testing.T, r cliResult) []string {
	t.Helper()
	require.Equal(t, exitOK, r.code, r.stderr)
	var p plan.JSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &p), r.stdout)
	var keys []string
	re := regexp.MustCompile(`^stage\.show\["(.*)"\]$`)
	for _, n := range p.Nodes {
		if m := re.FindStringSubmatch(n.Address); m != nil {
			keys = append(keys, m[1])
		}
	}
	return keys
}

func TestVariablePrecedence(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"pipeline.hcl":   varsPipeline,
		"a.hcl.vars":     `tag = "from-hcl-file"` + "\n",
		"b.json":         `{"tag": "from-json-file", "models": ["j1", "j2"]}`,
		"sub/models.hcl": `models = ["s1"]` + "\n",
	})
	plan := func(args ...string) []string {
		t.Helper()
		return planKeys(t, runCLI(t, append([]string{"--chdir", root, "plan", "--json", "pipeline.hcl"}, args...)...))
	}
	assert.Equal(t, []string{"from-default", "m0"}, plan())

	t.Setenv("CAIRN_VAR_tag", "from-env")
	assert.Equal(t, []string{"from-env", "m0"}, plan(), "the environment beats the default")
	assert.Equal(t, []string{"from-flag", "m0"}, plan("--var", "tag=from-flag"), "a flag beats the environment")
	assert.Equal(t, []string{"from-flag", "m0"}, plan("-var", "tag=from-flag"), "-var is --var")
	assert.Equal(t, []string{"from-flag", "m0"}, plan("-var=tag=from-flag"))
	assert.Equal(t, []string{"from-hcl-file", "m0"}, plan("--var-file", "a.hcl.vars"), "a file beats the environment")
	assert.Equal(t, []string{"from-hcl-file", "m0"}, plan("-var-file=a.hcl.vars"))

	// Later flags win, files and single values alike.
	assert.Equal(t, []string{"from-hcl-file", "m0"}, plan("--var", "tag=from-flag", "--var-file", "a.hcl.vars"))
	assert.Equal(t, []string{"from-flag", "m0"}, plan("--var-file", "a.hcl.vars", "--var", "tag=from-flag"))
	assert.Equal(t, []string{"from-json-file", "j1", "j2"}, plan("--var-file", "a.hcl.vars", "--var-file", "b.json"))
	assert.Equal(t, []string{"from-hcl-file", "j1", "j2"}, plan("--var-file", "b.json", "--var-file", "a.hcl.vars"))
	assert.Equal(t, []string{"from-json-file", "s1"}, plan("-var-file", "b.json", "-var-file", "sub/models.hcl"))
	assert.Equal(t, []string{"from-env", "x", "y"}, plan("--var", `models=["x", "y"]`))
	t.Setenv("CAIRN_VAR_models", `["e1"]`)
	assert.Equal(t, []string{"e1", "from-env"}, plan(), "(a set: sorted)")
	assert.Equal(t, []string{"from-env", "s1"}, plan("--var-file", "sub/models.hcl"))

	// Mistakes in variables are bad input.
	r := runCLI(t, "--chdir", root, "plan", "pipeline.hcl", "--var", "tagg=x")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, `Did you mean "tag"?`)
	r = runCLI(t, "--chdir", root, "plan", "pipeline.hcl", "--var", "models=not-a-list")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, `Invalid value for variable "models"`)
	assert.Contains(t, r.stderr, `like ["a", "b"]`)
	assert.NotContains(t, r.stderr, "source code not available")
	r = runCLI(t, "--chdir", root, "plan", "pipeline.hcl", "--var-file", "missing.tfvars")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "missing.tfvars")
}

func TestVarFileRelativeToChdir(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"pipeline.hcl": varsPipeline,
		"tag.tfvars":   `tag = "chdir-file"` + "\n",
	})
	t.Chdir(t.TempDir())
	keys := planKeys(t, runCLI(t, "-chdir="+root, "plan", "-json", "-var-file=tag.tfvars", "pipeline.hcl"))
	assert.Equal(t, []string{"chdir-file", "m0"}, keys)
}

func TestPlanOut(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"good.hcl": goodPipeline,
		"m.tfvars": `models = ["gemma"]` + "\n",
	})
	r := runCLI(t, "--chdir", root, "plan", "good.hcl", "--out", "saved.plan",
		"--var-file", "m.tfvars", "--var", "token=tok-from-flag")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Saved the plan to")
	assert.Contains(t, r.stdout, "cairn apply")

	b, err := os.ReadFile(filepath.Join(root, "saved.plan"))
	require.NoError(t, err, "--out resolves against --chdir")
	assert.NotContains(t, string(b), "tok-from-flag", "a sensitive --var is not saved")
	assert.NotContains(t, string(b), "tok-cli-secret")
	var pf plan.File
	require.NoError(t, json.Unmarshal(b, &pf), string(b))
	assert.Equal(t, plan.FileFormat, pf.Format)
	assert.Equal(t, "demo", pf.Pipeline)
	assert.Equal(t, "good.hcl", pf.Path)
	assert.Equal(t, root, pf.Root)
	require.Len(t, pf.Vars, 1)
	assert.True(t, pf.Vars[0].File)
	assert.Equal(t, filepath.Join(root, "m.tfvars"), pf.Vars[0].Value)
	require.Len(t, pf.Nodes, 3)
	for i, want := range []plan.FileEntry{
		{Address: "stage.prepare", Action: "run"},
		{Address: `stage.eval["gemma"]`, Action: "may_run"},
		{Address: "stage.report", Action: "may_run"},
	} {
		assert.Equal(t, want.Address, pf.Nodes[i].Address)
		assert.Equal(t, want.Action, pf.Nodes[i].Action)
	}
	assert.Regexp(t, `^[0-9a-f]{64}$`, pf.Nodes[0].Key)
	assert.Empty(t, pf.Nodes[1].Key, "only prepare's key is known before anything runs")

	// The saved key is the one a JSON plan shows.
	r = runCLI(t, "--chdir", root, "plan", "--json", "good.hcl", "--var-file", "m.tfvars")
	require.Equal(t, exitOK, r.code, r.stderr)
	var p plan.JSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &p))
	assert.Equal(t, pf.Nodes[0].Key, p.Nodes[0].Key)
}

func TestGraphDOT(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"good.hcl": goodPipeline})
	r := runCLI(t, "--chdir", root, "graph", "good.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	dot := r.stdout
	assert.True(t, strings.HasPrefix(dot, `strict digraph "demo" {`), dot)
	checkDOT(t, dot)
	again := runCLI(t, "--chdir", root, "graph", "good.hcl")
	assert.Equal(t, dot, again.stdout, "the same graph prints the same DOT")
	for _, edge := range []string{
		`"stage.prepare" -> "stage.eval[\"llama\"]"`,
		`"stage.prepare" -> "stage.eval[\"qwen\"]"`,
		`"stage.eval[\"llama\"]" -> "stage.report"`,
		`"stage.eval[\"qwen\"]" -> "stage.report"`,
	} {
		assert.Contains(t, dot, edge)
	}
	assert.Equal(t, 4, strings.Count(dot, "->"), dot)

	r = runCLI(t, "--chdir", root, "graph", "--stages", "good.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	dot = r.stdout
	assert.Contains(t, dot, `"stage.prepare" -> "stage.eval"`)
	assert.Contains(t, dot, `"stage.eval" -> "stage.report"`)
	assert.Equal(t, 2, strings.Count(dot, "->"), dot)
	assert.Contains(t, dot, `label="stage.eval\n(command, 2)"`, "a stage vertex counts its nodes")
	checkDOT(t, dot)

	r = runCLI(t, "--chdir", root, "graph", "--out", "g.dot", "good.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	b, err := os.ReadFile(filepath.Join(root, "g.dot"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"stage.prepare" -> `)
	r = runCLI(t, "--chdir", root, "graph", "--out", "g.dot/x.dot", "good.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "cannot write the graph to --out g.dot/x.dot (not a directory): give a file you may write, in a folder that exists")

	r = runCLI(t, "--chdir", root, "graph", "--format", "png", "good.hcl")
	assert.Equal(t, exitBadInput, r.code)
}

// wait_for edges, which order without keying, are drawn dashed; an
// upstream that is also a data dependency is drawn as one.
func TestGraphDOTWaitForDashed(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"w.hcl": `
stage "command" "gate" {
  for_each = toset(["a", "b"])
  run      = ["echo", each.key]
}

stage "command" "job" {
  for_each = toset(["a", "b"])
  wait_for = [stage.gate]
  after    = [stage.gate[each.key]]
  run      = ["echo", each.key]
}
`})
	r := runCLI(t, "--chdir", root, "graph", "w.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"stage.gate[\"a\"]" -> "stage.job[\"a\"]";`)
	assert.Contains(t, r.stdout, `"stage.gate[\"b\"]" -> "stage.job[\"a\"]" [style=dashed];`)
	assert.Equal(t, 4, strings.Count(r.stdout, "->"), r.stdout)
	assert.Equal(t, 2, strings.Count(r.stdout, "dashed"), r.stdout)
	checkDOT(t, r.stdout)

	// --stages: job needs gate's outputs (after), so the stage edge is
	// solid; a stage that only waits for another gets a dashed one.
	r = runCLI(t, "--chdir", root, "graph", "w.hcl", "--stages")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"stage.gate" -> "stage.job";`)
	root = cliWorkspace(t, map[string]string{"w.hcl": `
stage "command" "gate" {
  run = ["true"]
}
stage "command" "job" {
  wait_for = [stage.gate]
  run      = ["true"]
}
`})
	r = runCLI(t, "--chdir", root, "graph", "w.hcl", "--stages")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"stage.gate" -> "stage.job" [style=dashed];`)
	checkDOT(t, r.stdout)
}

// Instance keys may hold quotes, backslashes and newlines; the DOT stays
// valid.
func TestGraphDOTEscapes(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"odd.hcl": `
stage "command" "a" {
  for_each = toset(["q\"uote", "back\\slash", "new\nline"])
  run      = ["echo", each.key]
}

stage "command" "b" {
  after = [stage.a]
  run   = ["echo"]
}
`})
	r := runCLI(t, "--chdir", root, "graph", "odd.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"stage.a[\"q\\\"uote\"]" -> "stage.b"`)
	assert.Equal(t, 3, strings.Count(r.stdout, "->"))
	checkDOT(t, r.stdout)
}

// checkDOT has graphviz parse the DOT, when it is installed.
func checkDOT(t *testing.T, dot string) {
	t.Helper()
	bin, err := exec.LookPath("dot")
	if err != nil {
		t.Log("graphviz's dot is not installed: DOT syntax not checked")
		return
	}
	cmd := exec.Command(bin, "-Tsvg")
	cmd.Stdin = strings.NewReader(dot)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "dot refused the graph: %s\n%s", out, dot)
	assert.Contains(t, string(out), "<svg")
}

func TestFmt(t *testing.T) {
	ugly := "stage \"command\" \"x\" {\nrun=[\"echo\",\"hi\"]\n    gpus   =  0\n}\n"
	pretty := "stage \"command\" \"x\" {\n  run  = [\"echo\", \"hi\"]\n  gpus = 0\n}\n"
	root := cliWorkspace(t, map[string]string{
		"ugly.hcl":       ugly,
		"pretty.hcl":     pretty,
		"nested/sub.hcl": ugly,
		"notes.txt":      "run=1\n",
	})
	t.Chdir(root)

	r := runCLI(t, "fmt", "--check")
	assert.Equal(t, exitFailed, r.code)
	assert.Equal(t, "ugly.hcl\n", r.stdout, "lists only the files that need it (not nested without --recursive)")
	assert.Contains(t, r.stderr, "1 file(s) need formatting")
	b, _ := os.ReadFile("ugly.hcl")
	assert.Equal(t, ugly, string(b), "--check changes nothing")

	r = runCLI(t, "fmt", "-check", "--recursive")
	assert.Equal(t, exitFailed, r.code)
	assert.Equal(t, "nested/sub.hcl\nugly.hcl\n", r.stdout)
	// What formats them is the same command, --recursive included.
	assert.Contains(t, r.stderr, "2 file(s) need formatting (listed above): run the same command without --check to format them")

	// A file named twice, or named and found in its folder, counts once.
	r = runCLI(t, "fmt", "--check", "ugly.hcl", "./ugly.hcl", ".")
	assert.Equal(t, exitFailed, r.code)
	assert.Equal(t, "ugly.hcl\n", r.stdout)
	assert.Contains(t, r.stderr, "1 file(s) need formatting")

	r = runCLI(t, "fmt", "--check", "nope.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "nope.hcl does not exist: name .hcl files, or folders holding some")

	r = runCLI(t, "fmt")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "ugly.hcl\n", r.stdout, "lists the files it rewrote")
	b, _ = os.ReadFile("ugly.hcl")
	assert.Equal(t, pretty, string(b))
	b, _ = os.ReadFile("nested/sub.hcl")
	assert.Equal(t, ugly, string(b))

	r = runCLI(t, "fmt", "--check")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stdout)

	// A file given by name, through --chdir.
	t.Chdir(t.TempDir())
	r = runCLI(t, "--chdir", root, "fmt", "nested/sub.hcl")
	assert.Equal(t, exitOK, r.code, r.stderr)
	b, _ = os.ReadFile(filepath.Join(root, "nested/sub.hcl"))
	assert.Equal(t, pretty, string(b))

	// The partial temporary file an fmt killed while it rewrote a file
	// left beside it goes at the next fmt (not with --check); other files
	// stay.
	ugly2 := filepath.Join(root, "nested/.sub.hcl.tmp-89ab0123cdef4567")
	mine := filepath.Join(root, "nested/.sub.hcl.tmp-mine")
	for _, p := range []string{ugly2, mine} {
		require.NoError(t, os.WriteFile(p, []byte("stage \"comm"), 0o644))
	}
	r = runCLI(t, "--chdir", root, "fmt", "--check", "nested/sub.hcl")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.FileExists(t, ugly2, "--check changes nothing")
	r = runCLI(t, "--chdir", root, "fmt", "nested/sub.hcl")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stdout+r.stderr)
	assert.NoFileExists(t, ugly2)
	assert.FileExists(t, mine)

	// A file that does not parse is bad input, and is left alone.
	broken := "stage \"command\" \"x\" {\n  run = [\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "broken.hcl"), []byte(broken), 0o644))
	r = runCLI(t, "--chdir", root, "fmt", "broken.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "broken.hcl")
	b, _ = os.ReadFile(filepath.Join(root, "broken.hcl"))
	assert.Equal(t, broken, string(b))

	// In a folder, a file that does not parse is named and left alone,
	// and every other file is formatted all the same: "a.hcl" before it
	// and "c.hcl" after it. A file's mode is kept, and a link stays a
	// link to its rewritten target.
	dir := filepath.Join(root, "many")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.hcl"), []byte(ugly), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.hcl"), []byte(broken), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "target.hcl"), []byte(ugly), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(root, "target.hcl"), filepath.Join(dir, "c.hcl")))
	r = runCLI(t, "--chdir", root, "fmt", "--check", "many")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stdout, "many/a.hcl\n")
	assert.Contains(t, r.stdout, "many/c.hcl\n")
	r = runCLI(t, "--chdir", root, "fmt", "many")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "b.hcl cannot be parsed")
	for _, f := range []string{"many/a.hcl", "target.hcl"} {
		b, _ = os.ReadFile(filepath.Join(root, f))
		assert.Equal(t, pretty, string(b), f)
	}
	fi, err := os.Stat(filepath.Join(dir, "a.hcl"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	fi, err = os.Lstat(filepath.Join(dir, "c.hcl"))
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "c.hcl is still a link")
	b, _ = os.ReadFile(filepath.Join(dir, "b.hcl"))
	assert.Equal(t, broken, string(b))
}

func TestVersion(t *testing.T) {
	r := runCLI(t, "version")
	assert.Equal(t, exitOK, r.code)
	assert.Equal(t, fmt.Sprintf("cairn %s (node key envelope %s, cache format %d)\n", version, plan.EnvelopeVersion, store.Format), r.stdout)
	want := r.stdout
	r = runCLI(t, "--version")
	assert.Equal(t, exitOK, r.code)
	assert.Equal(t, want, r.stdout, "--version prints what version does")
	r = runCLI(t, "version", "extra")
	assert.Equal(t, exitBadInput, r.code)
}

func TestTerraformAliases(t *testing.T) {
	assert.Equal(t,
		[]string{"plan", "--var", "a=1", "--var-file=x.tfvars", "--out", "p", "-x", "--", "-var"},
		terraformAliases([]string{"plan", "-var", "a=1", "-var-file=x.tfvars", "-out", "p", "-x", "--", "-var"}))
}

// cairn fmt rewrites a file by renaming a new one over it, which the
// file's own permissions do not guard: a read-only file is refused (exit
// 1), named with its mode, and left as it was, while the others are
// formatted.
func TestFmtLeavesReadOnlyFiles(t *testing.T) {
	ugly := "stage \"command\" \"x\" {\nrun=[\"echo\",\"hi\"]\n}\n"
	root := cliWorkspace(t, map[string]string{"ro.hcl": ugly, "rw.hcl": ugly})
	require.NoError(t, os.Chmod(filepath.Join(root, "ro.hcl"), 0o444))
	r := runCLI(t, "--chdir", root, "fmt")
	assert.Equal(t, exitFailed, r.code, r.stderr)
	assert.Contains(t, r.stderr, "cannot rewrite "+filepath.Join(root, "ro.hcl")+": it is read-only (mode 0444")
	assert.NotContains(t, r.stderr, ".tmp")
	assert.Equal(t, filepath.Join(root, "rw.hcl")+"\n", r.stdout, "lists only the file it rewrote")
	b, _ := os.ReadFile(filepath.Join(root, "ro.hcl"))
	assert.Equal(t, ugly, string(b), "the read-only file is left as it was")
	b, _ = os.ReadFile(filepath.Join(root, "rw.hcl"))
	assert.NotEqual(t, ugly, string(b), "the other file is formatted")
	fi, err := os.Stat(filepath.Join(root, "ro.hcl"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o444), fi.Mode().Perm())
}

// A flag's bad value is answered with the flag, the value and what it
// takes, not with Go's parser ("strconv.ParseInt", "time: unknown unit").
func TestFlagValueErrorsSayWhatIsTaken(t *testing.T) {
	cliWorkspace(t, nil)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"apply", "--parallelism", "abc"}, `--parallelism "abc" is not a whole number: write it like 4`},
		{[]string{"aggregate", "x", "--bootstrap", "abc"}, `--bootstrap "abc" is not a whole number`},
		{[]string{"import", "lm-eval", "x", "--seed", "abc"}, `--seed "abc" is not a whole number`},
		{[]string{"gc", "--older-than", "1d"}, `--older-than "1d" is not a duration: write it like 90s, 60m or 720h (units ms, s, m, h; a day is 24h)`},
		{[]string{"gc", "--older-than", "5"}, `--older-than "5" is not a duration`},
		{[]string{"apply", "--wait-gpus", "soon"}, `--wait-gpus "soon" is not a duration`},
		{[]string{"apply", "--json=maybe"}, `--json "maybe" is not true or false`},
		{[]string{"apply", "--parallelism", "99999999999999999999"}, `--parallelism "99999999999999999999" is too large: write a number like 4`},
		{[]string{"plan", "--target", ""}, `--target "" is empty: an address looks like stage.NAME or stage.NAME["KEY"]`},
		{[]string{"apply", "--replace", " "}, `--replace " " is empty`},
	} {
		r := runCLI(t, c.args...)
		assert.Equal(t, exitBadInput, r.code, "%v", c.args)
		assert.Contains(t, r.stderr, c.says, "%v", c.args)
		assert.NotContains(t, r.stderr, "strconv", "%v", c.args)
		assert.NotContains(t, r.stderr, "time:", "%v", c.args)
		assert.Contains(t, r.stderr, "--help' for usage", "%v", c.args)
	}
}

// Smaller wordings: each message says what the user did and where.
func TestMessagesSayWhatWasGiven(t *testing.T) {
	vars := "variable \"n\" {\n  type    = number\n  default = 1\n}\nvariable \"m\" {\n  type    = map(number)\n  default = {}\n}\nstage \"command\" \"a\" {\n  run = [\"echo\", \"${var.n}\"]\n}\nstage \"command\" \"bad\" {\n  run = [\"false\"]\n}\n"
	root := cliWorkspace(t, map[string]string{
		"multi/a.hcl": "pipeline \"a\" {}\nstage \"command\" \"a\" {\n  run = [\"true\"]\n}\n",
		"multi/b.hcl": "pipeline \"b\" {}\nstage \"command\" \"b\" {\n  run = [\"true\"]\n}\n",
		"p.hcl":       vars,
		"bad.tfvars":  "n = = 3\n",
		"bad.json":    `{"n": "x"`,
		"g.plan":      `{"format": 2}`,
	})
	t.Chdir(root)
	// Diagnostics are wrapped to the terminal's width: read them as one line.
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	// graph on a folder of pipelines does not tell the user to run plan.
	r := runCLI(t, "graph", "multi")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, flat(r.stderr), "Name the file of the pipeline you mean, such as multi/a.hcl")
	assert.NotContains(t, r.stderr, "cairn plan")

	// Errors in a variable file are in the variable file, not in the
	// pipeline; a JSON syntax error is one error.
	for _, c := range []struct{ file, says string }{
		{"bad.tfvars", "Expected the start of an expression"},
		{"missing.tfvars", "Cannot read variable file"},
		{"bad.json", "Unclosed object"},
	} {
		r = runCLI(t, "--chdir", root, "plan", "p.hcl", "--var-file", c.file)
		assert.Equal(t, exitBadInput, r.code, c.file)
		assert.Contains(t, r.stderr, c.says, c.file)
		assert.Contains(t, r.stderr, "Error: 1 error(s) in the variable values from "+filepath.Join(root, c.file)+"; nothing was run", c.file)
		assert.NotContains(t, r.stderr, "in the pipeline", c.file)
		assert.NotContains(t, r.stderr, "Root value must be object", c.file)
	}

	// A --var that does not parse is placed by its column, not as a file.
	r = runCLI(t, "--chdir", root, "plan", "p.hcl", "--var", "m=[1,2")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, flat(r.stderr), `unterminated tuple constructor expression at column 1 of "[1,2"`)
	assert.NotContains(t, r.stderr, "--var m:1")

	// A JSON file that is not a plan is said to be that, not parsed as
	// a pipeline.
	r = runCLI(t, "--chdir", root, "apply", "g.plan")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "g.plan holds JSON but is not a cairn plan file")
	assert.NotContains(t, r.stderr, "Argument or block definition required")

	// A well-formed address of a node that only failed points at the runs.
	r = runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitFailed, r.code)
	r = runCLI(t, "--chdir", root, "show", "stage.bad")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "nothing is known of stage.bad: no cached result")
	assert.Contains(t, r.stderr, "'cairn status' lists the runs")
	assert.NotContains(t, r.stderr, "addresses look like")
}

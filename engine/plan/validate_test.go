package plan_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/stages"
)

const waitingPipeline = `variable "names" {
  type = list(string)
}

variable "tag" {
  type = string
}

locals {
  paths = { for n in var.names : n => "out/${var.tag}/${n}.txt" }
}

stage "command" "gen" {
  for_each = toset(var.names)
  run      = ["sh", "-c", "echo ${each.key} > ${local.paths[each.key]}"]
  outputs  = [local.paths[each.key]]
  GPUS
}

stage "command" "use" {
  for_each = stage.gen
  run      = ["cat", each.value.key]
}

stage "command" "one" {
  run = ["echo", stage.gen["a"].result, var.tag]
}

stage "command" "fixed" {
  for_each = toset(["x", "y"])
  after    = [stage.use]
  run      = ["echo", each.key]
}
`

func loadWaiting(t *testing.T, gpus string, validate bool) (*plan.Loaded, hcl.Diagnostics) {
	t.Helper()
	root := t.TempDir()
	src := []byte(replaceOnce(waitingPipeline, "GPUS", gpus))
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), src, 0o644))
	if validate {
		return validateLike(plan.LoadOptions{Path: "p.hcl", Root: root})
	}
	return planLike(plan.LoadOptions{Path: "p.hcl", Root: root})
}

// Validate checks a pipeline without values for its required variables,
// as terraform validate does: a for_each over them waits for values, and
// every other check still runs, inside the waiting stages too.
func TestValidateWithoutValues(t *testing.T) {
	l, diags := loadWaiting(t, "gpus = 1", true)
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.Equal(t, map[string]string{"gen": "var.names", "use": "stage.gen"}, l.Graph.Waiting)
	assert.Equal(t, []string{"var.names", "var.tag"}, l.Graph.Unset())
	assert.Contains(t, l.Graph.Summary(), "2 stages wait for values")
	ws := l.Graph.WaitingStages()
	require.Len(t, ws, 2)
	assert.Equal(t, "stage.gen", ws[0].Stage)
	assert.Equal(t, 14, ws[0].Range.Start.Line, "the for_each's position")
	// stage.fixed expands as usual.
	assert.NotNil(t, l.Graph.ByAddr[`stage.fixed["x"]`])

	// A mistake inside a waiting stage is still found.
	_, diags = loadWaiting(t, `gpus = "two"`, true)
	require.True(t, diags.HasErrors())
	assert.Equal(t, "Invalid gpus", diags[0].Summary)
	assert.Equal(t, 17, diags[0].Subject.Start.Line)

	// plan and apply still require the values.
	_, diags = loadWaiting(t, "gpus = 1", false)
	require.True(t, diags.HasErrors())
	var summaries []string
	for _, d := range diags {
		summaries = append(summaries, d.Summary)
	}
	assert.Contains(t, summaries, `No value for required variable "names"`)
	assert.Contains(t, summaries, `No value for required variable "tag"`)
}

// A for_each that is unknown for another reason than a missing value is
// still refused at validate.
func TestValidateWithoutValuesStillRefusesResultsInForEach(t *testing.T) {
	root := t.TempDir()
	src := "variable \"n\" {\n  type = string\n}\n\nstage \"command\" \"a\" {\n  run    = [\"echo\", var.n]\n  result = \"a.json\"\n}\n\nstage \"command\" \"b\" {\n  for_each = toset(stage.a.result.keys)\n  run      = [\"echo\", each.key]\n}\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	_, diags := validateLike(plan.LoadOptions{Path: "p.hcl", Root: root})
	require.True(t, diags.HasErrors())
	assert.Equal(t, "Invalid for_each", diags[0].Summary)
}

// env names written in the file are checked while its values wait for
// variables, in a plain stage and in one whose for_each waits.
func TestValidateWithoutValuesChecksEnvNames(t *testing.T) {
	root := t.TempDir()
	src := `variable "n" {
  type = string
}
variable "names" {
  type = list(string)
}
stage "command" "t" {
  run = ["true"]
  env = { CAIRN_X = var.n, "bad name" = "x" }
}
stage "command" "s" {
  for_each = toset(var.names)
  run      = ["echo", each.key]
  env      = { CUDA_VISIBLE_DEVICES = each.value }
}
`
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	_, diags := validateLike(plan.LoadOptions{Path: "p.hcl", Root: root})
	var got []string
	for _, d := range diags {
		got = append(got, fmt.Sprintf("%d:%d %s", d.Subject.Start.Line, d.Subject.Start.Column, d.Detail))
	}
	assert.Len(t, got, 3, "%q", got)
	assert.Contains(t, strings.Join(got, "\n"), "9:28 \"bad name\" is not a valid environment variable name.")
	// Each says what to do about its own name: GPUs are asked for with
	// gpus; a CAIRN_ name is another name's to take.
	assert.Contains(t, got, "9:11 CAIRN_X is set by cairn itself (names starting with CAIRN_ carry the node's context); a stage cannot set it. Give the variable another name.")
	assert.Contains(t, got, "14:16 CUDA_VISIBLE_DEVICES is set by cairn itself (GPU pinning); a stage cannot set it. Ask for GPUs with gpus = N.")
}

// plan refuses a pipeline with every error validate gives: a stage's
// own check (a waves batch's size) as well as an attribute's, though the
// attribute's error leaves the stage's nodes without a spec.
func TestPlanGivesEveryErrorValidateGives(t *testing.T) {
	root := t.TempDir()
	src := `stage "waves" "w" {
  for_each = ["a", "b", "c"]
  run      = ["true"]
  mode     = "wave"
}
`
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	summaries := func(diags hcl.Diagnostics) []string {
		var out []string
		for _, d := range diags {
			out = append(out, d.Summary)
		}
		return out
	}
	_, vd := validateLike(plan.LoadOptions{Path: "p.hcl", Root: root})
	l, diags := plan.Load(plan.LoadOptions{Path: "p.hcl", Root: root})
	require.False(t, diags.HasErrors(), diags.Error())
	c, err := store.Open(filepath.Join(t.TempDir(), "cache"), store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	_, pd := plan.Make(l.Graph, c, plan.Options{})
	assert.ElementsMatch(t, summaries(vd), summaries(pd))
	assert.Contains(t, summaries(pd), "Wrong batch size")
}

func replaceOnce(s, old, new string) string { return strings.Replace(s, old, new, 1) }

// A stage without an attribute its kind requires is reported once, by
// the decoding; its kind's checks, which would trip over the missing
// attribute, are not run on it. A stage that has them is checked.
func TestMissingRequiredAttributeSkipsKindCheck(t *testing.T) {
	root := t.TempDir()
	src := `stage "command" "norun" {
  outputs = ["out/a"]
}

stage "command" "badrun" {
  run = []
}
`
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	_, diags := plan.Load(plan.LoadOptions{Path: "p.hcl", Root: root})
	var got []string
	for _, d := range diags {
		got = append(got, d.Summary+" @ "+filepath.Base(d.Subject.String()))
	}
	assert.ElementsMatch(t, []string{
		`Missing required argument @ p.hcl:1,25-25`,
		`Invalid run @ p.hcl:6,9-11`,
	}, got)
}

// A node whose attributes are all constant evaluates without a context:
// the same values, ranges and decoded attributes as evaluated in one, and
// the same diagnostics, which carry the context as they did.
func TestConstantAttributesEvaluateAlone(t *testing.T) {
	root := t.TempDir()
	src := `variable "tag" {
  default = "t"
}

stage "command" "plain" {
  run     = ["sh", "-c", "echo a > out/a"]
  outputs = ["out/a"]
  gpus    = 0
}

stage "command" "object" {
  run = ["echo", "b"]
  env = { A = "1" }
}

stage "command" "null_part" {
  run = ["echo", "a${null}"]
}

stage "command" "refs" {
  run   = ["echo", var.tag]
  after = [stage.plain]
}

stage "command" "bad_kind" {
  run   = ["echo", "x"]
  shell = "yes"
}
`
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	l, _ := plan.Load(plan.LoadOptions{Path: "p.hcl", Root: root})
	require.NotNil(t, l.Graph)
	type eval struct {
		spec  *stages.Node
		diags []string
		ctx   bool
	}
	evalAll := func(alone bool) map[string]eval {
		was := plan.SetConstantsAlone(alone)
		defer plan.SetConstantsAlone(was)
		out := map[string]eval{}
		for _, n := range l.Graph.Nodes {
			sn, diags := l.Graph.EvalNode(n, plan.UnknownInstance)
			e := eval{spec: sn}
			for _, d := range diags {
				e.diags = append(e.diags, fmt.Sprintf("%s: %s @ %s (context %t)", d.Summary, d.Detail, d.Subject, d.EvalContext != nil))
			}
			if sn != nil {
				e.ctx = sn.EvalContext != nil
				sn.EvalContext = nil
			}
			out[n.Addr] = e
		}
		return out
	}
	alone, inContext := evalAll(true), evalAll(false)
	for addr, e := range inContext {
		assert.True(t, e.ctx || e.spec == nil, addr)
		a := alone[addr]
		assert.Equal(t, e.spec, a.spec, addr)
		assert.Equal(t, e.diags, a.diags, addr)
	}
	assert.False(t, alone["stage.plain"].ctx, "a constant node made a context")
	assert.False(t, alone["stage.bad_kind"].ctx, "a constant node made a context")
	assert.True(t, alone["stage.refs"].ctx)
	assert.True(t, alone["stage.object"].ctx)
	assert.Contains(t, strings.Join(alone["stage.null_part"].diags, "\n"), "(context true)")
	assert.NotEmpty(t, alone["stage.bad_kind"].diags)
}

// The summary's verb agrees with the count of waiting stages.
func TestValidateSummaryOneStageWaits(t *testing.T) {
	root := t.TempDir()
	src := "variable \"names\" {\n  type = set(string)\n}\n\nstage \"command\" \"gen\" {\n  for_each = var.names\n  run      = [\"echo\", each.key]\n}\n\nstage \"command\" \"fixed\" {\n  run = [\"true\"]\n}\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	l, diags := validateLike(plan.LoadOptions{Path: "p.hcl", Root: root})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.Contains(t, l.Graph.Summary(), "2 stages, 1 node known (1 stage waits for values)")
}

// Errors point at the mistake: an unknown class at its element of
// retry.on, not at the list; a waves batch of the wrong size at its
// for_each, not at the block.
func TestErrorsPointAtTheMistake(t *testing.T) {
	root := t.TempDir()
	src := `stage "waves" "w" {
  for_each = ["a", "b", "c"]
  run      = ["true"]
}
stage "command" "r" {
  run = ["false"]
  retry {
    max = 1
    on  = ["exit", "exitt"]
  }
}
`
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	_, diags := validateLike(plan.LoadOptions{Path: "p.hcl", Root: root})
	at := map[string]string{}
	for _, d := range diags {
		at[d.Summary] = fmt.Sprintf("%d:%d", d.Subject.Start.Line, d.Subject.Start.Column)
	}
	assert.Equal(t, "2:14", at["Wrong batch size"], "%v", at)
	assert.Equal(t, "9:20", at["Unknown failure class"], "%v", at)
}

// An instance's error shows the values its attribute was evaluated with:
// the instances of a stage share the attribute's position, and would
// otherwise read alike.
func TestInstanceErrorsShowTheirValues(t *testing.T) {
	root := t.TempDir()
	src := `stage "command" "a" {
  for_each = { a = "90s", b = "abc" }
  run      = ["true"]
  timeout  = each.value
}
`
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	_, diags := validateLike(plan.LoadOptions{Path: "p.hcl", Root: root})
	require.Len(t, diags, 1, diags.Error())
	var buf strings.Builder
	w := hcl.NewDiagnosticTextWriter(&buf, map[string]*hcl.File{}, 100, false)
	require.NoError(t, w.WriteDiagnostic(diags[0]))
	assert.Contains(t, buf.String(), `with each.value as "abc"`)
}

// A duration too long for cairn to hold says so, and the longest
// allowed, not that it is negative (a number of seconds that wrapped) or
// not a duration (Go's words for one too long); one too far below 0 is
// negative.
func TestDurationsTooLarge(t *testing.T) {
	const most = "is too large: a duration is at most 2562047h47m16s (about 292 years)."
	cases := []struct{ attr, value, want string }{
		{"timeout", "1e30", "timeout = 1e+30 (seconds) " + most},
		{"timeout", "9.3e9", "timeout = 9.3e+09 (seconds) " + most},
		{"timeout", `"9300000000"`, `"9300000000" (seconds) ` + most},
		{"kill_grace", `"99999999999h"`, `"99999999999h" ` + most},
		{"kill_grace", `"-99999999999h"`, "kill_grace must not be negative."},
		{"timeout", "-1e30", "timeout must not be negative."},
		{"timeout", `"2562047h47m16s"`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.attr+"="+tc.value, func(t *testing.T) {
			root := t.TempDir()
			src := fmt.Sprintf("stage \"command\" \"a\" {\n  run = [\"true\"]\n  %s = %s\n}\n", tc.attr, tc.value)
			require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
			_, diags := validateLike(plan.LoadOptions{Path: "p.hcl", Root: root})
			if tc.want == "" {
				assert.False(t, diags.HasErrors(), "%s", diags.Error())
				return
			}
			require.Len(t, diags, 1, "%s", diags.Error())
			assert.Equal(t, "Invalid "+tc.attr, diags[0].Summary)
			assert.Equal(t, tc.want, diags[0].Detail)
			assert.Equal(t, 3, diags[0].Subject.Start.Line)
		})
	}
}

// A retry block's max or on of the wrong kind says what to write, not
// the decoder's words (a range of int64s, "list of string required").
func TestRetryErrorsSayWhatToWrite(t *testing.T) {
	cases := []struct{ body, summary, want string }{
		{"max = 1.5", "Invalid retry max", "max must be a whole number, 0 or more (the extra attempts after the first), not 1.5."},
		{"max = -1", "Invalid retry max", "max must be a whole number, 0 or more (the extra attempts after the first), not -1."},
		{`max = "two"`, "Invalid retry max", `max must be a whole number, 0 or more (the extra attempts after the first), not "two".`},
		{"max = 1\n    on = \"exit\"", "Invalid retry on", `on must be a list of failure classes, like ["exit"] or ["timeout", "infrastructure"] (the classes are: exit, timeout,`},
		{"max = var.n", "Variables not allowed", "Variables may not be used here."},
	}
	for _, tc := range cases {
		t.Run(tc.body, func(t *testing.T) {
			root := t.TempDir()
			src := "stage \"command\" \"a\" {\n  run = [\"true\"]\n  retry {\n    " + tc.body + "\n  }\n}\n"
			require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
			_, diags := validateLike(plan.LoadOptions{Path: "p.hcl", Root: root})
			require.Len(t, diags, 1, "%s", diags.Error())
			assert.Equal(t, tc.summary, diags[0].Summary)
			assert.Contains(t, diags[0].Detail, tc.want)
		})
	}
}

// An attribute the docs give as a literal takes the value as written, of
// its own type: a value HCL would convert (description = 5, max = "2") or
// an expression of literals (a template with ${...}, arithmetic) is
// refused at the value, saying what the attribute takes.
func TestLiteralAttributesTakeLiteralsOnly(t *testing.T) {
	cases := []struct{ src, summary, want string }{
		{"pipeline \"p\" {\n  description = 5\n}\n", "Invalid description", `description must be a quoted string ("..."), not 5.`},
		{"variable \"v\" {\n  description = true\n}\n", "Invalid description", `description must be a quoted string ("..."), not true.`},
		{"variable \"v\" {\n  sensitive = \"true\"\n}\n", "Invalid sensitive", `sensitive must be true or false, not "true".`},
		{"seal \"s\" {\n  sha256 = {}\n  description = 5\n}\n", "Invalid description", `description must be a quoted string ("..."), not 5.`},
		{"stage \"command\" \"a\" {\n  description = 5\n  run = [\"true\"]\n}\n", "Invalid description", `description must be a quoted string ("..."), not 5.`},
		{"stage \"command\" \"a\" {\n  on_interrupt = \"re${\"run\"}\"\n  run = [\"true\"]\n}\n", "Invalid on_interrupt", `on_interrupt must be one of "rerun", "fail", written as it is: a literal, not computed (no ${...}, operators or conditionals).`},
		{"stage \"command\" \"a\" {\n  on_upstream_failure = true ? \"run\" : \"skip\"\n  run = [\"true\"]\n}\n", "Invalid on_upstream_failure", `on_upstream_failure must be one of "skip", "run", written as it is: a literal,`},
		{"stage \"command\" \"a\" {\n  run = [\"true\"]\n  retry {\n    max = \"2\"\n  }\n}\n", "Invalid retry max", `max must be a whole number, 0 or more (the extra attempts after the first), not "2".`},
		{"stage \"command\" \"a\" {\n  run = [\"true\"]\n  retry {\n    max = 1 + 1\n  }\n}\n", "Invalid retry max", `max must be a whole number, 0 or more (the extra attempts after the first), written as it is: a literal,`},
		{"stage \"command\" \"a\" {\n  run = [\"true\"]\n  retry {\n    max = 1\n    on = [\"ex${\"it\"}\"]\n  }\n}\n", "Invalid retry on", `on must be a list of failure classes, like ["exit"]`},
		{"pipeline \"p\" {\n  executor \"slurm\" {\n    partition = 5\n  }\n}\n", "Invalid partition", `partition must be a quoted string ("..."), not 5.`},
	}
	for _, tc := range cases {
		t.Run(tc.src, func(t *testing.T) {
			root := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(tc.src), 0o644))
			_, diags := validateLike(plan.LoadOptions{Path: "p.hcl", Root: root})
			require.Len(t, diags, 1, "%s", diags.Error())
			assert.Equal(t, tc.summary, diags[0].Summary)
			assert.Contains(t, diags[0].Detail, tc.want)
			// At the value: the line of the attribute, after its " = ".
			line := strings.Split(tc.src, "\n")[diags[0].Subject.Start.Line-1]
			assert.Equal(t, strings.Index(line, "= ")+3, diags[0].Subject.Start.Column, "%s", line)
		})
	}
}

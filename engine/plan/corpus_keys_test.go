package plan_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/plan/plantest"
	"github.com/cairn-run/cairn/engine/store"
)

// keyWorkspace is a workspace with several pipeline files and a shared
// cache, for comparing node keys across pipelines and edits.
type keyWorkspace struct{ *plantest.Workspace }

func newKeyWorkspace(t *testing.T, files map[string]string) *keyWorkspace {
	t.Helper()
	w := &keyWorkspace{&plantest.Workspace{T: t, Root: t.TempDir()}}
	for name, content := range files {
		w.Write(name, content)
	}
	return w
}

// plan plans pipeline file with a fresh cache and returns the plan.
func (w *keyWorkspace) plan(file string, vars ...dsl.VarArg) *plan.Plan {
	w.T.Helper()
	l, diags := plan.Load(plan.LoadOptions{Path: file, Root: w.Root, Vars: dsl.VarInputs{Args: vars}})
	require.False(w.T, diags.HasErrors(), "%s", diags.Error())
	c, err := store.Open(filepath.Join(w.T.TempDir(), "cache"), store.Options{NoSync: true})
	require.NoError(w.T, err)
	w.T.Cleanup(func() { c.Close() })
	p, diags := plan.Make(l.Graph, c, plan.Options{})
	require.False(w.T, diags.HasErrors(), "%s", diags.Error())
	return p
}

func (w *keyWorkspace) key(file, addr string, vars ...dsl.VarArg) string {
	w.T.Helper()
	p := w.plan(file, vars...)
	for _, pn := range p.Nodes {
		if pn.Node.Addr == addr {
			require.NotEmpty(w.T, pn.Key, "%s has no key yet: %v", addr, pn.Reasons)
			return pn.Key
		}
	}
	w.T.Fatalf("%s: no node %s", file, addr)
	return ""
}

const trainAlpha = `
pipeline "alpha" {}

stage "command" "train" {
  run         = ["python", "train.py", "--lr", "0.1"]
  inputs      = ["train.py", "data/"]
  env         = { SEED = "1" }
  description = "alpha's training"
  timeout     = "1h"
}
`

// The same work, declared by another pipeline under another stage name,
// as one instance of a for_each, with other scheduling knobs.
const trainBeta = `
pipeline "beta" {}

variable "lr" {
  default = "0.1"
}

stage "command" "fit_model" {
  for_each    = { fast = var.lr }
  run         = ["python", "train.py", "--lr", each.value]
  inputs      = ["data/", "train.py"]
  env         = { SEED = "1" }
  timeout     = "5m"
  concurrency = 1
  retry {
    max = 3
  }
}
`

func TestCorpusKeySharedAcrossPipelines(t *testing.T) {
	w := newKeyWorkspace(t, map[string]string{
		"alpha.hcl":       trainAlpha,
		"beta.hcl":        trainBeta,
		"train.py":        "print('train')\n",
		"data/items.json": "[1, 2, 3]\n",
	})
	a := w.key("alpha.hcl", "stage.train")
	b := w.key("beta.hcl", `stage.fit_model["fast"]`)
	assert.Equal(t, a, b, "the same node in two pipelines must share its key")

	// The key is a function of the content, not of the moment: planning
	// again gives the same key.
	assert.Equal(t, a, w.key("alpha.hcl", "stage.train"))
}

func TestCorpusKeyChanges(t *testing.T) {
	w := newKeyWorkspace(t, map[string]string{
		"alpha.hcl":       trainAlpha,
		"beta.hcl":        trainBeta,
		"train.py":        "print('train')\n",
		"data/items.json": "[1, 2, 3]\n",
	})
	base := w.key("alpha.hcl", "stage.train")

	t.Run("input file", func(t *testing.T) {
		w.Write("train.py", "print('train v2')\n")
		assert.NotEqual(t, base, w.key("alpha.hcl", "stage.train"))
		w.Write("train.py", "print('train')\n")
		assert.Equal(t, base, w.key("alpha.hcl", "stage.train"), "restoring the file restores the key")
	})
	t.Run("file inside an input directory", func(t *testing.T) {
		w.Write("data/items.json", "[1, 2, 3, 4]\n")
		assert.NotEqual(t, base, w.key("alpha.hcl", "stage.train"))
		w.Write("data/items.json", "[1, 2, 3]\n")
		assert.Equal(t, base, w.key("alpha.hcl", "stage.train"))
	})
	t.Run("new file in an input directory", func(t *testing.T) {
		w.Write("data/extra.json", "{}\n")
		assert.NotEqual(t, base, w.key("alpha.hcl", "stage.train"))
		require.NoError(t, os.Remove(filepath.Join(w.Root, "data/extra.json")))
		assert.Equal(t, base, w.key("alpha.hcl", "stage.train"))
	})
	t.Run("argument", func(t *testing.T) {
		b := w.key("beta.hcl", `stage.fit_model["fast"]`)
		require.Equal(t, base, b)
		changed := w.key("beta.hcl", `stage.fit_model["fast"]`, dsl.VarArg{Value: "lr=0.2"})
		assert.NotEqual(t, base, changed)
	})
	t.Run("env value", func(t *testing.T) {
		w.Write("env.hcl", `
stage "command" "train" {
  run    = ["python", "train.py", "--lr", "0.1"]
  inputs = ["train.py", "data/"]
  env    = { SEED = "2" }
}
`)
		assert.NotEqual(t, base, w.key("env.hcl", "stage.train"))
	})
	t.Run("scheduling knobs do not", func(t *testing.T) {
		w.Write("knobs.hcl", `
stage "command" "train" {
  run                 = ["python", "train.py", "--lr", "0.1"]
  inputs              = ["data/", "train.py"]
  env                 = { SEED = "1" }
  timeout             = "10h"
  kill_grace          = "1m"
  cpus                = 8
  on_interrupt        = "fail"
  on_upstream_failure = "run"
  classify            = { setup = ["ImportError"] }
}
`)
		assert.Equal(t, base, w.key("knobs.hcl", "stage.train"))
	})
}

const secretPipeline = `
variable "token" {
  type      = string
  sensitive = true
}

variable "plain" {
  default = "visible-value"
}

locals {
  header = "Bearer ${var.token}"
}

stage "command" "call" {
  run = ["curl", "-H", local.header, "https://example.com/${var.plain}"]
  env = { TOKEN = var.token, PLAIN = var.plain }
}

stage "command" "after_call" {
  after = [stage.call]
  run   = ["echo", var.token]
}
`

func TestCorpusSensitiveNeverShown(t *testing.T) {
	const secret = "s3cr3t-t0ken-corpus"
	w := newKeyWorkspace(t, map[string]string{"secret.hcl": secretPipeline})
	vars := []dsl.VarArg{{Value: "token=" + secret}}
	p := w.plan("secret.hcl", vars...)

	var out bytes.Buffer
	require.NoError(t, p.Render(&out))
	js, err := json.Marshal(p.JSON())
	require.NoError(t, err)
	planFile := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, plan.Save(planFile, p, "secret.hcl", vars, ""))
	saved, err := os.ReadFile(planFile)
	require.NoError(t, err)

	for what, text := range map[string]string{"rendered plan": out.String(), "JSON plan": string(js), "saved plan": string(saved)} {
		assert.NotContains(t, text, secret, "%s shows the secret", what)
		assert.Contains(t, text, "stage.call", "%s lists the node", what)
	}
	for _, pn := range p.Nodes {
		if pn.Envelope == nil {
			continue
		}
		b, err := json.Marshal(pn.Envelope)
		require.NoError(t, err)
		assert.NotContains(t, string(b), secret, "the key NodeEnvelope of %s holds the secret", pn.Node.Addr)
		assert.Contains(t, string(b), "visible-value", "non-sensitive values stay in the envelope")
	}

	// The secret still shapes the key: another secret, another key.
	k1 := w.key("secret.hcl", "stage.call", vars...)
	k2 := w.key("secret.hcl", "stage.call", dsl.VarArg{Value: "token=another-secret"})
	assert.NotEqual(t, k1, k2)

	// A changed secret is explained without being shown.
	p2 := w.plan("secret.hcl", dsl.VarArg{Value: "token=another-secret"})
	reasons := plan.DiffEnvelopes(p.Nodes[0].Envelope, p2.Nodes[0].Envelope, nil, false)
	require.NotEmpty(t, reasons)
	for _, r := range reasons {
		assert.NotContains(t, r, secret)
		assert.NotContains(t, r, "another-secret")
		assert.Contains(t, r, "(sensitive)")
	}
}

// Paths are cleaned before they are keyed: "./a.txt", "a.txt//." and
// "a.txt" are one output, "./r.json" and "r.json" one result, so that a
// respelled path keeps the node's key (language.md, Paths).
func TestCorpusKeyCleansPaths(t *testing.T) {
	stage := func(outputs, result string) string {
		return `stage "command" "a" {
  run     = ["sh", "-c", "echo a > a.txt; echo '{}' > r.json"]
  outputs = ` + outputs + `
  result  = "` + result + `"
}
`
	}
	w := newKeyWorkspace(t, map[string]string{
		"clean.hcl":  stage(`["a.txt", "b"]`, "r.json"),
		"dot.hcl":    stage(`["./a.txt", "b/"]`, "./r.json"),
		"dots.hcl":   stage(`["a.txt//.", "./b"]`, "r.json"),
		"set.hcl":    stage(`toset(["./a.txt", "b"])`, "r.json"),
		"other.hcl":  stage(`["a2.txt", "b"]`, "r.json"),
		"result.hcl": stage(`["a.txt", "b"]`, "r2.json"),
	})
	base := w.key("clean.hcl", "stage.a")
	for _, f := range []string{"dot.hcl", "dots.hcl", "set.hcl"} {
		assert.Equal(t, base, w.key(f, "stage.a"), f)
	}
	assert.NotEqual(t, base, w.key("other.hcl", "stage.a"))
	assert.NotEqual(t, base, w.key("result.hcl", "stage.a"))
}

// A stage a postcondition reads orders the node (it waits for it, to
// judge) without keying it: postconditions are not part of the key, so a
// threshold another stage computes re-judges the same result.
func TestCorpusKeyHoldsNoPostconditionUpstream(t *testing.T) {
	w := newKeyWorkspace(t, map[string]string{"p.hcl": `variable "min" {
  default = 5
}
stage "command" "threshold" {
  run    = ["sh", "-c", "echo '{\"min\": ${var.min}}' > t.json"]
  result = "t.json"
}
stage "command" "train" {
  run    = ["sh", "-c", "echo '{\"v\": 3}' > a.json"]
  result = "a.json"
  postcondition {
    condition     = self.result.v >= stage.threshold.result.min
    error_message = "too low"
  }
}
`})
	k := w.key("p.hcl", "stage.train")
	assert.Equal(t, k, w.key("p.hcl", "stage.train", dsl.VarArg{Value: "min=1"}))
	p := w.plan("p.hcl")
	for _, pn := range p.Nodes {
		if pn.Node.Addr == "stage.train" {
			require.Len(t, pn.Node.Deps, 1)
			assert.Equal(t, pn.Node.Deps, pn.Node.OrderOnly, "the threshold orders the node only")
		}
	}
}

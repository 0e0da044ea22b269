package plan_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
)

// The pipeline-file corpus: testdata/invalid holds pipelines that must be
// refused, each expected diagnostic written as a comment on the line it
// must point at; testdata/valid holds pipelines that must load, with their
// plans in golden files.
//
// Regenerate the golden plans (after a deliberate change to plan output or
// node keys) with:
//
//	go test ./engine -run Corpus -update

var updateGolden = flag.Bool("update", false, "rewrite testdata/valid/*.plan.golden")

const (
	invalidDir = "../../testdata/invalid"
	validDir   = "../../testdata/valid"
)

// corpusCases lists the pipelines of a corpus folder: each .hcl file, and
// each sub-folder holding .hcl files (a directory pipeline).
func corpusCases(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			if strings.HasSuffix(e.Name(), ".hcl") {
				out = append(out, e.Name())
			}
			continue
		}
		hcls, _ := filepath.Glob(filepath.Join(dir, e.Name(), "*.hcl"))
		if len(hcls) > 0 {
			out = append(out, e.Name())
		}
	}
	return out
}

// caseFiles lists the .hcl files of a case, relative to the corpus folder.
func caseFiles(t *testing.T, dir, name string) []string {
	t.Helper()
	if strings.HasSuffix(name, ".hcl") {
		return []string{name}
	}
	hcls, err := filepath.Glob(filepath.Join(dir, name, "*.hcl"))
	require.NoError(t, err)
	var out []string
	for _, h := range hcls {
		rel, _ := filepath.Rel(dir, h)
		out = append(out, rel)
	}
	return out
}

// validateLike does what `cairn validate` does: load, then evaluate every node
// at plan level.
func validateLike(opts plan.LoadOptions) (*plan.Loaded, hcl.Diagnostics) {
	opts.Validate = true
	l, diags := plan.Load(opts)
	if l.Graph != nil && !diags.HasErrors() {
		diags = append(diags, l.Graph.CheckStages()...)
	}
	return l, diags
}

// planLike loads as plan and apply do: every required variable needs a
// value.
func planLike(opts plan.LoadOptions) (*plan.Loaded, hcl.Diagnostics) {
	l, diags := plan.Load(opts)
	if l.Graph != nil && !diags.HasErrors() {
		diags = append(diags, l.Graph.CheckStages()...)
	}
	return l, diags
}

// expectation is one "ERROR: text" comment.
type expectation struct {
	file string // base name
	line int
	text string
	hit  bool
}

func (e *expectation) String() string { return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.text) }

// parseExpectations reads the ERROR comments of a file. A line may carry
// several: `x = 1 # ERROR: first # ERROR: second`.
func parseExpectations(t *testing.T, path string) []*expectation {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []*expectation
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		i := strings.Index(text, "# ERROR:")
		if j := strings.Index(text, "// ERROR:"); j >= 0 && (i < 0 || j < i) {
			i = j + 1
		}
		if i < 0 {
			continue
		}
		for _, part := range strings.Split(text[i+len("# ERROR:"):], "# ERROR:") {
			part = strings.TrimSpace(part)
			require.NotEmpty(t, part, "%s:%d: empty ERROR comment", path, line)
			out = append(out, &expectation{file: filepath.Base(path), line: line, text: part})
		}
	}
	return out
}

func diagString(d *hcl.Diagnostic) string {
	pos := "(no position)"
	if d.Subject != nil {
		pos = fmt.Sprintf("%s:%d", filepath.Base(d.Subject.Filename), d.Subject.Start.Line)
	}
	return fmt.Sprintf("%s: %s; %s", pos, d.Summary, d.Detail)
}

// copyCase copies a corpus case into a fresh workspace root, next to a
// symlink "outside" that leads out of the workspace (for the path-escape
// cases).
func copyCase(t *testing.T, dir, name string) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range caseFiles(t, dir, name) {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		dst := filepath.Join(root, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		require.NoError(t, os.WriteFile(dst, b, 0o644))
	}
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(root, "outside")))
	return root
}

func TestCorpusInvalid(t *testing.T) {
	cases := corpusCases(t, invalidDir)
	require.GreaterOrEqual(t, len(cases), 45, "the invalid corpus shrank")
	for _, name := range cases {
		t.Run(strings.TrimSuffix(name, ".hcl"), func(t *testing.T) {
			var want []*expectation
			for _, f := range caseFiles(t, invalidDir, name) {
				want = append(want, parseExpectations(t, filepath.Join(invalidDir, f))...)
			}
			require.NotEmpty(t, want, "%s has no ERROR comment", name)

			root := copyCase(t, invalidDir, name)
			load := validateLike
			for _, e := range want {
				if strings.Contains(e.text, "No value for required variable") {
					// Only plan and apply require values; validate
					// checks without them.
					load = planLike
				}
			}
			_, diags := load(plan.LoadOptions{Path: name, Root: root})
			require.True(t, diags.HasErrors(), "%s loaded without errors", name)

			var unexpected []string
			seen := map[string]bool{}
			for _, d := range diags {
				if d.Severity != hcl.DiagError {
					continue
				}
				s := diagString(d)
				assert.False(t, seen[s], "reported twice: %s", s)
				seen[s] = true
				if d.Subject == nil {
					unexpected = append(unexpected, "no file:line: "+s)
					continue
				}
				matched := false
				for _, e := range want {
					if e.hit || e.line != d.Subject.Start.Line || e.file != filepath.Base(d.Subject.Filename) {
						continue
					}
					// Details name files by path; the expectations by base name.
					detail := strings.ReplaceAll(d.Detail, root+string(filepath.Separator), "")
					if strings.Contains(d.Summary, e.text) || strings.Contains(detail, e.text) {
						e.hit, matched = true, true
						break
					}
				}
				if !matched {
					unexpected = append(unexpected, s)
				}
			}
			for _, e := range want {
				assert.True(t, e.hit, "expected diagnostic not reported: %s", e)
			}
			assert.Empty(t, unexpected, "unexpected diagnostics")
			if t.Failed() {
				for _, d := range diags {
					t.Logf("got %s", diagString(d))
				}
			}
		})
	}
}

// TestCorpusInvalidAllAtOnce checks that the file made of many mistakes
// reports them in one pass, from every phase: decoding, variables,
// references, for_each and attribute values.
func TestCorpusInvalidAllAtOnce(t *testing.T) {
	root := copyCase(t, invalidDir, "many_errors.hcl")
	_, diags := planLike(plan.LoadOptions{Path: "many_errors.hcl", Root: root})
	summaries := map[string]bool{}
	for _, d := range diags {
		summaries[d.Summary] = true
	}
	for _, s := range []string{
		"Unsupported argument", "Unknown stage kind", `No value for required variable "model"`,
		"Reference to undeclared local value", "Invalid for_each", "Invalid gpus", "Invalid timeout",
		"Reference to undeclared stage instance",
	} {
		assert.True(t, summaries[s], "missing %q among %v", s, summaries)
	}
}

func TestCorpusValid(t *testing.T) {
	cases := corpusCases(t, validDir)
	require.GreaterOrEqual(t, len(cases), 12, "the valid corpus shrank")
	root, err := filepath.Abs(validDir)
	require.NoError(t, err)
	for _, name := range cases {
		t.Run(strings.TrimSuffix(name, ".hcl"), func(t *testing.T) {
			l, diags := planLike(plan.LoadOptions{Path: name, Root: root})
			require.False(t, diags.HasErrors(), "%s", diags.Error())
			require.Empty(t, diags, "warnings: %s", diags.Error())

			got := renderCorpusPlan(t, l, root)
			for _, v := range l.Config.Variables {
				if v.Sensitive && v.HasDefault && v.Default.Type() == cty.String {
					assert.NotContains(t, got, v.Default.AsString(), "the plan shows sensitive var.%s", v.Name)
				}
			}
			golden := filepath.Join(validDir, strings.TrimSuffix(name, ".hcl")+".plan.golden")
			if *updateGolden {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "no golden plan: run go test ./engine -run Corpus -update")
			assert.Equal(t, string(want), got, "plan of %s differs from %s", name, golden)
		})
	}
}

// renderCorpusPlan plans with an empty cache and renders the plan, then
// every node's key and dependencies.
func renderCorpusPlan(t *testing.T, l *plan.Loaded, root string) string {
	t.Helper()
	c, err := store.Open(t.TempDir(), store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	p, diags := plan.Make(l.Graph, c, plan.Options{})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", l.Graph.Summary())
	require.NoError(t, p.Render(&b))
	b.WriteString("\nKeys:\n")
	for _, pn := range p.Nodes {
		key := pn.Key
		if key == "" {
			key = "(known after apply)"
		}
		fmt.Fprintf(&b, "  %s %s\n", pn.Node.Addr, key)
		for _, d := range pn.Node.Deps {
			how := "after"
			if !pn.Node.KeyedDep(d) {
				how = "wait_for"
			}
			fmt.Fprintf(&b, "      %s %s\n", how, l.Graph.Nodes[d].Addr)
		}
	}
	out := b.String()
	assert.NotContains(t, out, root, "the plan names the workspace's absolute path")
	return out
}

// TestCorpusValidFormatted keeps the valid corpus in `cairn fmt` layout.
func TestCorpusValidFormatted(t *testing.T) {
	for _, name := range corpusCases(t, validDir) {
		for _, f := range caseFiles(t, validDir, name) {
			src, err := os.ReadFile(filepath.Join(validDir, f))
			require.NoError(t, err)
			assert.Equal(t, string(hclwrite.Format(src)), string(src), "%s is not in cairn fmt layout", f)
		}
	}
}

// TestCorpusValidJSON checks that the JSON plan of every valid pipeline
// parses and lists every node.
func TestCorpusValidJSON(t *testing.T) {
	root, err := filepath.Abs(validDir)
	require.NoError(t, err)
	for _, name := range corpusCases(t, validDir) {
		l, diags := planLike(plan.LoadOptions{Path: name, Root: root})
		require.False(t, diags.HasErrors(), "%s: %s", name, diags.Error())
		c, err := store.Open(t.TempDir(), store.Options{NoSync: true})
		require.NoError(t, err)
		p, diags := plan.Make(l.Graph, c, plan.Options{})
		require.False(t, diags.HasErrors(), "%s", diags.Error())
		b, err := json.Marshal(p.JSON())
		require.NoError(t, err)
		c.Close()
		var pj plan.JSON
		require.NoError(t, json.Unmarshal(b, &pj))
		var addrs []string
		for _, n := range pj.Nodes {
			addrs = append(addrs, n.Address)
		}
		var want []string
		for _, n := range l.Graph.Nodes {
			want = append(want, n.Addr)
		}
		sort.Strings(addrs)
		sort.Strings(want)
		assert.Equal(t, want, addrs, name)
		assert.Equal(t, len(want), pj.ToRun+pj.MayRun+pj.Cached+pj.Skipped, name)
	}
}

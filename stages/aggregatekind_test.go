package stages

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl/failclass"
)

// out_dir and roots that would put the report among what the node reads
// are refused, each saying what it is: the workspace root is not called
// an overlap.
func TestAggregateOutDirAmongItsRoots(t *testing.T) {
	cases := []struct {
		roots   []string
		outDir  string
		summary string
		want    string // "" for accepted
	}{
		{[]string{"runs"}, "", "", ""},
		{[]string{"runs"}, "reports/x", "", ""},
		{[]string{"runs"}, ".", "Invalid out_dir", `out_dir "." is the workspace root itself: the report would be written among the runs it reads; name a folder inside it, like "reports/summary".`},
		{[]string{"runs", "."}, "", "Invalid roots", `the root "." is the whole workspace, which holds out_dir "reports/summary": the node's files would be among its own inputs and change its key at every run; name the folders that hold the runs in roots.`},
		{[]string{"runs"}, "runs/report", "Invalid out_dir", `out_dir "runs/report" and the root "runs" overlap: the node's files would be among its own inputs and change its key at every run; put the report elsewhere.`},
	}
	for _, tc := range cases {
		args := map[string]cty.Value{"roots": strs(tc.roots...)}
		if tc.outDir != "" {
			args["out_dir"] = cty.StringVal(tc.outDir)
		}
		diags := Aggregate{}.Check(&Node{Address: "stage.summary", Stage: "summary", Args: args, Ranges: map[string]hcl.Range{}})
		if tc.want == "" {
			assert.False(t, diags.HasErrors(), "%v %q: %s", tc.roots, tc.outDir, diags.Error())
			continue
		}
		require.Len(t, diags, 1, "%v %q: %s", tc.roots, tc.outDir, diags.Error())
		assert.Equal(t, tc.summary, diags[0].Summary)
		assert.Equal(t, tc.want, diags[0].Detail)
	}
}

// The links below the roots that the aggregate follows key the node: a
// job folder linked into a root, and a result.json root's test.json and
// job.json. One the node's key does not hold when it runs (made since
// the plan), or one out of the workspace, fails it before anything is
// read.
func TestAggregateKeysWhatItReadsThroughLinks(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"exp/gepa/s0/result.json", "exp/gepa/s0/test.json", "one/result.json", "one/test.json"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, f), []byte("{}"), 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "runs"), 0o755))
	require.NoError(t, os.Symlink("../exp/gepa", filepath.Join(root, "runs", "gepa")))
	require.NoError(t, os.Symlink("../nowhere", filepath.Join(root, "runs", "dangling")))
	node := func(roots ...string) *Node {
		return &Node{Address: "stage.summary", Stage: "summary", Args: map[string]cty.Value{"roots": strs(roots...)}, Ranges: map[string]hcl.Range{}}
	}
	n := node("runs", "one/result.json")
	assert.Equal(t, []string{"runs", "one/result.json", "one/test.json", "runs/gepa"}, declaredPathsOf(Aggregate{}.DeclaredInputs(n, root)))
	assert.Empty(t, Aggregate{}.CheckWorkspace(n, root))
	a, diags := aggregateDecode(n)
	require.False(t, diags.HasErrors())
	n.Common.Inputs = []string{"runs", "one/result.json", "one/test.json"}
	assert.Equal(t, "stage.summary: the link runs/gepa below its roots was made after the node was planned, so the jobs it leads to are not in the node's key; apply again", unkeyedLinks(n, a, root))
	n.Common.Inputs = declaredPathsOf(Aggregate{}.DeclaredInputs(n, root))
	assert.Equal(t, "", unkeyedLinks(n, a, root))

	outside := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "runs", "far")))
	assert.Equal(t, []string{"runs", "one/result.json", "one/test.json", "runs/gepa"}, declaredPathsOf(Aggregate{}.DeclaredInputs(n, root)))
	diags = Aggregate{}.CheckWorkspace(n, root)
	require.Len(t, diags, 1)
	assert.Equal(t, "Invalid roots", diags[0].Summary)
	assert.Contains(t, diags[0].Detail, "stage.summary: the link runs/far below its roots leads to ")
	assert.Contains(t, unkeyedLinks(n, a, root), "stage.summary: the link runs/far below its roots leads to ")
}

// declaredPathsOf are the paths of ds, without their attributes.
func declaredPathsOf(ds []DeclaredPath) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Path
	}
	return out
}

// An aggregation refused for bad input writes nothing, and says that the
// tables an earlier one left in out_dir are not of these inputs: whoever
// reads reports/ after the failure is not left to take them as current.
func TestRefusedAggregationNamesTheEarlierTables(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "runs/m/s0/result.json"), `{"format": "cairn.job-result/1"}`)
	n := &Node{Address: "stage.summary", Stage: "summary", Args: map[string]cty.Value{
		"roots": strs("runs"), "out_dir": cty.StringVal("reports/summary")}, Ranges: map[string]hcl.Range{}}
	n.Common.Inputs = declaredPathsOf(Aggregate{}.DeclaredInputs(n, root))
	rt := &fakeRuntime{root: root}

	out, err := Aggregate{}.Run(context.Background(), n, rt)
	require.NoError(t, err)
	assert.Equal(t, failclass.Setup, out.Class)
	assert.NotContains(t, out.Message, "earlier aggregation", "no earlier tables")

	writeFile(t, filepath.Join(root, "reports/summary", AggregateTSV), "method\n")
	writeFile(t, filepath.Join(root, "reports/summary", AggregateJSON), "{}")
	out, err = Aggregate{}.Run(context.Background(), n, rt)
	require.NoError(t, err)
	assert.Equal(t, failclass.Setup, out.Class)
	assert.Contains(t, out.Message, "runs/m/s0/result.json")
	assert.True(t, strings.HasSuffix(out.Message, "; nothing was written: the aggregate.tsv and summary.json in reports/summary are an earlier aggregation's, not of these inputs"), out.Message)
	b, err := os.ReadFile(filepath.Join(root, "reports/summary", AggregateTSV))
	require.NoError(t, err)
	assert.Equal(t, "method\n", string(b), "left as it was")
}

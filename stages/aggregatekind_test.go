package stages

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
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

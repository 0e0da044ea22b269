package aggregate_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/stages/aggregate"
	"github.com/cairn-run/cairn/stages/aggregate/jobtest"
)

// Whether a non-conformant job's files hold together does not depend on
// --include-nonconformant: its result.json's own checks, and its
// job.json's, are made before it is skipped, and refuse it either way.
// Only its test.json is not read when it is skipped.
func TestANonconformantJobIsCheckedBeforeItIsSkipped(t *testing.T) {
	const dir = "gepa/hotpotqa_centralized_qwen/seed1"
	for _, c := range []struct {
		what string
		edit func(t *testing.T, dir string)
		msg  string
	}{
		{"valid_for_aggregation", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, "result.json"), func(s string) string {
				return strings.Replace(s, `"valid_for_aggregation": false`, `"valid_for_aggregation": true`, 1)
			})
		}, dir + "/result.json: says valid_for_aggregation = true, but it is true exactly when nonconformant is empty (here 1 reasons) and test_invalid_items is 0 (here 0): the file contradicts itself"},
		{"no test items", func(t *testing.T, dir string) {
			// With its means null, as a job of no valid item gives them.
			rewrite(t, filepath.Join(dir, "result.json"), func(s string) string {
				s = regexp.MustCompile(`"(baseline_mean|deployed_mean|delta_pp)": [^,]*,`).ReplaceAllString(s, `"$1": null,`)
				return strings.Replace(s, `"test_items": 5`, `"test_items": 0`, 1)
			})
		}, dir + "/result.json: says test_items = 0: a job is tested on one item at least, and its test.json lists them"},
		{"more invalid items than items", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, "result.json"), func(s string) string {
				return strings.Replace(s, `"test_invalid_items": 0`, `"test_invalid_items": 6`, 1)
			})
		}, dir + "/result.json: says test_invalid_items = 6, but the invalid items are among its 5 test items (0 to 5): the file contradicts itself"},
		{"fewer than no invalid items", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, "result.json"), func(s string) string {
				return strings.Replace(s, `"test_invalid_items": 0`, `"test_invalid_items": -1`, 1)
			})
		}, dir + "/result.json: says test_invalid_items = -1, but the invalid items are among its 5 test items (0 to 5): the file contradicts itself"},
		{"a job.json of another seed", func(t *testing.T, dir string) {
			writeJobFile(t, dir, func(doc map[string]any) { doc["seed"] = 2 })
		}, dir + "/job.json: seed 2 disagrees with " + dir + "/result.json's seed 1: a job's result.json reports the job its job.json seals, so these are not one job's files; restore the job's own files, or remove its folder"},
	} {
		root := t.TempDir()
		require.NoError(t, jobtest.Grid(root, 9, 5, map[string]float64{"gepa": 0}, []string{"hotpotqa/centralized/qwen"}))
		b := []float64{0, 1, 0, 1, 1}
		_, err := jobtest.Write(root, jobtest.Job{Method: "gepa", Seed: 1, Nonconformant: []string{"budget 56 is below the protocol's 600 rollouts"}, Baseline: b, Deployed: b})
		require.NoError(t, err)
		c.edit(t, filepath.Join(root, dir))
		for _, include := range []bool{false, true} {
			_, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{"."}, Replicates: 100, IncludeNonconformant: include})
			if assert.ErrorIs(t, err, aggregate.ErrBadInput, "%s, include %t", c.what, include) {
				assert.Equal(t, c.msg, err.Error(), fmt.Sprintf("%s, include %t", c.what, include))
			}
		}
	}
}

package aggregate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/stages/aggregate"
	"github.com/cairn-run/cairn/stages/aggregate/jobtest"
)

// jobIdentity is what a job.json of the default grid's gepa job of seed
// says the job is, as the job kind writes it: the start of a job.json
// object, ending in a comma.
func jobIdentity(seed int) string {
	return fmt.Sprintf(`{"format": "cairn.job/1", "method": "gepa", "cell_id": "hotpotqa/centralized/qwen", "dataset": "hotpotqa", "runtime": "centralized", "model": "qwen", "seed": %d, "budget": 600, "nonconformant": [],`, seed)
}

// writeJobFile writes the job.json of the job in dir: the identity its
// result.json reports and a setup, edited by edit.
func writeJobFile(t *testing.T, dir string, edit func(doc map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	require.NoError(t, err)
	var res map[string]any
	require.NoError(t, json.Unmarshal(b, &res))
	doc := map[string]any{"format": "cairn.job/1", "task_model": "Qwen/Qwen3.5-9B", "reflection_model": "R", "worker": []string{"w"},
		"digests": map[string]string{"method": "sha256:m", "data": "sha256:d", "worker": "sha256:w", "bundle": "sha256:b"}}
	for _, f := range []string{"method", "cell_id", "dataset", "runtime", "model", "seed", "budget", "nonconformant"} {
		doc[f] = res[f]
	}
	edit(doc)
	out, err := json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "job.json"), out, 0o644))
}

// A job.json seals the job: what it says the job is (its format, method,
// cell, dataset, runtime, model, seed, budget and non-conformance) is what
// its result.json reports. One that says otherwise, or lacks one of them,
// is refused, naming both files and the field: its setup would be
// compared as another job's.
func TestAJobFileOfAnotherJobIsRefused(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, jobtest.Grid(root, 9, 5, map[string]float64{"gepa": 0}, []string{"hotpotqa/centralized/qwen"}))
	for seed := range 3 {
		writeJobFile(t, filepath.Join(root, fmt.Sprintf("gepa/hotpotqa_centralized_qwen/seed%d", seed)), func(map[string]any) {})
	}
	_, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{"."}, Replicates: 100})
	require.NoError(t, err, "job.json files that agree with their results")

	const other = ": a job's result.json reports the job its job.json seals, so these are not one job's files; restore the job's own files, or remove its folder"
	for _, c := range []struct {
		field string
		value any
		msg   string
	}{
		{"method", "mipro", `method "mipro" disagrees with ` + seed1 + `/result.json's method "gepa"` + other},
		{"cell_id", "hotpotqa/centralized/llama", `cell_id "hotpotqa/centralized/llama" disagrees with ` + seed1 + `/result.json's cell_id "hotpotqa/centralized/qwen"` + other},
		{"dataset", "math", `dataset "math" disagrees with ` + seed1 + `/result.json's dataset "hotpotqa"` + other},
		{"runtime", "centralized+langgraph", `runtime "centralized+langgraph" disagrees with ` + seed1 + `/result.json's runtime "centralized"` + other},
		{"model", "llama", `model "llama" disagrees with ` + seed1 + `/result.json's model "qwen"` + other},
		{"seed", 2, `seed 2 disagrees with ` + seed1 + `/result.json's seed 1` + other},
		{"budget", 56, `budget 56 disagrees with ` + seed1 + `/result.json's budget 600` + other},
		{"nonconformant", []string{"budget 56 is below the protocol's 600 rollouts"}, `nonconformant ["budget 56 is below the protocol's 600 rollouts"] disagrees with ` + seed1 + `/result.json's nonconformant []` + other},
		{"format", "cairn.job/2", `has format "cairn.job/2"; cairn reads "cairn.job/1"`},
		{"seed", nil, `has no "seed": every job.json has it (docs/job-artifacts.md); was the file edited?`},
		{"method", nil, `has no "method": every job.json has it (docs/job-artifacts.md); was the file edited?`},
	} {
		msg := badInput(t, func(root string) {
			writeJobFile(t, filepath.Join(root, seed1), func(doc map[string]any) {
				if c.value == nil {
					delete(doc, c.field)
				} else {
					doc[c.field] = c.value
				}
			})
		})
		assert.Equal(t, seed1+"/job.json: "+c.msg, msg, "%s %v", c.field, c.value)
	}
}

// A job.json that is a link to nothing is refused as a result.json would
// be, not read as the missing job.json of an imported job, whose setup is
// compared with nothing; a test.json so, as the link it is, not as a
// missing file. When the root is the job's result.json, as when the walk
// meets them.
func TestAJobOrTestFileThatIsALinkToNothingIsRefused(t *testing.T) {
	for _, c := range []struct{ file, why string }{
		{"job.json", "the job would be read as one without a job.json (an imported job), and its setup compared with no other seed's"},
		{"test.json", "the job's paired test scores would look missing"},
	} {
		for _, r := range []string{seed1 + "/result.json", "."} {
			root := t.TempDir()
			require.NoError(t, jobtest.Grid(root, 9, 5, map[string]float64{"gepa": 0}, []string{"hotpotqa/centralized/qwen"}))
			path := filepath.Join(root, seed1, c.file)
			require.NoError(t, os.RemoveAll(path))
			require.NoError(t, os.Symlink("../moved/"+c.file, path))
			_, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{r}, Replicates: 100})
			require.ErrorIs(t, err, aggregate.ErrBadInput, r)
			assert.Equal(t, seed1+"/"+c.file+": is a link to ../moved/"+c.file+", which leads to nothing readable (no such file or directory): "+c.why+"; restore its target, or remove the link", err.Error(), r)
		}
	}
}

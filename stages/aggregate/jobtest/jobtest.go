// Package jobtest writes optimizer-job artifacts (result.json and
// test.json, docs/job-artifacts.md) for the tests of the aggregation, as a
// job would write them.
package jobtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Job describes one job's artifacts.
type Job struct {
	Method        string
	Dataset       string // default "hotpotqa"
	Runtime       string // default "centralized"
	Model         string // default "qwen"
	Seed          int
	Nonconformant []string
	// Baseline and Deployed are the per-item scores, ids q0000, q0001, ...;
	// an item whose Invalid entry is true is written invalid, with null
	// scores.
	Baseline, Deployed []float64
	Invalid            []bool
	// Imported writes the job as cairn import --job does: a source,
	// budget and charged_rollouts 0, no selection_sha256, and no job.json,
	// optimization.json or selection.json. Otherwise the job is one cairn
	// ran: its job.json, optimization.json and selection.json are written
	// too, and its result.json names the selection's digest.
	Imported bool
}

// CellID is the job's cell id.
func (j Job) CellID() string {
	return j.dataset() + "/" + j.runtime() + "/" + j.model()
}

func (j Job) dataset() string { return or(j.Dataset, "hotpotqa") }
func (j Job) runtime() string { return or(j.Runtime, "centralized") }
func (j Job) model() string   { return or(j.Model, "qwen") }

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Dir is the job's out folder under root: METHOD/CELL (slashes as
// underscores)/seedN.
func (j Job) Dir(root string) string {
	return filepath.Join(root, j.Method, strings.ReplaceAll(j.CellID(), "/", "_"), fmt.Sprintf("seed%d", j.Seed))
}

// Write writes the job's result.json and test.json into its Dir under
// root and returns that folder.
func Write(root string, j Job) (string, error) {
	dir := j.Dir(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	type item struct {
		ID       string   `json:"id"`
		Baseline *float64 `json:"baseline"`
		Deployed *float64 `json:"deployed"`
		Valid    bool     `json:"valid"`
	}
	items := make([]item, len(j.Baseline))
	var b, d float64
	valid, invalid := 0, 0
	var means [3]any // baseline_mean, deployed_mean, delta_pp: null without a valid item
	for i := range j.Baseline {
		it := item{ID: fmt.Sprintf("q%04d", i), Valid: true}
		if i < len(j.Invalid) && j.Invalid[i] {
			it.Valid = false
			invalid++
		} else {
			it.Baseline, it.Deployed = &j.Baseline[i], &j.Deployed[i]
			b += j.Baseline[i]
			d += j.Deployed[i]
			valid++
		}
		items[i] = it
	}
	if valid > 0 {
		// Rounded as a job writes them (stages.JobFiles).
		b, d = round6(b/float64(valid)), round6(d/float64(valid))
		means = [3]any{b, d, 100 * (d - b)}
	}
	nc := j.Nonconformant
	if nc == nil {
		nc = []string{}
	}
	result := map[string]any{
		"format": "cairn.job-result/1", "status": "ok",
		"method": j.Method, "cell_id": j.CellID(),
		"dataset": j.dataset(), "runtime": j.runtime(), "model": j.model(),
		"seed": j.Seed, "budget": 600, "charged_rollouts": 600,
		"baseline_mean": means[0], "deployed_mean": means[1], "delta_pp": means[2],
		"deployed": "incumbent", "fallback_reason": nil,
		"valid_for_aggregation": len(nc) == 0 && invalid == 0,
		"nonconformant":         nc, "test_items": len(items), "test_invalid_items": invalid,
	}
	test := map[string]any{
		"format": "cairn.job-test/1", "method": j.Method, "cell_id": j.CellID(),
		"seed": j.Seed, "deployed": "incumbent", "items": items,
	}
	chain, err := j.provenance(dir, result, nc)
	if err != nil {
		return "", err
	}
	result["selection_sha256"] = chain
	// test.json first: result.json gives its digest.
	for _, f := range []struct {
		name string
		v    map[string]any
	}{{"test.json", test}, {"result.json", result}} {
		data, err := json.MarshalIndent(f.v, "", "  ")
		if err != nil {
			return "", err
		}
		data = append(data, '\n')
		if err := os.WriteFile(filepath.Join(dir, f.name), data, 0o644); err != nil {
			return "", err
		}
		result["test_sha256"] = digest(data)
	}
	return dir, nil
}

// provenance writes what comes before the job's result into dir and
// sets result's fields of it: for an imported job its source and zero
// budget; for a job cairn ran its job.json (its identity, nonconformant
// nc), optimization.json and selection.json. It returns the result's
// selection_sha256.
func (j Job) provenance(dir string, result map[string]any, nc []string) (string, error) {
	if j.Imported {
		result["budget"], result["charged_rollouts"] = 0, 0
		result["source"] = map[string]any{"format": "lm-eval", "metric": "acc",
			"deployed": map[string]string{"file": "deployed.jsonl", "sha256": digest(nil)},
			"baseline": map[string]string{"file": "baseline.jsonl", "sha256": digest(nil)}}
		return "", nil
	}
	job := map[string]any{"format": "cairn.job/1"}
	for _, f := range []string{"method", "cell_id", "dataset", "runtime", "model", "seed", "budget"} {
		job[f] = result[f]
	}
	job["nonconformant"] = nc
	if _, err := writeJSON(dir, "job.json", job); err != nil {
		return "", err
	}
	opt, err := writeJSON(dir, "optimization.json", map[string]any{"format": "cairn.optimization/1", "proposed": true, "budget": 600, "charged_rollouts": 600})
	if err != nil {
		return "", err
	}
	sel, err := writeJSON(dir, "selection.json", map[string]any{"format": "cairn.job-selection/1", "deployed": "incumbent", "fallback_reason": nil, "optimization_sha256": digest(opt)})
	if err != nil {
		return "", err
	}
	return digest(sel), nil
}

// writeJSON writes v into dir/name, indented, and returns the bytes.
func writeJSON(dir, name string, v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	data = append(data, '\n')
	return data, os.WriteFile(filepath.Join(dir, name), data, 0o644)
}

// digest is a file's digest as result.json's test_sha256 gives it.
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Reseal sets the test_sha256 of the result.json in dir to the digest of
// the test.json beside it, as the job would have written it: for tests
// that edit a test.json to reach the checks after the digest's.
func Reseal(dir string) error {
	test, err := os.ReadFile(filepath.Join(dir, "test.json"))
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "result.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var result map[string]any
	if err := json.Unmarshal(b, &result); err != nil {
		return err
	}
	result["test_sha256"] = digest(test)
	out, err := json.MarshalIndent(result, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(out, '\n'), 0o644)
}

// Binary returns n paired 0/1 scores: the baseline right with probability
// pb, the deployed bundle with probability pd, from rng.
func Binary(rng *rand.Rand, n int, pb, pd float64) (baseline, deployed []float64) {
	baseline, deployed = make([]float64, n), make([]float64, n)
	for i := range n {
		if rng.Float64() < pb {
			baseline[i] = 1
		}
		if rng.Float64() < pd {
			deployed[i] = 1
		}
	}
	return baseline, deployed
}

// Grid writes seeds 0, 1 and 2 of every method × cell given, each with n
// binary items (baseline right at 0.5, deployed at 0.5 + gain[method]),
// from a stream seeded with seed. Cells are "dataset/runtime/model".
func Grid(root string, seed uint64, n int, gain map[string]float64, cells []string) error {
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, cell := range cells {
		parts := strings.SplitN(cell, "/", 3)
		if len(parts) != 3 {
			return fmt.Errorf("jobtest: cell %q is not dataset/runtime/model", cell)
		}
		for _, m := range slices.Sorted(maps.Keys(gain)) {
			for s := range 3 {
				b, d := Binary(rng, n, 0.5, 0.5+gain[m])
				j := Job{Method: m, Dataset: parts[0], Runtime: parts[1], Model: parts[2], Seed: s, Baseline: b, Deployed: d}
				if _, err := Write(root, j); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// round6 rounds as stages.JobFiles does.
func round6(f float64) float64 {
	if math.Abs(f) >= 1e15 {
		return f // no digit after the point to round
	}
	return math.Round(f*1e6) / 1e6
}

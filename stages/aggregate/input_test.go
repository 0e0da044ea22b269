package aggregate_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/stages/aggregate"
	"github.com/cairn-run/cairn/stages/aggregate/jobtest"
)

// badInput runs the aggregation of root after edit and returns its error,
// which must be an input error.
func badInput(t *testing.T, edit func(root string)) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, jobtest.Grid(root, 9, 5, map[string]float64{"gepa": 0}, []string{"hotpotqa/centralized/qwen"}))
	edit(root)
	_, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{"."}, Replicates: 100})
	require.Error(t, err)
	require.ErrorIs(t, err, aggregate.ErrBadInput, "%v", err)
	return err.Error()
}

const seed1 = "gepa/hotpotqa_centralized_qwen/seed1"

func rewrite(t *testing.T, path string, f func(string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(f(string(b))), 0o644))
}

func TestAResultThatDoesNotParseIsNamedWithItsPosition(t *testing.T) {
	msg := badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			return strings.Replace(s, `"method": "gepa",`, `"method": "gepa"`, 1)
		})
	})
	assert.Regexp(t, `^gepa/hotpotqa_centralized_qwen/seed1/result.json:\d+:\d+: not valid JSON: invalid character '"' after object key:value pair$`, msg)
	// The position is the line of the key after the missing comma.
	lines := strings.Split(msg, ":")
	assert.NotEqual(t, "1", lines[1])

	msg = badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			return strings.Replace(s, `"seed": 1`, `"seed": "one"`, 1)
		})
	})
	assert.Regexp(t, `^gepa/hotpotqa_centralized_qwen/seed1/result.json:\d+:\d+: seed is string, want a whole number$`, msg)

	msg = badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			return strings.Replace(s, `"cairn.job-result/1"`, `"cairn.job-result/2"`, 1)
		})
	})
	assert.Equal(t, `gepa/hotpotqa_centralized_qwen/seed1/result.json: format "cairn.job-result/2" is not one cairn reads (want "cairn.job-result/1")`, msg)
}

func TestItemsThatDoNotPairUpAreRefused(t *testing.T) {
	test := func(root string) string { return filepath.Join(root, seed1, "test.json") }
	msg := badInput(t, func(root string) {
		rewrite(t, test(root), func(s string) string { return strings.Replace(s, `"id": "q0003"`, `"id": "q0001"`, 1) })
	})
	assert.Equal(t, `gepa/hotpotqa_centralized_qwen/seed1/test.json: items[3] (id "q0001") repeats the id of items[1]: ids must be unique`, msg)

	msg = badInput(t, func(root string) {
		rewrite(t, test(root), func(s string) string {
			i := strings.Index(s, `"deployed": `+"")
			i = strings.Index(s[i+1:], `"deployed": `) + i + 1 // the first item's deployed score
			j := i + strings.IndexAny(s[i:], ",\n")
			return s[:i] + `"deployed": null` + s[j:]
		})
	})
	assert.Equal(t, `gepa/hotpotqa_centralized_qwen/seed1/test.json: items[0] (id "q0000") is valid but its deployed score is null: it has no pair`, msg)

	msg = badInput(t, func(root string) {
		rewrite(t, test(root), func(s string) string { return strings.Replace(s, `"seed": 1`, `"seed": 2`, 1) })
	})
	assert.Equal(t, `gepa/hotpotqa_centralized_qwen/seed1/test.json: seed 2 disagrees with result.json's seed 1`, msg)

	msg = badInput(t, func(root string) { require.NoError(t, os.Remove(test(root))) })
	assert.Equal(t, `gepa/hotpotqa_centralized_qwen/seed1/result.json: has no test.json beside it: the job's paired test scores are missing`, msg)
}

func TestSeedsThatDisagreeOnTheItemSetAreRefused(t *testing.T) {
	msg := badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, "gepa/hotpotqa_centralized_qwen/seed2/test.json"), func(s string) string {
			return strings.Replace(s, `"id": "q0004"`, `"id": "q9999"`, 1)
		})
	})
	assert.Equal(t, `gepa hotpotqa/centralized/qwen: seeds 0 and 2 were tested on different items (gepa/hotpotqa_centralized_qwen/seed0/test.json has 5, gepa/hotpotqa_centralized_qwen/seed2/test.json has 5; only seed 0 has "q0004"; only seed 2 has "q9999"): every seed of a row must use the same test split`, msg)
}

func TestTwoJobsForOneSeedAreRefused(t *testing.T) {
	msg := badInput(t, func(root string) {
		require.NoError(t, os.CopyFS(filepath.Join(root, "copy"), os.DirFS(filepath.Join(root, seed1))))
	})
	assert.Equal(t, `copy/result.json and gepa/hotpotqa_centralized_qwen/seed1/result.json are both gepa hotpotqa/centralized/qwen seed 1: keep one of them, or give roots that hold one`, msg)
}

func TestRootsThatHoldNothing(t *testing.T) {
	dir := t.TempDir()
	_, err := aggregate.Run(context.Background(), aggregate.Options{Dir: dir, Roots: []string{"runs"}})
	require.ErrorIs(t, err, aggregate.ErrBadInput)
	assert.EqualError(t, err, "runs: no such file or folder")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "runs"), 0o755))
	_, err = aggregate.Run(context.Background(), aggregate.Options{Dir: dir, Roots: []string{"runs"}})
	assert.EqualError(t, err, "no result.json under runs: name the folders the optimizer jobs wrote into")
}

func TestNamesWithControlCharactersAreRefused(t *testing.T) {
	msg := badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			return strings.Replace(s, `"method": "gepa"`, `"method": "ge\u0000pa"`, 1)
		})
	})
	assert.Equal(t, `gepa/hotpotqa_centralized_qwen/seed1/result.json: method "ge\x00pa" must be a non-empty name without tabs, newlines or other control characters`, msg)
}

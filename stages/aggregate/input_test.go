package aggregate_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/stages/aggregate"
	"github.com/cairn-run/cairn/stages/aggregate/jobtest"
	"github.com/cairn-run/cairn/stats"
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
	if filepath.Base(path) == "test.json" {
		// Past the digest check, to the one under test.
		require.NoError(t, jobtest.Reseal(filepath.Dir(path)))
	}
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

	// items is a list of objects; one of them, an object.
	msg = badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "test.json"), func(s string) string {
			i := strings.Index(s, `"items": [`)
			return s[:i] + `"items": {"a": 1}}`
		})
	})
	assert.Regexp(t, `^gepa/hotpotqa_centralized_qwen/seed1/test.json:\d+:\d+: items is object, want a list of objects$`, msg)

	msg = badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			return strings.Replace(s, `"cairn.job-result/1"`, `"cairn.job-result/2"`, 1)
		})
	})
	assert.Equal(t, `gepa/hotpotqa_centralized_qwen/seed1/result.json: format "cairn.job-result/2" is not one cairn reads (want "cairn.job-result/1")`, msg)
}

// A value of the wrong type in a test.json item is named with the item's
// index and the line and column where the value starts, as the other
// refusals of an item name it: "items[2].baseline", not "items.baseline".
func TestAWrongTypeInAnItemNamesTheItem(t *testing.T) {
	for _, c := range []struct{ field, from, to, want string }{
		{"baseline", `"baseline": 1,`, `"baseline": true,`, `items[2].baseline is bool, want a number`},
		{"deployed", `"deployed": 1,`, `"deployed": "1",`, `items[2].deployed is string, want a number`},
		{"valid", `"valid": true`, `"valid": 1`, `items[2].valid is number, want true or false`},
	} {
		var line, col int
		msg := badInput(t, func(root string) {
			rewrite(t, filepath.Join(root, seed1, "test.json"), func(s string) string {
				// The third item's field: the first two keep theirs.
				at := 0
				for range 2 {
					at = strings.Index(s[at:], `"id"`) + at + 1
				}
				at = strings.Index(s[at:], `"id"`) + at
				i := strings.Index(s[at:], c.from) + at
				require.GreaterOrEqual(t, i, at, c.field)
				v := i + strings.Index(c.from, ": ") + 2
				line, col = 1+strings.Count(s[:v], "\n"), v-strings.LastIndex(s[:v], "\n")
				return s[:i] + c.to + s[i+len(c.from):]
			})
		})
		assert.Equal(t, fmt.Sprintf("%s/test.json:%d:%d: %s", seed1, line, col, c.want), msg, c.field)
	}
}

// A job's file holds one JSON object and nothing else: junk after it (not
// only a second JSON value) is refused at its position.
func TestAResultWithJunkAfterItIsRefused(t *testing.T) {
	for _, junk := range []string{"garbage", "\x00\x00", "]", "{}"} {
		for _, file := range []string{"result.json", "test.json"} {
			msg := badInput(t, func(root string) {
				rewrite(t, filepath.Join(root, seed1, file), func(s string) string { return s + junk })
			})
			assert.Regexp(t, `^gepa/hotpotqa_centralized_qwen/seed1/`+file+`:\d+:1: more after the JSON object: a job's file holds one object and nothing else$`, msg, "%q after %s", junk, file)
		}
	}
}

// A number beyond float64 and an empty non-conformance reason are named
// as what they are.
func TestOutOfRangeScoresAndEmptyReasonsAreNamed(t *testing.T) {
	msg := badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "test.json"), func(s string) string {
			return strings.Replace(s, `"baseline": 1,`, `"baseline": 1e400,`, 1)
		})
	})
	assert.Regexp(t, `test.json:\d+:\d+: items\[0\].baseline is the number 1e400, beyond what a 64-bit float holds \(about ±1.8e308\)$`, msg)
	msg = badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			return strings.Replace(s, `"nonconformant": []`, `"nonconformant": [""]`, 1)
		})
	})
	assert.Equal(t, `gepa/hotpotqa_centralized_qwen/seed1/result.json: nonconformant[0] is empty: each reason is a sentence saying why the job is not part of the experiment`, msg)
}

// A file that starts with a UTF-8 byte-order mark is refused saying so,
// not as an "invalid character".
func TestAResultWithAByteOrderMarkIsRefused(t *testing.T) {
	msg := badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "test.json"), func(s string) string { return "\ufeff" + s })
	})
	assert.Equal(t, "gepa/hotpotqa_centralized_qwen/seed1/test.json:1:1: starts with a UTF-8 byte-order mark (bytes EF BB BF), which JSON does not have: save the file without it (UTF-8 without BOM)", msg)
}

// A byte that is not UTF-8 is refused at its place: a JSON reader takes
// it for U+FFFD, and two methods named "m\xff" and "m\xfe" would be one.
func TestAResultWithBytesThatAreNotUTF8IsRefused(t *testing.T) {
	msg := badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			return strings.Replace(s, `"method": "gepa"`, "\"method\": \"gepa\xff\"", 1)
		})
	})
	assert.Regexp(t, `^gepa/hotpotqa_centralized_qwen/seed1/result.json:\d+:\d+: a byte that is not UTF-8 \(JSON text is UTF-8;`, msg)
}

// A key given twice in one object is refused, at the second: which one a
// JSON reader keeps is not a thing a figure may depend on.
func TestAKeyGivenTwiceIsRefused(t *testing.T) {
	msg := badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			return strings.Replace(s, `"method": "gepa",`, `"method": "gepa", "method": "miprov2",`, 1)
		})
	})
	assert.Regexp(t, `^gepa/hotpotqa_centralized_qwen/seed1/result.json:\d+:\d+: method is given twice: JSON readers disagree on which one counts, so give it once$`, msg)

	msg = badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "test.json"), func(s string) string {
			return strings.Replace(s, `"baseline": `, `"baseline": 1, "baseline": `, 1)
		})
	})
	assert.Regexp(t, `^gepa/hotpotqa_centralized_qwen/seed1/test.json:\d+:\d+: items\[\d+\]\.baseline is given twice`, msg)
}

// A result.json that contradicts its test.json, or itself, is refused:
// the table is computed from test.json, and a job whose files disagree
// is not one job.
func TestAResultThatContradictsItsTestsIsRefused(t *testing.T) {
	msg := badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "test.json"), func(s string) string {
			return strings.Replace(s, `"baseline": 1,`, `"baseline": -5,`, 1)
		})
	})
	assert.Regexp(t, `^gepa/hotpotqa_centralized_qwen/seed1/result.json: says baseline_mean = [0-9.]+, but the mean of gepa/hotpotqa_centralized_qwen/seed1/test.json's \d+ valid items is -?[0-9.]+: the two files are not one job's$`, msg)

	msg = badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			return strings.Replace(s, `"valid_for_aggregation": true`, `"valid_for_aggregation": false`, 1)
		})
	})
	assert.Contains(t, msg, "says valid_for_aggregation = false, but it is true exactly when nonconformant is empty (here 0 reasons) and test_invalid_items is 0 (here 0): the file contradicts itself")

	// The digest the job wrote of its test.json: an edit that keeps the
	// means (two scores swapped) is found by it.
	msg = badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			return regexp.MustCompile(`"test_sha256": "sha256:[0-9a-f]+"`).ReplaceAllString(s, `"test_sha256": "sha256:0000"`)
		})
	})
	assert.Regexp(t, `^gepa/hotpotqa_centralized_qwen/seed1/test.json: is not the file the job wrote: its digest is sha256:[0-9a-f]{64}, result.json's test_sha256 is sha256:0000 \(was it edited after the job ended\?\)$`, msg)

	// Every field of the job's record is there: without test_sha256 an
	// edited test.json would be read as the job's, without the means its
	// test.json could not be checked against them.
	for _, field := range []string{"test_sha256", "baseline_mean", "deployed_mean", "delta_pp", "valid_for_aggregation", "fallback_reason", "budget", "charged_rollouts", "selection_sha256"} {
		msg = badInput(t, func(root string) {
			rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
				var doc map[string]any
				require.NoError(t, json.Unmarshal([]byte(s), &doc))
				delete(doc, field)
				b, err := json.Marshal(doc)
				require.NoError(t, err)
				return string(b)
			})
		})
		assert.Equal(t, `gepa/hotpotqa_centralized_qwen/seed1/result.json: has no "`+field+`": every job's result.json has it (docs/job-artifacts.md); was the file edited?`, msg, field)
	}
	msg = badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			return regexp.MustCompile(`"delta_pp": [^,]*,`).ReplaceAllString(s, `"delta_pp": 15,`)
		})
	})
	assert.Regexp(t, `^gepa/hotpotqa_centralized_qwen/seed1/result.json: says delta_pp = 15, but 100 × \(deployed_mean − baseline_mean\) is -?[0-9.e-]+: the file contradicts itself$`, msg)
	msg = badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			return strings.Replace(s, `"fallback_reason": null`, `"fallback_reason": "incumbent_not_better"`, 1)
		})
	})
	assert.Contains(t, msg, `deploys the incumbent but gives fallback_reason "incumbent_not_better"`)
	msg = badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			return strings.Replace(s, `"deployed": "incumbent"`, `"deployed": "seed"`, 1)
		})
	})
	assert.Contains(t, msg, "deploys the seed bundle with fallback_reason null")
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

// A hard link to a job's files is the same job, read once, as a link to
// it is; a result.json that is a link to nothing is refused, not read as
// a seed that never ran.
func TestHardLinksCountOnceAndDanglingResultsAreRefused(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, jobtest.Grid(root, 9, 5, map[string]float64{"gepa": 0}, []string{"hotpotqa/centralized/qwen"}))
	require.NoError(t, os.Mkdir(filepath.Join(root, "copy"), 0o755))
	for _, f := range []string{"result.json", "test.json", "job.json", "selection.json", "optimization.json"} {
		require.NoError(t, os.Link(filepath.Join(root, seed1, f), filepath.Join(root, "copy", f)))
	}
	s, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{"."}, Replicates: 100})
	require.NoError(t, err)
	require.Len(t, s.Rows, 1)
	assert.Equal(t, "ok", s.Rows[0].Status)

	msg := badInput(t, func(root string) {
		res := filepath.Join(root, seed1, "result.json")
		require.NoError(t, os.Remove(res))
		require.NoError(t, os.Symlink(filepath.Join(root, "gone", "result.json"), res))
	})
	assert.Regexp(t, `^gepa/hotpotqa_centralized_qwen/seed1/result.json: is a link to /.*/gone/result.json, which leads to nothing readable \(no such file or directory\): .*; restore its target, or remove the link$`, msg)
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

// TestScoresWhoseSumsOverflowAreRefused: scores that are finite but so
// large that a difference, a sum over items or a bootstrap mean would not
// be are refused, naming the file and the item, before anything is
// computed.
func TestScoresWhoseSumsOverflowAreRefused(t *testing.T) {
	write := func(root string, seed int, b, d []float64) {
		setScores(t, filepath.Join(root, fmt.Sprintf("gepa/hotpotqa_centralized_qwen/seed%d/test.json", seed)), b, d)
	}
	limit := fmt.Sprintf("%.2g", aggregate.ScoreLimit(5))
	// The difference overflows: +Inf from two finite scores.
	msg := badInput(t, func(root string) {
		write(root, 1, []float64{0, 1, -1.7e308, 0, 1}, []float64{1, 1, 1.7e308, 0, 1})
	})
	assert.Equal(t, `gepa/hotpotqa_centralized_qwen/seed1/test.json: items[2] (id "q0002"): the baseline score -1.7e+308 is beyond ±`+limit+`, the largest magnitude whose sums over 5 items cairn can add without overflow; nothing can be computed from it`, msg)
	// No difference at all, but the means' sums overflow.
	msg = badInput(t, func(root string) {
		big := []float64{1e308, 1e308, 1e308, 1e308, 1e308}
		write(root, 2, big, big)
	})
	assert.Contains(t, msg, `gepa/hotpotqa_centralized_qwen/seed2/test.json: items[0] (id "q0000"): the baseline score 1e+308 is beyond ±`+limit)
	// Each score within range, their difference not.
	msg = badInput(t, func(root string) {
		l := aggregate.ScoreLimit(5)
		write(root, 0, []float64{0, 0, 0, -0.75 * l, 0}, []float64{0, 0, 0, 0.75 * l, 0})
	})
	assert.Contains(t, msg, `gepa/hotpotqa_centralized_qwen/seed0/test.json: items[3] (id "q0003"): the deployed − baseline `)
}

// TestScoresAtTheLimitGiveFiniteFigures: at the limit, every figure of the
// table, the summary and the plot is a finite number.
func TestScoresAtTheLimitGiveFiniteFigures(t *testing.T) {
	for _, n := range []int{3, 100, 250} {
		root := t.TempDir()
		l := aggregate.ScoreLimit(n)
		for s := range aggregate.Seeds {
			b, d := make([]float64, n), make([]float64, n)
			for i := range b {
				// deployed − baseline is ±l, the scores ±l/2.
				sign := float64(1 - 2*((i+s)%2))
				if i%3 == 0 {
					sign = 1
				}
				b[i], d[i] = -sign*l/2, sign*l/2
			}
			_, err := jobtest.Write(root, jobtest.Job{Method: "gepa", Seed: s, Baseline: b, Deployed: d})
			require.NoError(t, err)
		}
		for _, resample := range stats.ResampleNames {
			sum, err := aggregate.Run(context.Background(), aggregate.Options{Roots: []string{root}, Replicates: 500, Resample: resample})
			require.NoError(t, err, "%d items", n)
			require.Len(t, sum.Rows, 1)
			r := sum.Rows[0]
			require.Equal(t, aggregate.StatusOK, r.Status)
			for name, v := range map[string]*float64{"baseline_mean": r.BaselineMean, "deployed_mean": r.DeployedMean, "delta_pp": r.DeltaPP, "ci_low": r.CILow, "ci_high": r.CIHigh, "p": r.P} {
				require.NotNil(t, v, name)
				assert.False(t, math.IsInf(*v, 0) || math.IsNaN(*v), "%d items, %s: %s = %v", n, resample, name, *v)
			}
			assert.NotEqual(t, *r.CILow, *r.CIHigh)
			var tsv, js, svg bytes.Buffer
			require.NoError(t, sum.TSV(&tsv))
			require.NoError(t, sum.JSON(&js))
			require.NoError(t, sum.SVG(&svg))
			assert.NotContains(t, tsv.String()+js.String()+svg.String(), "Inf")
			assert.NotContains(t, tsv.String()+js.String()+svg.String(), "NaN")
			assert.Less(t, strings.Count(svg.String(), `stroke="#e4e4e4"`), 16, "a handful of ticks")
		}
	}
}

// TestThePlotRefusesValuesItCannotDraw: the forest plot of figures whose
// axis would span more than the largest float (or that are not finite)
// is an error, and nothing is written; the axis loop ends whatever the
// values.
func TestThePlotRefusesValuesItCannotDraw(t *testing.T) {
	row := func(lo, d, hi float64) aggregate.Summary {
		return aggregate.Summary{Family: aggregate.FamilyTask, Replicates: 10, Rows: []aggregate.Row{{
			Method: "gepa", CellID: "d/r/m", Family: "d/m", Status: aggregate.StatusOK,
			DeltaPP: &d, CILow: &lo, CIHigh: &hi, P: &d, PHolm: &d, Reject: new(bool),
		}}}
	}
	for _, c := range [][3]float64{
		{-1.7e308, 0, 1.7e308},
		{math.Inf(-1), 0, 1},
		{0, math.NaN(), 1},
	} {
		s := row(c[0], c[1], c[2])
		w := &capped{max: 1 << 20}
		err := s.SVG(w)
		require.Error(t, err, "%v", c)
		assert.Contains(t, err.Error(), "cannot be")
		assert.Zero(t, w.n, "%v: nothing written", c)
	}
}

// capped is a writer that keeps count and stops growing at max bytes.
type capped struct{ n, max int }

func (c *capped) Write(p []byte) (int, error) {
	if c.n >= c.max {
		return 0, io.ErrShortWrite
	}
	c.n += len(p)
	return len(p), nil
}

// setScores rewrites the scores of a test.json's items.
func setScores(t *testing.T, path string, b, d []float64) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	items := doc["items"].([]any)
	require.Len(t, items, len(b))
	for i, it := range items {
		it.(map[string]any)["baseline"], it.(map[string]any)["deployed"] = b[i], d[i]
	}
	data, err = json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	require.NoError(t, jobtest.Reseal(filepath.Dir(path)))
}

// The seeds of a row ran one experiment: where their job.json files say
// they were answered by different servers, or ran other code or data,
// the row is refused, naming the field and both files; job.json files
// that agree, or none, change nothing.
func TestSeedsOfARowShareTheirSetup(t *testing.T) {
	writeJobs := func(root string, servers func(seed int) string) {
		for seed := range 3 {
			dir := filepath.Join(root, fmt.Sprintf("gepa/hotpotqa_centralized_qwen/seed%d", seed))
			job := jobIdentity(seed) + ` "task_model": "Qwen/Qwen3.5-9B", "reflection_model": "R", "command": ["m", "--seed", "` + fmt.Sprint(seed) + `"],
  "worker": ["python3", "w.py"], "digests": {"method": "sha256:m", "data": "sha256:d", "worker": "sha256:w", "bundle": "sha256:b", "pipeline": "sha256:p` + fmt.Sprint(seed) + `"}` + servers(seed) + `}`
			require.NoError(t, os.WriteFile(filepath.Join(dir, "job.json"), []byte(job), 0o644))
		}
	}
	same := t.TempDir()
	require.NoError(t, jobtest.Grid(same, 9, 5, map[string]float64{"gepa": 0}, []string{"hotpotqa/centralized/qwen"}))
	writeJobs(same, func(int) string { return `, "servers": {"task": ["sim", "--port", "{port}"]}` })
	_, err := aggregate.Run(context.Background(), aggregate.Options{Dir: same, Roots: []string{"."}, Replicates: 100})
	require.NoError(t, err, "the command and the pipeline's digest may differ")

	msg := badInput(t, func(root string) {
		writeJobs(root, func(seed int) string {
			if seed == 2 {
				return `, "servers": {"task": ["sim", "--port", "{port}", "--wrong-rate", "0.6"]}`
			}
			return `, "servers": {"task": ["sim", "--port", "{port}"]}`
		})
	})
	assert.Equal(t, `gepa hotpotqa/centralized/qwen: seeds 0 and 2 ran with different servers (gepa/hotpotqa_centralized_qwen/seed0/job.json: {"task":["sim","--port","{port}"]}; gepa/hotpotqa_centralized_qwen/seed2/job.json: {"task":["sim","--port","{port}","--wrong-rate","0.6"]}): every seed of a row is one experiment, its seed aside`, msg)

	msg = badInput(t, func(root string) {
		writeJobs(root, func(seed int) string {
			if seed == 1 {
				return `, "servers": {"task": ["sim"]}`
			}
			return ""
		})
	})
	assert.Contains(t, msg, "seeds 0 and 1 ran with different servers (gepa/hotpotqa_centralized_qwen/seed0/job.json: (none);")

	msg = badInput(t, func(root string) {
		writeJobs(root, func(int) string { return "" })
		rewrite(t, filepath.Join(root, seed1, "job.json"), func(s string) string { return strings.Replace(s, "sha256:m", "sha256:m2", 1) })
	})
	assert.Contains(t, msg, "seeds 0 and 1 ran with different digests.method")
}

// A seed with no job.json (an imported job) does not stand between the
// seeds that have one: those are still compared with each other.
func TestSeedsWithAJobFileAreComparedPastAnImportedOne(t *testing.T) {
	msg := badInput(t, func(root string) {
		dir := filepath.Join(root, "gepa/hotpotqa_centralized_qwen/seed0")
		require.NoError(t, os.RemoveAll(dir))
		scores := []float64{0, 1, 0, 1, 0}
		_, err := jobtest.Write(root, jobtest.Job{Method: "gepa", Seed: 0, Baseline: scores, Deployed: scores, Imported: true})
		require.NoError(t, err)
		for seed, model := range map[int]string{1: "Qwen/Qwen3.5-9B", 2: "meta-llama/Llama-3-70B"} {
			dir := filepath.Join(root, fmt.Sprintf("gepa/hotpotqa_centralized_qwen/seed%d", seed))
			job := jobIdentity(seed) + ` "task_model": "` + model + `", "reflection_model": "R", "worker": ["w"], "digests": {"method": "sha256:m", "data": "sha256:d", "worker": "sha256:w", "bundle": "sha256:b"}}`
			require.NoError(t, os.WriteFile(filepath.Join(dir, "job.json"), []byte(job), 0o644))
		}
	})
	assert.Contains(t, msg, "seeds 1 and 2 ran with different task_model")
}

// A job folder linked into a root is one of its jobs, as a linked
// result.json is, and a root that is a link to a folder is walked; a
// link back up the tree is walked once.
func TestJobsBehindLinksAreFound(t *testing.T) {
	root := t.TempDir()
	aside := t.TempDir()
	require.NoError(t, jobtest.Grid(root, 9, 5, map[string]float64{"gepa": 0}, []string{"hotpotqa/centralized/qwen"}))
	require.NoError(t, jobtest.Grid(aside, 9, 5, map[string]float64{"mipro": 0}, []string{"hotpotqa/centralized/qwen"}))
	require.NoError(t, os.Symlink(filepath.Join(aside, "mipro"), filepath.Join(root, "mipro")))
	require.NoError(t, os.Symlink(root, filepath.Join(root, "gepa", "loop")))
	s, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{"."}, Replicates: 100})
	require.NoError(t, err)
	require.Len(t, s.Rows, 2)
	assert.Equal(t, []string{"gepa", "mipro"}, []string{s.Rows[0].Method, s.Rows[1].Method})
	assert.Equal(t, []int{3, 3}, []int{s.Rows[0].NSeeds, s.Rows[1].NSeeds})
	require.Len(t, s.Families, 1)
	assert.Equal(t, 2, s.Families[0].Rows)

	link := filepath.Join(t.TempDir(), "mipro-link")
	require.NoError(t, os.Symlink(filepath.Join(aside, "mipro"), link))
	s, err = aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{link}, Replicates: 100})
	require.NoError(t, err)
	require.Len(t, s.Rows, 1)
	assert.Equal(t, 3, s.Rows[0].NSeeds)
}

// Keys that differ only in letter case are one struct field to cairn's
// reader and two keys to others: refused, as a key given twice is.
func TestAKeyGivenTwiceInTwoCasesIsRefused(t *testing.T) {
	msg := badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			return strings.Replace(s, `"method": "gepa",`, `"method": "gepa", "Method": "miprov2",`, 1)
		})
	})
	assert.Regexp(t, `^gepa/hotpotqa_centralized_qwen/seed1/result.json:\d+:\d+: Method is given twice, in two letter cases`, msg)

	msg = badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "test.json"), func(s string) string {
			return strings.Replace(s, `"valid": true`, `"valid": true, "VALID": false`, 1)
		})
	})
	assert.Regexp(t, `^gepa/hotpotqa_centralized_qwen/seed1/test.json:\d+:\d+: items\[0\]\.VALID is given twice, in two letter cases`, msg)

	// Alone, a key in another letter case is not the field: cairn's
	// reader would take it for the field, others would not.
	msg = badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "test.json"), func(s string) string {
			return strings.Replace(s, `"baseline":`, `"Baseline":`, 1)
		})
	})
	assert.Regexp(t, `^gepa/hotpotqa_centralized_qwen/seed1/test.json:\d+:\d+: items\[0\]\.Baseline is not a field: field names are matched exactly`, msg)
	msg = badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			return strings.Replace(s, `"status":`, `"STATUS":`, 1)
		})
	})
	assert.Regexp(t, `^gepa/hotpotqa_centralized_qwen/seed1/result.json:\d+:\d+: STATUS is not a field`, msg)
}

// One cell_id is split one way by every job: "a/b/c/d" could be dataset
// "a/b" or runtime "b/c", and the family (dataset × model) would follow
// whichever job was read first. An empty part names nothing.
func TestACellSplitTwoWaysIsRefused(t *testing.T) {
	root := t.TempDir()
	for _, m := range []struct {
		method, dataset, runtime string
	}{{"gepa", "ds", "rt/x"}, {"mipro", "ds/rt", "x"}} {
		for seed := range 3 {
			_, err := jobtest.Write(root, jobtest.Job{Method: m.method, Dataset: m.dataset, Runtime: m.runtime, Model: "mdl", Seed: seed, Baseline: []float64{0, 1}, Deployed: []float64{1, 1}})
			require.NoError(t, err)
		}
	}
	_, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{"."}, Replicates: 100})
	require.ErrorIs(t, err, aggregate.ErrBadInput)
	assert.Contains(t, err.Error(), `cell_id "ds/rt/x/mdl" is split two ways`)

	msg := badInput(t, func(root string) {
		rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
			s = strings.Replace(s, `"runtime": "centralized"`, `"runtime": ""`, 1)
			return strings.Replace(s, `"cell_id": "hotpotqa/centralized/qwen"`, `"cell_id": "hotpotqa//qwen"`, 1)
		})
	})
	assert.Contains(t, msg, `cell_id "hotpotqa//qwen" has an empty part`)
}

// A family is its dataset and model, not the name DATASET/MODEL: dataset
// "a/b" × model "d" and dataset "a" × model "b/d" are both named "a/b/d",
// and a table naming the family could not tell them apart. Refused,
// naming both files; a family of methods is unaffected.
func TestTwoTasksOfOneFamilyNameAreRefused(t *testing.T) {
	root := t.TempDir()
	for _, c := range []struct{ dataset, runtime, model string }{{"a/b", "c", "d"}, {"a", "z", "b/d"}} {
		for seed := range 3 {
			_, err := jobtest.Write(root, jobtest.Job{Method: "gepa", Dataset: c.dataset, Runtime: c.runtime, Model: c.model, Seed: seed,
				Baseline: []float64{0, 0, 0, 0, 0, 0, 0, 0}, Deployed: []float64{1, 1, 1, 1, 0, 0, 0, 0}})
			require.NoError(t, err)
		}
	}
	_, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{"."}, Replicates: 100})
	require.ErrorIs(t, err, aggregate.ErrBadInput)
	assert.Contains(t, err.Error(), `family "a/b/d" would be two tasks: dataset "a/b" × model "d" (gepa/a_b_c_d/seed0/result.json) and dataset "a" × model "b/d" (gepa/a_z_b_d/seed0/result.json)`)

	s, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{"."}, Replicates: 100, Family: aggregate.FamilyMethod})
	require.NoError(t, err)
	require.Len(t, s.Families, 1)
	assert.Equal(t, 2, s.Families[0].Rows)
}

// A seed bundle is deployed for one of three documented reasons; any
// other fallback_reason is refused, naming the file and the reasons.
func TestAnUndocumentedFallbackReasonIsRefused(t *testing.T) {
	for _, reason := range []string{"because", "", "Incumbent_not_better", "no_incumbent"} {
		root := t.TempDir()
		for seed := range 3 {
			dir, err := jobtest.Write(root, jobtest.Job{Method: "gepa", Seed: seed, Baseline: []float64{0, 1, 1}, Deployed: []float64{0, 1, 1}})
			require.NoError(t, err)
			rewrite(t, filepath.Join(dir, "test.json"), func(s string) string {
				return strings.Replace(s, `"deployed": "incumbent"`, `"deployed": "seed"`, 1)
			})
			rewrite(t, filepath.Join(dir, "result.json"), func(s string) string {
				s = strings.Replace(s, `"fallback_reason": null`, `"fallback_reason": "`+reason+`"`, 1)
				return strings.Replace(s, `"deployed": "incumbent"`, `"deployed": "seed"`, 1)
			})
		}
		_, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{"."}, Replicates: 100})
		if reason == "no_incumbent" {
			require.NoError(t, err)
			continue
		}
		require.ErrorIs(t, err, aggregate.ErrBadInput, reason)
		assert.Equal(t, `gepa/hotpotqa_centralized_qwen/seed0/result.json: fallback_reason "`+reason+`" is not one of incumbent_not_better, no_incumbent, validation_invalid: a seed bundle is deployed for one of those reasons (docs/job-artifacts.md)`, err.Error())
	}
}

// A job that deployed the seed bundle scored its items once: its
// deployed scores are its baseline scores, item by item.
func TestSeedDeployedWithOtherScoresIsRefused(t *testing.T) {
	root := t.TempDir()
	for seed := range 3 {
		// Equal means, other items: scores swapped between two items.
		dir, err := jobtest.Write(root, jobtest.Job{Method: "gepa", Seed: seed, Baseline: []float64{0, 1, 1}, Deployed: []float64{1, 0, 1}})
		require.NoError(t, err)
		rewrite(t, filepath.Join(dir, "test.json"), func(s string) string {
			return strings.Replace(s, `"deployed": "incumbent"`, `"deployed": "seed"`, 1)
		})
		rewrite(t, filepath.Join(dir, "result.json"), func(s string) string {
			s = strings.Replace(s, `"fallback_reason": null`, `"fallback_reason": "incumbent_not_better"`, 1)
			return strings.Replace(s, `"deployed": "incumbent"`, `"deployed": "seed"`, 1)
		})
	}
	_, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{"."}, Replicates: 100})
	require.ErrorIs(t, err, aggregate.ErrBadInput)
	assert.Regexp(t, `test.json: items\[0\] \(id "q0000"\): deployed 1 differs from baseline 0, but the job deployed the seed bundle`, err.Error())
}

// When every item has the same difference the interval is that point,
// and delta_pp is it, to the bit: no sum's rounding puts the point
// outside its own interval.
func TestAConstantDifferenceIsItsOwnInterval(t *testing.T) {
	root := t.TempDir()
	for seed := range 3 {
		b := make([]float64, 33)
		d := make([]float64, 33)
		for i := range d {
			b[i], d[i] = 0.5, 0.6
		}
		_, err := jobtest.Write(root, jobtest.Job{Method: "gepa", Seed: seed, Baseline: b, Deployed: d})
		require.NoError(t, err)
	}
	s, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{"."}, Replicates: 200})
	require.NoError(t, err)
	r := s.Rows[0]
	b, d := 0.5, 0.6
	want := 100 * (d - b) // 9.999999999999998: the doubles' difference
	assert.Equal(t, want, *r.DeltaPP)
	assert.Equal(t, *r.DeltaPP, *r.CILow)
	assert.Equal(t, *r.DeltaPP, *r.CIHigh)
	for _, sd := range r.Seeds {
		assert.Equal(t, want, *sd.DeltaPP)
	}
}

// A job none of whose test items is valid has no means: result.json gives
// them null, the row is incomplete, and a result.json that gives a figure
// for them anyway (or null beside valid items) is refused.
func TestMeansOfNoValidItemsAreNull(t *testing.T) {
	allInvalid := func(root string) {
		b, d := jobtest.Binary(rand.New(rand.NewPCG(5, 5)), 5, 0.5, 0.5)
		_, err := jobtest.Write(root, jobtest.Job{Method: "gepa", Dataset: "hotpotqa", Seed: 1, Baseline: b, Deployed: d,
			Invalid: []bool{true, true, true, true, true}})
		require.NoError(t, err)
	}
	root := t.TempDir()
	require.NoError(t, jobtest.Grid(root, 9, 5, map[string]float64{"gepa": 0}, []string{"hotpotqa/centralized/qwen"}))
	allInvalid(root)
	raw, err := os.ReadFile(filepath.Join(root, seed1, "result.json"))
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"baseline_mean": null`)
	sum, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{"."}, Replicates: 100})
	require.NoError(t, err)
	require.Len(t, sum.Rows, 1)
	assert.Equal(t, aggregate.StatusIncomplete, sum.Rows[0].Status)
	assert.Equal(t, "seed 1: 5 of 5 test items invalid (no score from a bundle)", sum.Rows[0].Reason)

	for _, field := range []string{"baseline_mean", "deployed_mean", "delta_pp"} {
		msg := badInput(t, func(root string) {
			allInvalid(root)
			rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
				return strings.Replace(s, `"`+field+`": null`, `"`+field+`": 0.9`, 1)
			})
		})
		assert.Equal(t, seed1+"/result.json: says "+field+" = 0.9, but none of its 5 test items is valid (test_invalid_items = 5): a mean of no items is null, so the figure comes from nowhere", msg)

		msg = badInput(t, func(root string) {
			rewrite(t, filepath.Join(root, seed1, "result.json"), func(s string) string {
				return regexp.MustCompile(`"`+field+`": [^,]*,`).ReplaceAllString(s, `"`+field+`": null,`)
			})
		})
		assert.Equal(t, seed1+`/result.json: has "`+field+`" null, but 5 of its 5 test items are valid: a job with valid items gives their means (docs/job-artifacts.md)`, msg)
	}
}

// A link under the roots that leads to nothing is refused, naming it and
// where it points: a job's folder, or a whole method's, moved away would
// otherwise drop out of the table without a word (a seed missing, or the
// method's rows, and with them the other rows' Holm correction). So is a
// root that is such a link, a link of any other name, and a folder named
// result.json, which is no job's result.
func TestDanglingLinksUnderTheRootsAreRefused(t *testing.T) {
	const why = ", which leads to nothing readable (no such file or directory): what it led to would be left out of the table without a word (a seed shown missing, or a whole method's rows gone, which changes the other rows' Holm correction); restore its target, or remove the link"
	root := t.TempDir()
	require.NoError(t, jobtest.Grid(root, 9, 5, map[string]float64{"gepa": 0, "mipro": 0}, []string{"hotpotqa/centralized/qwen"}))
	require.NoError(t, os.RemoveAll(filepath.Join(root, "mipro")))
	require.NoError(t, os.Symlink("../moved", filepath.Join(root, "mipro")))
	for _, r := range []string{".", "mipro"} {
		_, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{r}, Replicates: 100})
		require.ErrorIs(t, err, aggregate.ErrBadInput, r)
		assert.Equal(t, "mipro: is a link to ../moved"+why, err.Error(), r)
	}

	msg := badInput(t, func(root string) {
		dir := filepath.Join(root, seed1)
		require.NoError(t, os.RemoveAll(dir))
		require.NoError(t, os.Symlink("seed1-moved", dir))
	})
	assert.Equal(t, seed1+": is a link to seed1-moved"+why, msg)
	msg = badInput(t, func(root string) {
		require.NoError(t, os.Symlink("notes-old.txt", filepath.Join(root, seed1, "notes.txt")))
	})
	assert.Equal(t, seed1+"/notes.txt: is a link to notes-old.txt"+why, msg)
	msg = badInput(t, func(root string) {
		res := filepath.Join(root, seed1, "result.json")
		require.NoError(t, os.Remove(res))
		require.NoError(t, os.Symlink("../gone/result.json", res))
	})
	assert.Equal(t, seed1+"/result.json: is a link to ../gone/result.json, which leads to nothing readable (no such file or directory): the job would be left out of the table without a word, its seed shown missing; restore its target, or remove the link", msg)

	msg = badInput(t, func(root string) {
		res := filepath.Join(root, seed1, "result.json")
		require.NoError(t, os.Remove(res))
		require.NoError(t, os.Mkdir(res, 0o755))
	})
	assert.Equal(t, seed1+"/result.json: is not a regular file (a folder): cairn reads a job's result.json only from a regular file, as the job wrote it; put the job's own file there, or remove this one", msg)
}

// A result is read only while it follows from the job's artifacts before
// it: the selection.json its selection_sha256 names, and the
// optimization.json that selection's optimization_sha256 names. A job
// whose optimization was run again (--replace) under an old selection and
// result, or whose selection was edited, is refused, not published.
func TestAResultOfAnotherSelectionOrOptimizationIsRefused(t *testing.T) {
	digest := func(b []byte) string {
		sum := sha256.Sum256(b)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	chain := func(root string) {
		dir := filepath.Join(root, seed1)
		opt := []byte(`{"format": "cairn.job-optimization/1", "incumbent_digest": "sha256:aa"}` + "\n")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "optimization.json"), opt, 0o644))
		sel := []byte(`{"format": "cairn.job-selection/1", "optimization_sha256": "` + digest(opt) + `"}` + "\n")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "selection.json"), sel, 0o644))
		rewrite(t, filepath.Join(dir, "result.json"), func(s string) string {
			return regexp.MustCompile(`"selection_sha256": "[^"]*"`).ReplaceAllString(s, `"selection_sha256": "`+digest(sel)+`"`)
		})
	}
	root := t.TempDir()
	require.NoError(t, jobtest.Grid(root, 9, 5, map[string]float64{"gepa": 0}, []string{"hotpotqa/centralized/qwen"}))
	chain(root)
	_, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{"."}, Replicates: 100})
	require.NoError(t, err, "the artifacts follow from each other")

	msg := badInput(t, func(root string) {
		chain(root)
		require.NoError(t, os.WriteFile(filepath.Join(root, seed1, "optimization.json"), []byte(`{"format": "cairn.job-optimization/1", "incumbent_digest": "sha256:bb"}`+"\n"), 0o644))
	})
	assert.Regexp(t, `^`+seed1+`/optimization.json: is not the optimization the job's selection and result were made from: its digest is sha256:[0-9a-f]{64}, selection.json's optimization_sha256 is sha256:[0-9a-f]{64} \(the optimization run again since, an earlier one set aside, or the file edited\): the job's selection, test and result are not those of the artifacts in its folder: apply the job again with --replace naming its select node, which makes them anew$`, msg)

	msg = badInput(t, func(root string) {
		chain(root)
		rewrite(t, filepath.Join(root, seed1, "selection.json"), func(s string) string { return s + "\n" })
	})
	assert.Contains(t, msg, seed1+"/selection.json: is not the selection this result was made from")

	msg = badInput(t, func(root string) {
		chain(root)
		require.NoError(t, os.Remove(filepath.Join(root, seed1, "selection.json")))
	})
	assert.Contains(t, msg, seed1+"/result.json: names a selection.json (selection_sha256 sha256:")
	assert.Contains(t, msg, "but there is none beside it")
}

// A job is one cairn ran or one cairn import made, and its files say
// which consistently: an empty selection_sha256 without a source (a
// selection.json then edited to deploy the seed bundle, an
// optimization.json edited) left the chain unchecked, and a job cairn
// ran whose job.json was removed passed as an imported job, its setup
// compared with no other seed's. Both are refused, as is an imported job
// (a source) with a budget, a selection_sha256 or a job.json.
func TestAJobIsOneCairnRanOrOneItImported(t *testing.T) {
	const runRes = seed1 + "/result.json: "
	edit := func(root, field, value string) {
		path := filepath.Join(root, seed1, "result.json")
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		re := regexp.MustCompile(`"` + field + `": [^,\n]*`)
		require.True(t, re.Match(b), field)
		require.NoError(t, os.WriteFile(path, re.ReplaceAll(b, []byte(`"`+field+`": `+value)), 0o644))
	}
	msg := badInput(t, func(root string) {
		edit(root, "selection_sha256", `""`)
		rewrite(t, filepath.Join(root, seed1, "selection.json"), func(s string) string {
			return strings.Replace(s, `"deployed": "incumbent"`, `"deployed": "seed"`, 1)
		})
		rewrite(t, filepath.Join(root, seed1, "optimization.json"), func(s string) string {
			return strings.Replace(s, `"charged_rollouts": 600`, `"charged_rollouts": 599`, 1)
		})
	})
	assert.Equal(t, runRes+`has selection_sha256 "", which only a job cairn import made has (with a "source"), and no source: a job cairn ran names the digest of the selection.json its result was made from, which is checked with the optimization.json before it; restore the job's result.json, or apply the job again`, msg)

	msg = badInput(t, func(root string) {
		require.NoError(t, os.Remove(filepath.Join(root, seed1, "job.json")))
	})
	assert.Equal(t, runRes+`has no job.json beside it, but no "source" either: a job cairn ran writes its job.json first, and only a job cairn import made (with a source) has none; without it the job's setup is compared with no other seed's: restore the job's job.json, or apply the job again`, msg)

	imported := func(root string) {
		dir := filepath.Join(root, seed1)
		require.NoError(t, os.RemoveAll(dir))
		scores := []float64{0, 1, 0, 1, 0}
		_, err := jobtest.Write(root, jobtest.Job{Method: "gepa", Seed: 1, Baseline: scores, Deployed: scores, Imported: true})
		require.NoError(t, err)
	}
	for _, c := range []struct{ field, value, got string }{
		{"budget", "600", `budget 600, charged_rollouts 0 and selection_sha256 ""`},
		{"charged_rollouts", "5", `budget 0, charged_rollouts 5 and selection_sha256 ""`},
		{"selection_sha256", `"sha256:1111"`, `budget 0, charged_rollouts 0 and selection_sha256 "sha256:1111"`},
	} {
		msg = badInput(t, func(root string) {
			imported(root)
			edit(root, c.field, c.value)
		})
		assert.Equal(t, runRes+`has a "source", so cairn import made it, but `+c.got+`: an imported job has 0, 0 and "" (docs/job-artifacts.md); the file contradicts itself`, msg, c.field)
	}
	msg = badInput(t, func(root string) {
		imported(root)
		require.NoError(t, os.WriteFile(filepath.Join(root, seed1, "job.json"), []byte(jobIdentity(1)+` "x": 0}`), 0o644))
	})
	assert.Equal(t, seed1+`/job.json: is beside a result.json that cairn import made (it has a "source"), and an imported job has no job.json: these are not one job's files; remove the job.json, or import into a folder of its own`, msg)
}

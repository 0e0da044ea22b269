package docs_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/stages/rollout"
)

// scoreEval answers every item with score 0.5, except "down", an
// infrastructure failure.
type scoreEval struct{}

func (scoreEval) Rollouts(_ context.Context, bundle string, ids []string) ([]rollout.Outcome, error) {
	out := make([]rollout.Outcome, len(ids))
	for i, id := range ids {
		half := 0.5
		out[i] = rollout.Outcome{Item: id, Key: "k" + id, Score: &half}
		if id == "down" {
			out[i] = rollout.Outcome{Item: id, InfraFailure: true}
		}
	}
	return out, nil
}

// The Python client of docs/rollout-protocol.md is the file the simulated
// method imports, and it works against cairn's service: results, the
// typed budget_exhausted error, infrastructure failures not charged, a
// malformed request refused as bad_request whatever the budget.
func TestRolloutClient(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	doc, err := os.ReadFile("rollout-protocol.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)```python\n(.*?)```").FindSubmatch(doc)
	require.NotNil(t, m, "rollout-protocol.md has a python block")
	file, err := os.ReadFile("../testdata/optimizer/methods/cairn_rollout.py")
	require.NoError(t, err)
	assert.Equal(t, string(file), string(m[1]), "the documented client is testdata/optimizer/methods/cairn_rollout.py")
	assert.LessOrEqual(t, strings.Count(string(m[1]), "\n"), 40, "the client stays short")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cairn_rollout.py"), m[1], 0o644))
	meter, err := rollout.NewMeter(rollout.MeterOptions{Budget: 3, Ledger: filepath.Join(dir, "ledger"), NoSync: true})
	require.NoError(t, err)
	defer meter.Close()
	sock := filepath.Join(dir, "r.sock")
	srv, err := rollout.Listen(context.Background(), sock, meter, scoreEval{}, nil)
	require.NoError(t, err)
	defer srv.Close()
	script := `
from cairn_rollout import BudgetExhausted, RolloutError, Rollouts
c = Rollouts()
r = c.rollout("bundle", ["a", "down", "b"])
print([(x["item"], x["score"], x["charged"]) for x in r])
try:
    c.rollout("bundle", ["c", "d"])
except BudgetExhausted as e:
    print("exhausted:", e)
try:
    c.call(op="train")
except RolloutError as e:
    print("refused:", e)
try:
    c.rollout("bundle", ["e", "e"])
except BudgetExhausted as e:
    print("exhausted:", e)
except RolloutError as e:
    print("refused:", e)
s = c.status()
print(s["charged"], s["attempted"], s["infra_failures"], s["remaining"])
`
	cmd := exec.Command("python3", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CAIRN_ROLLOUT_SOCKET="+sock)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 5, "%s", out)
	assert.Equal(t, "[('a', 0.5, True), ('down', None, False), ('b', 0.5, True)]", lines[0])
	assert.Equal(t, "exhausted: 2 rollout(s) asked for, 1 of the budget of 3 left; nothing was run or charged", lines[1])
	assert.Contains(t, lines[2], `refused: unknown op "train"`)
	// A malformed request asking for more than is left is bad_request, not
	// budget_exhausted: it is checked before the budget.
	assert.Equal(t, `refused: "e" is asked for twice in one request; nothing was charged`, lines[3])
	assert.Equal(t, "2 3 1 1", lines[4])
}

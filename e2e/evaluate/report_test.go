package evaluate_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/runreport/browsertest"
	"github.com/cairn-run/cairn/sim/simmodel"
)

// An evaluation of 40 items of which the even ones were evaluated before
// (their results in the item store): its report's items table says, per
// item, "from the store" for exactly those and "asked" for the others.
func TestReportShowsItemsFromTheStoreOrAsked(t *testing.T) {
	const n = 40
	w := newWorkspace(t, n)
	srv := startServer(t, simmodel.Config{WrongRate: 0.3})
	all, err := os.ReadFile(filepath.Join(w.dir, "data/items.jsonl"))
	require.NoError(t, err)
	lines := strings.SplitAfter(strings.TrimSpace(string(all)), "\n")
	require.Len(t, lines, n)
	var even strings.Builder
	for i := 0; i < n; i += 2 {
		even.WriteString(strings.TrimSpace(lines[i]) + "\n")
	}
	w.write("data/items.jsonl", even.String())
	f := w.pipeline(stageSpec{pipeline: "half", stage: "eval", scores: "runs/eval/scores.jsonl"})
	code, text := w.apply(f, srv.URL)
	require.Equal(t, 0, code, text)

	// Every item now: the even ones are in the store.
	w.write("data/items.jsonl", string(all))
	cmd := w.cairn(f, srv.URL)
	cmd.Args = append(cmd.Args, "--report")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	c := counts(t, string(out))
	require.Equal(t, n/2, c.FromStore, "%s", out)
	require.Equal(t, n/2, c.Evaluated, "%s", out)
	m := regexp.MustCompile(`(?m)^Report: (\S+)$`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "%s", out)

	p := browsertest.Open(t, m[1], 1400, 1000)
	browsertest.Eval[bool](t, p, `new Promise(ok => { document.querySelector("#itemlist .card[data-node='stage.eval'] button").click(); const f = () => document.querySelector("#itemlist table.items") ? ok(true) : setTimeout(f, 5); f() })`)
	got := browsertest.Eval[map[string]string](t, p, `Object.fromEntries([...document.querySelectorAll("#itemlist table.items tr[data-id]")].map(r => [r.dataset.id, r.querySelector("td.origin").textContent]))`)
	want := map[string]string{}
	for i, it := range w.items {
		want[it.ID] = "asked"
		if i%2 == 0 {
			want[it.ID] = "from the store"
		}
	}
	assert.Equal(t, want, got)
	assert.Equal(t, "20 from the item store, 20 asked of the model in this run", browsertest.Eval[string](t, p, `document.querySelector("#itemlist .origins").textContent`))
	assert.Empty(t, p.Errors(), "console errors")
}

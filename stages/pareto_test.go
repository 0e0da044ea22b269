package stages_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/stages"
)

type metrics struct{ mean, pass, tput, e2e float64 }

// instance is the object a finished (or failed) upstream instance shows,
// like stage.aime24["NAME"].
func instance(key, status, class, msg string, m *metrics) cty.Value {
	res := cty.NullVal(cty.DynamicPseudoType)
	if m != nil {
		res = cty.ObjectVal(map[string]cty.Value{
			"name":         cty.StringVal(key),
			"content_hash": cty.StringVal("hash-" + key),
			"mean@16":      cty.NumberFloatVal(m.mean),
			"pass@16":      cty.NumberFloatVal(m.pass),
			"throughput":   cty.NumberFloatVal(m.tput),
			"e2e_time":     cty.NumberFloatVal(m.e2e),
			"gpu":          cty.StringVal("0"),
		})
	}
	return cty.ObjectVal(map[string]cty.Value{
		"key": cty.StringVal(key), "value": cty.StringVal(key), "result": res,
		"status": cty.StringVal(status), "class": cty.StringVal(class), "message": cty.StringVal(msg),
		"exit_code": cty.NumberIntVal(0), "duration_s": cty.NumberFloatVal(1.5),
	})
}

func ok(key string, m metrics) (string, cty.Value) { return key, instance(key, "ok", "", "", &m) }

// paretoNode is a pareto node over the given instances, listed in its
// upstreams in the given order (the for_each order).
func paretoNode(args map[string]cty.Value, rows ...any) *stages.Node {
	m := map[string]cty.Value{}
	n := &stages.Node{Address: "stage.batch", Stage: "batch", Ranges: map[string]hcl.Range{}, Args: map[string]cty.Value{}}
	for i := 0; i < len(rows); i += 2 {
		key := rows[i].(string)
		m[key] = rows[i+1].(cty.Value)
		n.Upstreams = append(n.Upstreams, stages.Upstream{Address: `stage.aime24["` + key + `"]`, Status: "ok"})
	}
	n.Args["rows"] = cty.ObjectVal(m)
	for k, v := range args {
		n.Args[k] = v
	}
	return n
}

type paretoResult struct {
	X           string           `json:"x"`
	Y           string           `json:"y"`
	Columns     []string         `json:"columns"`
	Rows        []map[string]any `json:"rows"`
	ParetoFront []string         `json:"pareto_front"`
	Failed      []string         `json:"failed"`
	Files       map[string]string
}

func runPareto(t *testing.T, n *stages.Node) (*stages.Outcome, paretoResult, *execRuntime) {
	t.Helper()
	require.False(t, stages.Pareto{}.Check(n).HasErrors())
	rt := &execRuntime{root: t.TempDir()}
	out, err := stages.Pareto{}.Run(context.Background(), n, rt)
	require.NoError(t, err)
	var res paretoResult
	if out.Class == "" {
		require.NoError(t, json.Unmarshal(out.Result, &res))
	}
	return out, res, rt
}

func rowNames(res paretoResult) []string {
	var out []string
	for _, r := range res.Rows {
		out = append(out, r["name"].(string))
	}
	return out
}

func TestParetoTableFrontAndFiles(t *testing.T) {
	// Keys sort as a < b < c < d, but the batch was given d, b, a, c: the
	// table keeps the given order.
	n := paretoNode(nil,
		"d", instance("d", "failed", "timeout", "killed at its timeout of 60m0s", nil),
		"b", instance("b", "ok", "", "", &metrics{0.47, 0.93, 5139.5, 827.1}),
		"a", instance("a", "ok", "", "", &metrics{0.41, 0.87, 6468.0, 676.8}),
		"c", instance("c", "ok", "", "", &metrics{0.43, 0.90, 2536.8, 1692.5}),
	)
	out, res, rt := runPareto(t, n)
	require.Empty(t, out.Class, out.Message)

	assert.Equal(t, []string{"d", "b", "a", "c"}, rowNames(res))
	assert.Equal(t, []string{"b", "a"}, res.ParetoFront, "c is dominated by b; d failed")
	assert.Equal(t, []string{"d"}, res.Failed)
	assert.Equal(t, "throughput", res.X)
	assert.Equal(t, "mean@16", res.Y)
	assert.Equal(t, []string{"name", "content_hash", "mean@16", "pass@16", "throughput", "e2e_time"}, res.Columns)
	assert.Equal(t, "hash-b", res.Rows[1]["content_hash"])
	assert.Equal(t, true, res.Rows[0]["failed"])
	assert.Contains(t, res.Rows[0]["fail_reason"], "timeout: killed at its timeout")
	assert.Nil(t, res.Rows[0]["mean@16"], "a failed variant has no numbers")

	// The four files, listed as outputs, in reports/<stage> by default.
	want := map[string]string{
		"markdown": "reports/batch/table.md", "tsv": "reports/batch/table.tsv",
		"json": "reports/batch/table.json", "svg": "reports/batch/pareto.svg",
	}
	assert.Equal(t, want, res.Files)
	assert.ElementsMatch(t, []string{want["markdown"], want["tsv"], want["json"], want["svg"]}, out.Files)
	md, err := os.ReadFile(filepath.Join(rt.root, want["markdown"]))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| name | content_hash")
	assert.Contains(t, string(md), "FAILED: timeout: killed at its timeout")
	tsv, err := os.ReadFile(filepath.Join(rt.root, want["tsv"]))
	require.NoError(t, err)
	assert.Equal(t, 5, strings.Count(string(tsv), "\n"), "header and 4 rows")
	js, err := os.ReadFile(filepath.Join(rt.root, want["json"]))
	require.NoError(t, err)
	assert.True(t, json.Valid(js))
	svg, err := os.ReadFile(filepath.Join(rt.root, want["svg"]))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg")

	// The user sees the table and the front.
	shown := rt.err.String()
	assert.Contains(t, shown, string(md))
	assert.Contains(t, shown, "Pareto front on (throughput, mean@16): b, a")
	assert.Contains(t, shown, "Failed (not compared): d")
	assert.Contains(t, shown, "reports/batch/pareto.svg")
}

func TestParetoFrontCases(t *testing.T) {
	tests := []struct {
		name  string
		rows  []any
		front []string
	}{
		{
			name: "one variant dominates all",
			rows: []any{
				"a", instance("a", "ok", "", "", &metrics{0.5, 0.9, 5000, 100}),
				"b", instance("b", "ok", "", "", &metrics{0.4, 0.9, 4000, 100}),
				"c", instance("c", "ok", "", "", &metrics{0.5, 0.9, 3000, 100}),
				"d", instance("d", "ok", "", "", &metrics{0.3, 0.9, 5000, 100}),
			},
			front: []string{"a"},
		},
		{
			name: "ties are on the front together",
			rows: []any{
				"a", instance("a", "ok", "", "", &metrics{0.5, 0.9, 5000, 100}),
				"b", instance("b", "ok", "", "", &metrics{0.5, 0.9, 5000, 100}),
				"c", instance("c", "ok", "", "", &metrics{0.4, 0.9, 4000, 100}),
				"d", instance("d", "ok", "", "", &metrics{0.6, 0.9, 1000, 100}),
			},
			front: []string{"a", "b", "d"},
		},
		{
			name: "equal x, higher y dominates",
			rows: []any{
				"a", instance("a", "ok", "", "", &metrics{0.5, 0.9, 5000, 100}),
				"b", instance("b", "ok", "", "", &metrics{0.6, 0.9, 5000, 100}),
			},
			front: []string{"b"},
		},
		{
			name: "a skipped variant is never on the front",
			rows: []any{
				"a", instance("a", "skipped", "upstream", `upstream stage.ruler["a"] failed`, nil),
				"b", instance("b", "ok", "", "", &metrics{0.1, 0.2, 10, 100}),
			},
			front: []string{"b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, res, _ := runPareto(t, paretoNode(nil, tt.rows...))
			require.Empty(t, out.Class, out.Message)
			assert.Equal(t, tt.front, res.ParetoFront)
		})
	}
}

func TestParetoOptions(t *testing.T) {
	args := map[string]cty.Value{
		"x": cty.StringVal("pass@16"), "y": cty.StringVal("mean@16"),
		"columns": strList("name", "mean@16", "gpu"),
		"out_dir": cty.StringVal("reports/t"),
	}
	k1, v1 := ok("a", metrics{0.5, 0.8, 1, 1})
	k2, v2 := ok("b", metrics{0.4, 0.9, 2, 2})
	out, res, rt := runPareto(t, paretoNode(args, k1, v1, k2, v2))
	require.Empty(t, out.Class, out.Message)
	assert.Equal(t, []string{"name", "mean@16", "gpu"}, res.Columns)
	assert.Equal(t, "0", res.Rows[0]["gpu"], "any field of the result can be a column")
	assert.Equal(t, []string{"a", "b"}, res.ParetoFront)
	assert.FileExists(t, filepath.Join(rt.root, "reports/t/table.md"))
}

func TestParetoRefusesUnknownMetric(t *testing.T) {
	k, v := ok("a", metrics{0.5, 0.8, 1, 1})
	out, _, _ := runPareto(t, paretoNode(map[string]cty.Value{"x": cty.StringVal("thruput")}, k, v))
	assert.Equal(t, "setup", out.Class)
	assert.Contains(t, out.Message, `"thruput"`)
	assert.Contains(t, out.Message, "throughput", "the message lists what the results hold")
}

func TestParetoAllFailed(t *testing.T) {
	n := paretoNode(nil,
		"a", instance("a", "skipped", "upstream", "upstream failed", nil),
		"b", instance("b", "failed", "exit", "exited with status 3", nil),
	)
	out, res, rt := runPareto(t, n)
	require.Empty(t, out.Class, out.Message)
	assert.Empty(t, res.ParetoFront)
	assert.Equal(t, []string{"a", "b"}, res.Failed)
	assert.Contains(t, rt.err.String(), "nothing to compare")
}

func TestParetoCheck(t *testing.T) {
	n := &stages.Node{Address: "stage.batch", Stage: "batch", Ranges: map[string]hcl.Range{}, Args: map[string]cty.Value{
		"rows":    cty.StringVal("stage.aime24"),
		"out_dir": cty.StringVal("/tmp/x"),
		"columns": cty.ListValEmpty(cty.String),
	}}
	diags := stages.Pareto{}.Check(n)
	require.True(t, diags.HasErrors())
	var details []string
	for _, d := range diags {
		details = append(details, d.Summary+": "+d.Detail)
	}
	text := strings.Join(details, "\n")
	assert.Contains(t, text, "rows is the instances of a stage")
	assert.Contains(t, text, "out_dir")
	assert.Contains(t, text, "at least one column")

	// At plan time the rows are unknown: accepted.
	n.Args = map[string]cty.Value{"rows": cty.DynamicVal}
	assert.False(t, stages.Pareto{}.Check(n).HasErrors())
}

func TestParetoSaysSimulated(t *testing.T) {
	inst := instance("a", "ok", "", "", &metrics{0.5, 0.8, 1, 1})
	m := inst.AsValueMap()
	res := m["result"].AsValueMap()
	res["simulated"] = cty.True
	m["result"] = cty.ObjectVal(res)
	out, _, rt := runPareto(t, paretoNode(nil, "a", cty.ObjectVal(m)))
	require.Empty(t, out.Class, out.Message)
	assert.Contains(t, rt.err.String(), "(SIMULATED results)")
	svg, err := os.ReadFile(filepath.Join(rt.root, "reports/batch/pareto.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "SIMULATED")

	// Real results are not labelled.
	out, _, rt = runPareto(t, paretoNode(nil, "a", instance("a", "ok", "", "", &metrics{0.5, 0.8, 1, 1})))
	require.Empty(t, out.Class, out.Message)
	assert.NotContains(t, rt.err.String(), "SIMULATED")
}

// TestParetoRefusesAxisNotANumber: a finished variant whose result holds
// an axis as something other than a number cannot be placed in the
// plane, and the front of the others is not the batch's (here a, left
// out, dominates them all): the node fails with class result, naming the
// variant, the node whose result file it is and the field, and writes no
// table, front or plot.
func TestParetoRefusesAxisNotANumber(t *testing.T) {
	tests := []struct {
		name  string
		field string
		val   cty.Value // nil: the field is left out, "Throughput" given instead
		want  string
	}{
		{"a string", "mean@16", cty.StringVal("0.50"), `holds "mean@16" as a string ("0.50"), not a number`},
		{"null", "mean@16", cty.NullVal(cty.Number), `holds "mean@16" as null, not a number`},
		{"a bool", "throughput", cty.True, `holds "throughput" as a bool (true), not a number`},
		{"a misspelt key", "throughput", cty.NilVal, `has no "throughput" (it holds "Throughput", "content_hash", "e2e_time", "mean@16", "name", "pass@16")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst := instance("a", "ok", "", "", &metrics{0.5, 0.9, 100, 10})
			m := inst.AsValueMap()
			res := m["result"].AsValueMap()
			delete(res, "gpu")
			if tt.val == cty.NilVal {
				res["Throughput"] = res[tt.field]
				delete(res, tt.field)
			} else {
				res[tt.field] = tt.val
			}
			m["result"] = cty.ObjectVal(res)
			n := paretoNode(nil,
				"a", cty.ObjectVal(m),
				"b", instance("b", "ok", "", "", &metrics{0.3, 0.9, 80, 10}),
				"c", instance("c", "ok", "", "", &metrics{0.2, 0.9, 60, 10}),
				"d", instance("d", "failed", "exit", "exited with status 1", nil),
			)
			out, _, rt := runPareto(t, n)
			assert.Equal(t, "result", out.Class)
			assert.Contains(t, out.Message, "the Pareto front on (throughput, mean@16) cannot be computed")
			assert.Contains(t, out.Message, `variant "a": the result file of stage.aime24["a"] `+tt.want)
			assert.Contains(t, out.Message, `no table, front or plot was written`)
			assert.Contains(t, out.Message, `apply --replace 'stage.aime24["a"]'`, "how to run it again")
			assert.NotContains(t, out.Message, `variant "b"`)
			assert.NotContains(t, out.Message, `variant "d"`, "a failed variant is listed as failed, not refused")
			assert.Nil(t, out.Result)
			assert.NoFileExists(t, filepath.Join(rt.root, "reports/batch/table.json"))
			assert.NoFileExists(t, filepath.Join(rt.root, "reports/batch/pareto.svg"))
			assert.NotContains(t, rt.err.String(), "Pareto front on", "no front is shown")
		})
	}

	// A list of results (no upstream instances): the variant is named by
	// its result's name.
	inst := instance("a", "ok", "", "", &metrics{0.5, 0.9, 100, 10})
	res := inst.AsValueMap()["result"].AsValueMap()
	res["mean@16"] = cty.StringVal("0.50")
	n := &stages.Node{Address: "stage.batch", Stage: "batch", Ranges: map[string]hcl.Range{}, Args: map[string]cty.Value{
		"rows": cty.TupleVal([]cty.Value{cty.ObjectVal(res), instance("b", "ok", "", "", &metrics{0.3, 0.9, 80, 10}).GetAttr("result")}),
	}}
	out, _, _ := runPareto(t, n)
	assert.Equal(t, "result", out.Class)
	assert.Contains(t, out.Message, `variant "a": its result holds "mean@16" as a string ("0.50"), not a number`)
}

// A metric the table shows (pass@16 here, not an axis) that a result
// holds as a string is refused as an axis is, not shown blank; a column no
// result holds (misspelt) is refused; rows given as a list must name each
// variant once.
func TestParetoRefusesFiguresItWouldShowBlank(t *testing.T) {
	inst := instance("a", "ok", "", "", &metrics{0.5, 0.9, 100, 10})
	m := inst.AsValueMap()
	res := m["result"].AsValueMap()
	res["pass@16"] = cty.StringVal("0.9333")
	m["result"] = cty.ObjectVal(res)
	n := paretoNode(nil, "a", cty.ObjectVal(m), "b", instance("b", "ok", "", "", &metrics{0.3, 0.9, 80, 10}))
	out, _, rt := runPareto(t, n)
	assert.Equal(t, "result", out.Class)
	assert.Contains(t, out.Message, `variant "a": the result file of stage.aime24["a"] holds "pass@16" as a string ("0.9333"), not a number`)
	assert.NoFileExists(t, filepath.Join(rt.root, "reports/batch/table.json"))

	n = paretoNode(map[string]cty.Value{"columns": cty.TupleVal([]cty.Value{cty.StringVal("name"), cty.StringVal("pass@61")})},
		"a", instance("a", "ok", "", "", &metrics{0.5, 0.9, 100, 10}), "b", instance("b", "ok", "", "", &metrics{0.3, 0.9, 80, 10}))
	out, _, _ = runPareto(t, n)
	assert.NotEmpty(t, out.Class)
	assert.Contains(t, out.Message, `the column "pass@61" is in no finished variant's result`)

	res = instance("a", "ok", "", "", &metrics{0.5, 0.9, 100, 10}).GetAttr("result").AsValueMap()
	nameless := map[string]cty.Value{}
	for k, v := range res {
		if k != "name" {
			nameless[k] = v
		}
	}
	for want, rows := range map[string][]cty.Value{
		"rows holds no variant: there is nothing to compare, and nothing was written": {},
		"rows[1]: want a result object (or an instance of a stage), got null":         {cty.ObjectVal(res), cty.NullVal(cty.DynamicPseudoType)},
		"rows[1] has no name":                    {cty.ObjectVal(res), cty.ObjectVal(nameless)},
		`rows[0] and rows[1] are both named "a"`: {cty.ObjectVal(res), cty.ObjectVal(res)},
	} {
		v := cty.EmptyTupleVal
		if len(rows) > 0 {
			v = cty.TupleVal(rows)
		}
		n := &stages.Node{Address: "stage.batch", Stage: "batch", Ranges: map[string]hcl.Range{}, Args: map[string]cty.Value{"rows": v}}
		out, _, _ := runPareto(t, n)
		assert.NotEmpty(t, out.Class, want)
		assert.Contains(t, out.Message, want)
	}
}

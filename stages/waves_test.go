package stages_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/stages"
	"github.com/cairn-run/cairn/ui"
)

func strList(ss ...string) cty.Value {
	vs := make([]cty.Value, len(ss))
	for i, s := range ss {
		vs[i] = cty.StringVal(s)
	}
	return cty.ListVal(vs)
}

func wavesNode(key string, args map[string]cty.Value) *stages.Node {
	a := map[string]cty.Value{"run": strList("bin/sim/aime24", "--config", "submissions/t/"+key+".json")}
	for k, v := range args {
		a[k] = v
	}
	return &stages.Node{
		Address: `stage.aime24["` + key + `"]`, Stage: "aime24", EachKey: key,
		Args: a, Ranges: map[string]hcl.Range{},
	}
}

func TestWavesCheckDefaultsToOneGPU(t *testing.T) {
	n := wavesNode("v0", nil)
	require.False(t, stages.Waves{}.Check(n).HasErrors())
	assert.Equal(t, 1, n.Common.GPUs, "a waves variant without gpus gets one")

	// The batch pins each variant to one device: any other count is refused.
	for _, g := range []int64{0, 2} {
		n = wavesNode("v0", map[string]cty.Value{"gpus": cty.NumberIntVal(g)})
		n.Common.GPUs = int(g) // as the engine decodes it
		diags := stages.Waves{}.Check(n)
		require.True(t, diags.HasErrors(), "gpus = %d", g)
		assert.Contains(t, diags.Error(), "exactly one GPU")
	}
}

func TestWavesBatchPolicy(t *testing.T) {
	tests := []struct {
		name string
		args map[string]cty.Value
		want stages.BatchPolicy
		err  string
	}{
		{name: "defaults", want: stages.BatchPolicy{Mode: "waves", Size: 4}},
		{
			name: "everything",
			args: map[string]cty.Value{
				"mode": cty.StringVal("backfill"), "batch_size": cty.NumberIntVal(2),
				"log_dir": cty.StringVal("logs/submission/t/"), "tag": cty.StringVal("t"),
				"ledger": cty.StringVal("algorithm_scientist/memory.md"),
			},
			want: stages.BatchPolicy{Mode: "backfill", Size: 2, LogDir: "logs/submission/t", Tag: "t", Ledger: "algorithm_scientist/memory.md"},
		},
		{name: "null ledger", args: map[string]cty.Value{"ledger": cty.NullVal(cty.String)}, want: stages.BatchPolicy{Mode: "waves", Size: 4}},
		{name: "unknown mode keeps the default", args: map[string]cty.Value{"mode": cty.UnknownVal(cty.String)}, want: stages.BatchPolicy{Mode: "waves", Size: 4}},
		{name: "bad mode", args: map[string]cty.Value{"mode": cty.StringVal("parallel")}, want: stages.BatchPolicy{Mode: "waves", Size: 4}, err: `not "parallel"`},
		{name: "zero batch", args: map[string]cty.Value{"batch_size": cty.NumberIntVal(0)}, want: stages.BatchPolicy{Mode: "waves", Size: 4}, err: "batch_size"},
		{name: "fractional batch", args: map[string]cty.Value{"batch_size": cty.NumberFloatVal(2.5)}, want: stages.BatchPolicy{Mode: "waves", Size: 4}, err: "whole number"},
		{name: "absolute log_dir", args: map[string]cty.Value{"log_dir": cty.StringVal("/var/log/x")}, want: stages.BatchPolicy{Mode: "waves", Size: 4}, err: "relative to the workspace"},
		{name: "escaping ledger", args: map[string]cty.Value{"ledger": cty.StringVal("../memory.md")}, want: stages.BatchPolicy{Mode: "waves", Size: 4}, err: "leaves the workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := wavesNode("v0", tt.args)
			assert.Equal(t, tt.want, stages.Waves{}.BatchPolicy(n))
			diags := stages.Waves{}.Check(n)
			if tt.err == "" {
				assert.False(t, diags.HasErrors(), diags.Error())
				return
			}
			require.True(t, diags.HasErrors())
			assert.Contains(t, diags.Error(), tt.err)
		})
	}
}

func TestWavesCheckStageExactCount(t *testing.T) {
	decl := hcl.Range{Filename: "aime24.hcl", Start: hcl.Pos{Line: 7, Column: 1}, End: hcl.Pos{Line: 7, Column: 20}}
	forEach := hcl.Range{Filename: "aime24.hcl", Start: hcl.Pos{Line: 8, Column: 14}, End: hcl.Pos{Line: 8, Column: 27}}
	var extra map[string]cty.Value // more attributes of every node
	info := func(size int, keys ...string) *stages.StageInfo {
		s := &stages.StageInfo{Name: "aime24", Keys: keys, DeclRange: decl}
		for _, k := range keys {
			args := map[string]cty.Value{}
			if size > 0 {
				args["batch_size"] = cty.NumberIntVal(int64(size))
			}
			for a, v := range extra {
				args[a] = v
			}
			n := wavesNode(k, args)
			n.Ranges["for_each"] = forEach
			s.Nodes = append(s.Nodes, n)
		}
		return s
	}
	tests := []struct {
		name string
		info *stages.StageInfo
		want string // "" for accepted
	}{
		{"four", info(0, "a", "b", "c", "d"), ""},
		{"three", info(0, "a", "b", "c"), "Batches must contain exactly 4 variants. Got 3 — re-design and re-invoke."},
		{"five", info(0, "a", "b", "c", "d", "e"), "Batches must contain exactly 4 variants. Got 5 — re-design and re-invoke."},
		{"one, no for_each", info(0, ""), "Batches must contain exactly 4 variants. Got 1 — re-design and re-invoke."},
		{"declared size two", info(2, "a", "b"), ""},
		{"declared size two, got four", info(2, "a", "b", "c", "d"), "Batches must contain exactly 2 variants. Got 4 — re-design and re-invoke."},
	}
	// Another attribute's error is the only one: the declared size
	// stands. A batch_size refused itself, or not known yet, is not
	// compared.
	for _, bad := range []struct {
		name string
		args map[string]cty.Value
	}{
		{"declared size two, bad mode", map[string]cty.Value{"mode": cty.StringVal("fast")}},
		{"declared size two, bad tag", map[string]cty.Value{"tag": cty.NumberIntVal(5)}},
		{"declared size two, bad ledger", map[string]cty.Value{"ledger": cty.StringVal("/abs/ledger.jsonl")}},
		{"declared size two, bad strict_batch", map[string]cty.Value{"strict_batch": cty.StringVal("yes")}},
		{"batch_size a string", map[string]cty.Value{"batch_size": cty.StringVal("two")}},
		{"batch_size 0", map[string]cty.Value{"batch_size": cty.NumberIntVal(0)}},
		{"batch_size unknown", map[string]cty.Value{"batch_size": cty.UnknownVal(cty.Number)}},
	} {
		extra = bad.args
		size := 2
		if _, ok := bad.args["batch_size"]; ok {
			size = 0
		}
		tests = append(tests, struct {
			name string
			info *stages.StageInfo
			want string
		}{bad.name, info(size, "a", "b"), ""})
	}
	extra = nil
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diags := stages.Waves{}.CheckStage(tt.info)
			if tt.want == "" {
				assert.Empty(t, diags)
				return
			}
			require.Len(t, diags, 1)
			assert.Equal(t, hcl.DiagError, diags[0].Severity)
			assert.Contains(t, diags[0].Detail, tt.want)
			assert.Contains(t, diags[0].Detail, "stage.aime24")
			require.NotNil(t, diags[0].Subject, "the refusal points at the stage")
			assert.Equal(t, forEach, *diags[0].Subject)
		})
	}
}

func TestWavesKeyExcluded(t *testing.T) {
	assert.ElementsMatch(t, []string{"batch_size", "mode", "log_dir", "tag", "ledger", "strict_batch"}, stages.Waves{}.KeyExcluded())
	var k stages.Kind = stages.Waves{}
	_, isBatcher := k.(stages.Batcher)
	_, isChecker := k.(stages.StageChecker)
	assert.True(t, isBatcher)
	assert.True(t, isChecker)
}

// execRuntime records the Proc it is given and runs write as the process.
type execRuntime struct {
	root  string
	got   []stages.Proc
	write func()
	err   bytes.Buffer
}

func (r *execRuntime) Exec(_ context.Context, p stages.Proc) (*process.Result, error) {
	r.got = append(r.got, p)
	start := time.Now()
	if p.Started != nil {
		p.Started(process.JobRef{})
	}
	if r.write != nil {
		r.write()
	}
	return &process.Result{ExitCode: 0, Started: start, Ended: time.Now()}, nil
}
func (r *execRuntime) Root() string        { return r.root }
func (r *execRuntime) OutDir() string      { return filepath.Join(r.root, "out") }
func (r *execRuntime) CacheDir() string    { return filepath.Join(r.root, ".cairn") }
func (r *execRuntime) Emit(e events.Event) { ui.NewTerminal(ui.Options{Progress: &r.err}).Emit(e) }
func (r *execRuntime) RunID() string       { return "test-run" }
func (r *execRuntime) NoSync() bool        { return true }

func TestWavesRunNamesLogsAfterTheVariant(t *testing.T) {
	rt := &execRuntime{root: t.TempDir()}
	n := wavesNode("batch_x_id2", nil)
	out, err := stages.Waves{}.Run(context.Background(), n, rt)
	require.NoError(t, err)
	assert.Empty(t, out.Class)
	require.Len(t, rt.got, 1)
	assert.Equal(t, "batch_x_id2", rt.got[0].LogName)
	assert.Equal(t, []string{"bin/sim/aime24", "--config", "submissions/t/batch_x_id2.json"}, rt.got[0].Argv)
}

// A variant key that is not one file name never leads its logs out of the
// batch's folder, and two such keys never share a log; a plain key (dots
// and dashes included) is its own name.
func TestWavesLogNameStaysInTheBatchFolder(t *testing.T) {
	byKey, byName := map[string]string{}, map[string]string{}
	for _, key := range []string{"x/../../../../esc_out", "sub/dir", "sub_dir", "qwen2.5-7b", "..", "a\nb", strings.Repeat("k", 300), "v0.attempt2", "v0.attempt"} {
		rt := &execRuntime{root: t.TempDir()}
		_, err := stages.Waves{}.Run(context.Background(), wavesNode(key, nil), rt)
		require.NoError(t, err)
		require.Len(t, rt.got, 1)
		name := rt.got[0].LogName
		log := filepath.Join("logs", "gpu0_"+name+".out")
		assert.Equal(t, "logs", filepath.Dir(filepath.Clean(log)), key)
		assert.NotContains(t, name, "\n", key)
		assert.LessOrEqual(t, len(name), 140, key)
		if other, dup := byName[name]; dup {
			t.Errorf("%q shares its log with %q", key, other)
		}
		byName[name], byKey[key] = key, name
	}
	assert.Equal(t, "qwen2.5-7b", byKey["qwen2.5-7b"])
	assert.Equal(t, "sub_dir", byKey["sub_dir"])
	// A key ending like a retry's logs (gpu0_v0.attempt2.out) is not
	// its own name: the key v0.attempt2 would write v0's attempt 2.
	assert.NotEqual(t, "v0.attempt2", byKey["v0.attempt2"])
	assert.Equal(t, "v0.attempt", byKey["v0.attempt"])
}

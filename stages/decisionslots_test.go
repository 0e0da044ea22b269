package stages

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/stages/decision"
)

// decisionslots gives a protocol's slots in its collection order, and a
// bad protocol's problems with their positions.
func TestDecisionSlots(t *testing.T) {
	root := t.TempDir()
	b, err := os.ReadFile("decision/testdata/seed_protocol.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.json"), b, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "bad.json"), []byte("{\n  \"protocol_version\": 1\n}\n"), 0o644))
	ctx := &hcl.EvalContext{Functions: dsl.Functions(root, Functions)}
	eval := func(src string) (string, hcl.Diagnostics) {
		e, d := hclsyntax.ParseExpression([]byte(src), "t.hcl", hcl.InitialPos)
		require.False(t, d.HasErrors(), src)
		v, d := e.Value(ctx)
		if d.HasErrors() {
			return "", d
		}
		return v.AsString(), nil
	}
	p, err := decision.ReadProtocol(filepath.Join(root, "p.json"))
	require.NoError(t, err)
	order := p.CollectionOrder()
	got, d := eval(`join(",", [for s in decisionslots("p.json") : "${s.slot_id}/${s.role}/${s.seed}/${s.collection}"])`)
	require.False(t, d.HasErrors(), d.Error())
	want := ""
	for i, s := range order {
		if i > 0 {
			want += ","
		}
		want += s.ID + "/" + s.Role + "/" + strconv.Itoa(s.Seed) + "/" + strconv.Itoa(i)
	}
	assert.Equal(t, want, got)
	got, d = eval(`"${decisionslots("p.json")[0].model_family} ${decisionslots("p.json")[0].actor_micro_batch} ${decisionslots("p.json")[0].reservation}"`)
	require.False(t, d.HasErrors(), d.Error())
	assert.Equal(t, order[0].ModelFamily+" "+strconv.Itoa(order[0].ActorMicroBatch)+" "+strconv.FormatFloat(order[0].Reservation, 'f', -1, 64), got)

	_, d = eval(`decisionslots("bad.json")`)
	require.True(t, d.HasErrors())
	assert.Contains(t, d.Error(), "bad.json:2:23: protocol_version: the number 1 where a string is expected")
	assert.Contains(t, d.Error(), "bad.json:1:1: cases is missing: a decision protocol must give it", "every problem, not the first")
}

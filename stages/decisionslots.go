package stages

import (
	"fmt"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/stages/decision"
)

// Functions are the functions of pipeline expressions that the stage kinds
// add to the language's (engine/plan gives them to the loader):
// decisionslots reads the decision kind's protocol files.
var Functions = map[string]dsl.FileFunc{
	"decisionslots": decisionSlotsFunc,
}

// slotType is the object decisionslots gives for each planned process.
var slotType = cty.Object(map[string]cty.Type{
	"slot_id": cty.String, "case_id": cty.String, "candidate_id": cty.String,
	"role": cty.String, "seed": cty.Number, "model_family": cty.String, "dataset": cty.String,
	"actor_micro_batch": cty.Number, "reservation": cty.Number, "collection": cty.Number,
})

// decisionSlotsFunc is decisionslots(path): the planned processes of a
// decision protocol file (docs/decision.md) in their collection order,
// one object per slot.
func decisionSlotsFunc(read func(path, fn string) ([]byte, error)) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.List(slotType)),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := args[0].AsString()
			b, err := read(p, "decisionslots()")
			if err != nil {
				return cty.NilVal, err
			}
			proto, err := decision.ParseProtocol(p, b)
			if err != nil {
				return cty.NilVal, fmt.Errorf("%s is not a decision protocol cairn can use:\n%w", p, err)
			}
			order := proto.CollectionOrder()
			if len(order) == 0 {
				return cty.ListValEmpty(slotType), nil
			}
			vals := make([]cty.Value, len(order))
			for i, s := range order {
				vals[i] = cty.ObjectVal(map[string]cty.Value{
					"slot_id": cty.StringVal(s.ID), "case_id": cty.StringVal(s.CaseID), "candidate_id": cty.StringVal(s.CandidateID),
					"role": cty.StringVal(s.Role), "seed": cty.NumberIntVal(int64(s.Seed)),
					"model_family": cty.StringVal(s.ModelFamily), "dataset": cty.StringVal(s.Dataset),
					"actor_micro_batch": cty.NumberIntVal(int64(s.ActorMicroBatch)), "reservation": cty.NumberFloatVal(s.Reservation),
					"collection": cty.NumberIntVal(int64(s.Collection)),
				})
			}
			return cty.ListVal(vals), nil
		},
	})
}

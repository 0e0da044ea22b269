package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/stages"
)

// inCairn is a kind that works in cairn's own process: for "wait" it
// waits until its context ends (as aggregate's bootstrap does), for
// "busy" it works 300ms without looking at its context.
type inCairn struct{}

func init() { stages.Register(inCairn{}) }

func (inCairn) Name() string { return "test_in_cairn" }
func (inCairn) Version() int { return 1 }
func (inCairn) Schema() *hcl.BodySchema {
	return &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "mode", Required: true}}}
}
func (inCairn) Check(*stages.Node) hcl.Diagnostics { return nil }
func (inCairn) Run(ctx context.Context, n *stages.Node, _ stages.Runtime) (*stages.Outcome, error) {
	if n.Args["mode"].AsString() == "busy" {
		time.Sleep(300 * time.Millisecond)
		return &stages.Outcome{Result: json.RawMessage(`1`)}, nil
	}
	select {
	case <-ctx.Done():
		return &stages.Outcome{Class: failclass.Interrupted, Message: "interrupted"}, nil
	case <-time.After(30 * time.Second):
		return &stages.Outcome{Result: json.RawMessage(`1`)}, nil
	}
}

// A kind working in cairn's own process is ended at the stage's timeout,
// with class timeout: one that watches its context at once, one that
// does not once it returns. Without timeout it runs to its end.
func TestInCairnKindEndsAtItsTimeout(t *testing.T) {
	w := newWorkspace(t, `
pipeline "t" {}
stage "test_in_cairn" "wait" {
  mode    = "wait"
  timeout = "100ms"
}
stage "test_in_cairn" "busy" {
  mode    = "busy"
  timeout = "50ms"
}
stage "test_in_cairn" "free" {
  mode = "busy"
}
`)
	start := time.Now()
	r := w.apply(ApplyOptions{})
	assert.Less(t, time.Since(start), 10*time.Second, "the waiting kind was ended at its timeout")
	assert.Equal(t, 1, r.res.Ran, r.out)
	require.Len(t, r.res.Failures, 2, r.out)
	for _, f := range r.res.Failures {
		assert.Equal(t, failclass.Timeout, f.Class, f.Address)
		switch f.Address {
		case "stage.wait":
			assert.Equal(t, "ended at its timeout of 100ms", f.Message)
		case "stage.busy":
			assert.Equal(t, "ended at its timeout of 50ms", f.Message)
		default:
			t.Errorf("%s failed", f.Address)
		}
	}
}

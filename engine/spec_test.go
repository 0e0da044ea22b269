package engine

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/process"
)

// The engine gives the executor a node's run id, key and attempt as the
// spec's typed fields (a cluster executor names its jobs by them), the
// same as the process's CAIRN_RUN_ID, CAIRN_NODE_KEY and CAIRN_ATTEMPT.
func TestSpecCarriesRunKeyAndAttempt(t *testing.T) {
	w := newWorkspace(t, `
pipeline "p" {}
stage "command" "a" {
  run   = ["flaky"]
  retry {
    max = 1
    on  = ["exit"]
  }
}
`)
	var mu sync.Mutex
	var specs []*executor.Spec
	x := inProcess{name: "flaky", run: func(spec *executor.Spec) (*process.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		specs = append(specs, spec)
		if len(specs) == 1 {
			return &process.Result{ExitCode: 1, Class: failclass.Exit}, nil
		}
		return &process.Result{}, nil
	}}
	r := w.apply(ApplyOptions{Executor: x})
	require.Len(t, specs, 2, r.out)
	env := func(spec *executor.Spec, name string) string {
		v := ""
		for _, kv := range spec.Env {
			if k, val, _ := strings.Cut(kv, "="); k == name {
				v = val
			}
		}
		return v
	}
	for i, spec := range specs {
		assert.Equal(t, r.res.RunID, spec.RunID)
		assert.NotEmpty(t, spec.Key)
		assert.Equal(t, i+1, spec.Attempt)
		assert.Equal(t, env(spec, "CAIRN_RUN_ID"), spec.RunID)
		assert.Equal(t, env(spec, "CAIRN_NODE_KEY"), spec.Key)
		assert.Equal(t, env(spec, "CAIRN_ATTEMPT"), strconv.Itoa(spec.Attempt))
	}
}

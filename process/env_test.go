package process

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A node's process sees what it inherits, what cairn tells it of its node
// (only what is set), its GPUs, the stage's env and the kind's variables,
// in that order; a later setting of a name replaces an earlier one, so
// each name is there once, with the value the process sees.
func TestEnvList(t *testing.T) {
	e := Env{
		Inherit: []string{"HOME=/home/u", "PATH=/bin", "MODEL_ID=old", "CUDA_VISIBLE_DEVICES=0,1"},
		RunID:   "r1", Node: `stage.a["x"]`, Key: "k1", OutDir: "/c/scratch/a", Attempt: 2, Workspace: "/w",
		GPUs:  []string{"CUDA_VISIBLE_DEVICES=1", "CUDA_DEVICE_ORDER=PCI_BUS_ID"},
		Stage: map[string]string{"PATH": "/opt/bin", "B": "2", "A": "1"},
		Set:   map[string]string{"MODEL_ID": "m", "A": "kind"},
	}
	assert.Equal(t, []string{
		"HOME=/home/u",
		"CAIRN_RUN_ID=r1", `CAIRN_NODE=stage.a["x"]`, "CAIRN_NODE_KEY=k1", "CAIRN_OUT_DIR=/c/scratch/a",
		"CAIRN_ATTEMPT=2", "CAIRN_WORKSPACE=/w",
		"CUDA_VISIBLE_DEVICES=1", "CUDA_DEVICE_ORDER=PCI_BUS_ID",
		"B=2", "PATH=/opt/bin",
		"A=kind", "MODEL_ID=m",
	}, e.List())

	// Only what is set is told; a process without GPUs sees none.
	assert.Equal(t, []string{"PATH=/bin", "CAIRN_NODE=n", "CAIRN_WORKSPACE=/w", "CUDA_VISIBLE_DEVICES="},
		Env{Inherit: []string{"PATH=/bin", "CUDA_VISIBLE_DEVICES=0"}, Node: "n", Workspace: "/w", NoGPUs: true}.List())

	// Nothing inherited said: cairn's own environment.
	t.Setenv("CAIRN_ENV_TEST", "inherited")
	assert.Contains(t, Env{}.List(), "CAIRN_ENV_TEST=inherited")
}

package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

// `cairn gpus` names a simulated inventory as simulated and shows busy
// devices with the reason.
func TestGPUsSimulated(t *testing.T) {
	t.Setenv("CAIRN_GPUS", "sim:4,busy=0,2")
	t.Setenv("CAIRN_LEASE_DIR", t.TempDir())
	var out, errb bytes.Buffer
	code := run([]string{"gpus"}, &out, &errb)
	assert.Equal(t, 0, code, errb.String())
	s := out.String()
	assert.Contains(t, s, "simulated")
	assert.Regexp(t, `(?m)^\s*0\b.*busy`, s)
	assert.Regexp(t, `(?m)^\s*1\b.*free`, s)
	assert.Regexp(t, `(?m)^\s*2\b.*busy`, s)
	assert.Regexp(t, `(?m)^\s*3\b.*free`, s)
}

// Without a driver and without CAIRN_GPUS, `cairn gpus` says there is no GPU
// and exits 0.
func TestGPUsNone(t *testing.T) {
	t.Setenv("CAIRN_GPUS", "")
	t.Setenv("CAIRN_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
	var out, errb bytes.Buffer
	code := run([]string{"gpus"}, &out, &errb)
	assert.Equal(t, 0, code, errb.String())
	assert.Regexp(t, `(?i)no nvidia driver|0 GPUs|no GPU`, out.String())
}

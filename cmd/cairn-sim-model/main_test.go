package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/sim/simmodel"
)

func TestServeUntilSIGTERM(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "requests.jsonl")
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"--model", "qwen", "--model", "llama", "--request-log", logPath}, outW, &stderr)
		outW.Close()
	}()
	url, err := bufio.NewReader(outR).ReadString('\n')
	require.NoError(t, err)
	url = strings.TrimSpace(url)
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+/v1$`, url)

	resp, err := http.Get(url + "/models")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), `"id":"llama"`)
	assert.Contains(t, string(body), `"owned_by":"cairn-simulated"`)

	resp, err = http.Post(url+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"qwen","messages":[{"role":"user","content":"What is 2 + 3?"}]}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	assert.Equal(t, 0, <-code)
	assert.Contains(t, stderr.String(), "SIMULATED model serving qwen, llama")

	raw, err := os.ReadFile(logPath)
	require.NoError(t, err)
	entries, err := simmodel.ReadLog(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "qwen", entries[0].Model)
	assert.Equal(t, simmodel.MessagesDigest([]simmodel.Message{{Role: "user", Content: "What is 2 + 3?"}}), entries[0].Messages)
}

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run([]string{"--help"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "SIMULATED")
	assert.Equal(t, 2, run([]string{"--fail-rate", "2"}, &out, &errOut))
	assert.Equal(t, 2, run([]string{"extra"}, &out, &errOut))
}

// Package llamacpp_test runs a real model server that cairn's authors did
// not write — llama.cpp's OpenAI-compatible server, from PyPI's
// llama-cpp-python[server] — on a tiny llama model whose random weights
// the test writes itself with the gguf package
// (testdata/llamacpp/tiny_llama.py): a real load, real tokenization, real
// completions, on the CPU.
//
// The server and gguf live in the virtual environment
// scripts/llama-deps.sh makes (build/pyenv-llama, or CAIRN_LLAMA_VENV).
// Where it is missing the tests skip and say why; CAIRN_REQUIRE_LLAMA=1 (CI)
// runs the script first and fails them instead. Where the script's wheels
// are kept already, the install takes seconds and the tests run it too.
package llamacpp_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
)

var (
	cairnBin   string // the cairn binary built for these tests
	python     string // the environment's python, "" when missing
	skipReason string // why the tests skip when python is ""
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if testing.Short() {
		skipReason = "-short: the llama.cpp server tests build cairn and run a model server"
		return m.Run()
	}
	python, skipReason = findLlama()
	return e2etest.Binaries{Packages: []string{"cmd/cairn"}}.Main(m, os.Stdout, func(dir string) {
		cairnBin = filepath.Join(dir, "cairn")
	})
}

// repoRoot is the repository's root, from this package's folder.
func repoRoot() string {
	abs, _ := filepath.Abs("../..")
	return abs
}

// findLlama returns the environment's python, running scripts/llama-deps.sh
// first where that is quick (its wheels are kept) or required; or why
// there is none.
func findLlama() (string, string) {
	root := repoRoot()
	venv := os.Getenv("CAIRN_LLAMA_VENV")
	if venv == "" {
		venv = filepath.Join(root, "build", "pyenv-llama")
	}
	wheels := os.Getenv("CAIRN_LLAMA_WHEELS")
	if wheels == "" {
		wheels = filepath.Join(root, "build", "wheels-llama")
	}
	py := filepath.Join(venv, "bin", "python")
	ready := func() bool {
		return exec.Command(py, "-c", "import llama_cpp.server.app, gguf").Run() == nil
	}
	if ready() {
		return py, ""
	}
	kept, _ := filepath.Glob(filepath.Join(wheels, "llama_cpp_python-*.whl"))
	if len(kept) > 0 || os.Getenv("CAIRN_REQUIRE_LLAMA") == "1" {
		cmd := exec.Command("bash", filepath.Join(root, "scripts", "llama-deps.sh"))
		cmd.Env = append(os.Environ(), "CAIRN_LLAMA_VENV="+venv, "CAIRN_LLAMA_WHEELS="+wheels)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Sprintf("scripts/llama-deps.sh failed (%v):\n%s", err, out)
		}
		if ready() {
			return py, ""
		}
	}
	return "", fmt.Sprintf("llama-cpp-python[server] and gguf are not installed in %s: run scripts/llama-deps.sh "+
		"(make llama-deps; its first run builds llama.cpp from source, many minutes)", venv)
}

// needLlama skips the test (fails it under CAIRN_REQUIRE_LLAMA=1) where
// the server is not installed.
func needLlama(t *testing.T) {
	t.Helper()
	if python != "" {
		return
	}
	if os.Getenv("CAIRN_REQUIRE_LLAMA") == "1" && !testing.Short() {
		t.Fatalf("CAIRN_REQUIRE_LLAMA=1: %s", skipReason)
	}
	t.Skip(skipReason)
}

// tinyModel writes the tiny llama model into dir and returns its path.
func tinyModel(t *testing.T, dir string, seed int) string {
	t.Helper()
	out := filepath.Join(dir, "tiny.gguf")
	cmd := exec.Command(python, filepath.Join(repoRoot(), "testdata", "llamacpp", "tiny_llama.py"), out, "--seed", fmt.Sprint(seed))
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "writing the tiny model: %s", b)
	return out
}

var client = &http.Client{Timeout: 60 * time.Second}

// get returns a GET's status and body; status 0 when nothing answered.
func get(url string) (int, []byte) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// post sends a JSON body and decodes the JSON answer into out.
func post(t *testing.T, url string, body, out any) int {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	resp, err := client.Post(url, "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode == http.StatusOK && out != nil {
		require.NoError(t, json.Unmarshal(raw, out), "%s", raw)
	}
	return resp.StatusCode
}

// serverArgv is llama.cpp's server on model at port, answering to alias.
func serverArgv(model, alias, port string) []string {
	return []string{python, "-m", "llama_cpp.server", "--model", model, "--model_alias", alias,
		"--host", "127.0.0.1", "--port", port, "--n_ctx", "256", "--n_threads", "1", "--verbose", "false"}
}

type modelList struct {
	Data []struct {
		ID string `json:"id"`
	} `json:"data"`
}

func (l modelList) ids() []string {
	var ids []string
	for _, m := range l.Data {
		ids = append(ids, m.ID)
	}
	return ids
}

type chatAnswer struct {
	Choices []struct {
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// The pieces on their own: the tiny model loads in llama.cpp's server,
// which has no /health, lists it under its alias, tokenizes text into the vocabulary's word
// pieces, answers a chat completion through the model's chat template, and
// ends with its process group at a SIGTERM.
func TestLlamaServerAnswers(t *testing.T) {
	needLlama(t)
	dir := t.TempDir()
	model := tinyModel(t, dir, 1)
	port := fmt.Sprint(e2etest.FreePort(t))
	base := "http://127.0.0.1:" + port
	cmd := exec.Command(serverArgv(model, "tiny-llama", port)[0], serverArgv(model, "tiny-llama", port)[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	require.NoError(t, err)
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	})
	logText := func() string {
		b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		return string(b)
	}

	var models modelList
	e2etest.WaitFor(t, "the server to list its model", 2*time.Minute, func() bool {
		select {
		case err := <-exited:
			t.Fatalf("the server ended while it started (%v):\n%s", err, logText())
		default:
		}
		code, body := get(base + "/v1/models")
		return code == http.StatusOK && json.Unmarshal(body, &models) == nil
	})
	assert.Equal(t, []string{"tiny-llama"}, models.ids())
	// It has no /health (docs/serve.md: a serve stage of it names
	// another health path).
	code, _ := get(base + "/health")
	assert.Equal(t, http.StatusNotFound, code, "GET /health")

	// Real tokenization: the vocabulary's word pieces, with the BOS token.
	var tok struct {
		Tokens []int `json:"tokens"`
	}
	text := "What is 2 plus 3?"
	require.Equal(t, http.StatusOK, post(t, base+"/extras/tokenize", map[string]any{"input": text, "model": "tiny-llama"}, &tok))
	assert.Greater(t, len(tok.Tokens), 3, "%v", tok.Tokens)
	assert.Less(t, len(tok.Tokens), len(text), "word pieces, not one token a byte: %v", tok.Tokens)
	var detok struct {
		Text string `json:"text"`
	}
	require.Equal(t, http.StatusOK, post(t, base+"/extras/detokenize", map[string]any{"tokens": tok.Tokens, "model": "tiny-llama"}, &detok))
	assert.Equal(t, text, strings.TrimSpace(detok.Text))

	// A chat completion through the chat template, a few tokens long.
	var ans chatAnswer
	require.Equal(t, http.StatusOK, post(t, base+"/v1/chat/completions", map[string]any{
		"model": "tiny-llama", "max_tokens": 8, "temperature": 0,
		"messages": []map[string]string{{"role": "user", "content": text}},
	}, &ans), logText())
	require.Len(t, ans.Choices, 1)
	assert.Equal(t, "assistant", ans.Choices[0].Message.Role)
	assert.Greater(t, ans.Usage.PromptTokens, len(tok.Tokens), "the template's role markers around the question")
	assert.Positive(t, ans.Usage.CompletionTokens)

	require.NoError(t, syscall.Kill(-pid, syscall.SIGTERM))
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatalf("the server did not end within a minute of SIGTERM:\n%s", logText())
	}
	assert.True(t, e2etest.ProcGone(pid))
}

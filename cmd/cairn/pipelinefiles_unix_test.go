//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An entry of a pipeline folder named *.hcl that cannot be read as a
// pipeline file is refused, named, with what to do: a named pipe (whose
// read would wait forever) at once, a link to nothing. A folder of no
// .hcl files says how to make one.
func TestPipelineFolderEntriesThatAreNotFiles(t *testing.T) {
	stage := "stage \"command\" \"a\" {\n  run = [\"true\"]\n}\n"
	root := cliWorkspace(t, map[string]string{"p/main.hcl": stage, "p2/main.hcl": stage, "p2/other.hcl": stage, "b/main.hcl": stage})
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "p/x.hcl"), 0o644))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "p2/x.hcl"), 0o644))
	require.NoError(t, os.Symlink("nowhere.hcl", filepath.Join(root, "b/broken.hcl")))
	require.NoError(t, os.Mkdir(filepath.Join(root, "e"), 0o755))

	within := func(args ...string) cliResult {
		t.Helper()
		done := make(chan cliResult, 1)
		go func() { done <- runCLI(t, append([]string{"--chdir", root}, args...)...) }()
		select {
		case r := <-done:
			return r
		case <-time.After(20 * time.Second):
			// Unblock the reads, so that the test ends.
			for _, fifo := range []string{"p/x.hcl", "p2/x.hcl"} {
				if f, err := os.OpenFile(filepath.Join(root, fifo), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			}
			t.Fatalf("cairn %s did not return: it waits on the named pipe", strings.Join(args, " "))
			return cliResult{}
		}
	}
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, dir := range []string{"p", "p2"} {
		r := within("validate", dir)
		assert.Equal(t, exitBadInput, r.code, r.stderr)
		assert.Contains(t, flat(r.stderr), dir+"/x.hcl is a named pipe (FIFO): a pipeline file is a regular file, and every name ending in .hcl in a pipeline directory is read as one. Remove it, or rename it so that its name does not end in .hcl.")
	}
	r := within("validate", "p/x.hcl")
	assert.Equal(t, exitBadInput, r.code, r.stderr)
	assert.Contains(t, flat(r.stderr), "p/x.hcl is a named pipe (FIFO): a pipeline file is a regular file. Pass a .hcl file, or a directory holding some.")

	r = runCLI(t, "--chdir", root, "validate", "b")
	assert.Equal(t, exitBadInput, r.code, r.stderr)
	assert.Contains(t, flat(r.stderr), "b/broken.hcl is a symbolic link to nowhere.hcl, which does not exist. Point the link at a pipeline file, or remove it.")

	r = runCLI(t, "--chdir", root, "validate", "e")
	assert.Equal(t, exitBadInput, r.code, r.stderr)
	assert.Contains(t, flat(r.stderr), "/e holds no .hcl files. Write the pipeline in a .hcl file there, or pass a pipeline file (.hcl) itself.")
}

// An input that is neither a file nor a folder (a named pipe), or one
// inside an input folder, is refused at the attribute that names it, in
// words: not at ":0:0", nor with a mode string.
func TestSpecialFileInputIsRefusedWhereNamed(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"p.hcl": "stage \"command\" \"a\" {\n  run    = [\"true\"]\n  inputs = [\"ff\"]\n}\n",
		"q.hcl": "stage \"command\" \"a\" {\n  run    = [\"true\"]\n  inputs = [\"d\"]\n}\n",
		"d/ok":  "x",
		"e.hcl": "stage \"evaluate\" \"e\" {\n  worker    = [\"true\"]\n  items     = \"ff\"\n  model     = \"m\"\n  endpoints = [\"http://127.0.0.1:9/v1\"]\n  scores    = \"s.jsonl\"\n}\n",
	})
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "ff"), 0o644))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "d", "pipe"), 0o644))
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for file, want := range map[string]string{
		"p.hcl": "p.hcl:3:12, in stage \"command\" \"a\": 3: inputs = [\"ff\"] stage.a: input ff: " + filepath.Join(root, "ff") + " is a named pipe: cairn digests only files and folders",
		"q.hcl": "q.hcl:3:12, in stage \"command\" \"a\": 3: inputs = [\"d\"] stage.a: input d: " + filepath.Join(root, "d", "pipe") + " is a named pipe, in an input folder",
		"e.hcl": "e.hcl:3:15, in stage \"evaluate\" \"e\": 3: items = \"ff\" stage.e: input ff: " + filepath.Join(root, "ff") + " is a named pipe",
	} {
		r := runCLI(t, "--chdir", root, "plan", file, "--no-color")
		assert.Equal(t, exitBadInput, r.code, file)
		assert.Contains(t, flat(r.stderr), want, file)
		assert.NotContains(t, r.stderr, ":0:0", file)
		assert.NotContains(t, r.stderr, "fsdigest", file)
	}
}

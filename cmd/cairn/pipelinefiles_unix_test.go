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

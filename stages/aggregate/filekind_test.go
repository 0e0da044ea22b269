package aggregate_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/stages/aggregate"
	"github.com/cairn-run/cairn/stages/aggregate/jobtest"
)

// A job's result.json, test.json or job.json that is not a regular file
// is refused, naming it and what it is, without waiting on it: a named
// pipe with no writer would hold the aggregation forever, a device gives
// whatever it gives, and a folder holds no job's record.
func TestJobFilesThatAreNotRegularFilesAreRefused(t *testing.T) {
	fifo := func(path string) error { return syscall.Mkfifo(path, 0o644) }
	folder := func(path string) error { return os.Mkdir(path, 0o755) }
	device := func(path string) error { return os.Symlink("/dev/null", path) }
	for _, c := range []struct {
		file, kind string
		make       func(path string) error
	}{
		{"result.json", "a named pipe", fifo},
		{"test.json", "a named pipe", fifo},
		{"job.json", "a named pipe", fifo},
		{"test.json", "a folder", folder},
		{"job.json", "a folder", folder},
		{"test.json", "a device", device},
	} {
		root := t.TempDir()
		require.NoError(t, jobtest.Grid(root, 9, 5, map[string]float64{"gepa": 0}, []string{"hotpotqa/centralized/qwen"}))
		path := filepath.Join(root, seed1, c.file)
		require.NoError(t, os.RemoveAll(path))
		require.NoError(t, c.make(path))
		done := make(chan error, 1)
		go func() {
			_, err := aggregate.Run(context.Background(), aggregate.Options{Dir: root, Roots: []string{"."}, Replicates: 100})
			done <- err
		}()
		select {
		case err := <-done:
			require.ErrorIs(t, err, aggregate.ErrBadInput, "%s %s", c.file, c.kind)
			assert.Equal(t, seed1+"/"+c.file+": is not a regular file ("+c.kind+"): cairn reads a job's "+c.file+" only from a regular file, as the job wrote it; put the job's own file there, or remove this one", err.Error())
		case <-time.After(10 * time.Second):
			// Let the read that waits on the pipe go: a writer comes and
			// leaves.
			if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			<-done
			t.Errorf("%s %s: the aggregation waited on it", c.file, c.kind)
		}
	}
}

package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl/failclass"
)

// releasePipeline is a chain a -> b -> c of processes; b and c write a
// file as they start.
const releasePipeline = `
pipeline "release" {}

stage "command" "a" {
  run     = ["sh", "-c", "echo a > out/a"]
  outputs = ["out/a"]
}

stage "command" "b" {
  run     = ["sh", "-c", "touch out/b.started; echo b > out/b"]
  outputs = ["out/b"]
  after   = [stage.a]
}

stage "command" "c" {
  run     = ["sh", "-c", "touch out/c.started; echo c > out/c"]
  outputs = ["out/c"]
  after   = [stage.b]
}
`

// A node's downstream starts once the node's outputs are stored, before
// its record is written to the cache: here a's record is written only
// after b has started, and c's only after c has started. The apply ends
// with every record written, and the next apply runs nothing.
// With one CPU slot too: the released node's slot is free once its
// outputs are stored.
func TestDownstreamStartsBeforeUpstreamRecordIsWritten(t *testing.T) {
	for _, jobs := range []int{1, 2} {
		t.Run(fmt.Sprintf("parallelism %d", jobs), func(t *testing.T) {
			w := newWorkspace(t, releasePipeline)
			require.NoError(t, os.Mkdir(filepath.Join(w.Root, "out"), 0o755))
			testBeforePersist = func(addr string) error {
				switch addr {
				case "stage.a":
					return waitForFile(filepath.Join(w.Root, "out", "b.started"))
				case "stage.b":
					return waitForFile(filepath.Join(w.Root, "out", "c.started"))
				}
				return nil
			}
			defer func() { testBeforePersist = nil }()
			r := w.apply(ApplyOptions{Parallelism: jobs})
			require.Equal(t, 3, r.res.Ran, r.out)
			assert.Zero(t, r.res.Failed, r.out)
			// The hook above held a's record until b's process ran: had
			// b waited for a's record, the hook would have failed a.
			// (The order of the lines "b started" and "a ok" is not
			// checked: b's process can run before its line is shown.)
			assert.Contains(t, r.out, "stage.a  ok", r.out)

			testBeforePersist = nil
			r = w.apply(ApplyOptions{Parallelism: jobs})
			assert.Equal(t, 3, r.res.Cached, r.out)
			assert.Zero(t, r.res.Ran, r.out)
		})
	}
}

// When a node's record cannot be written after its downstream started,
// the node fails, and so does every downstream that started meanwhile:
// none of them writes a record, so the next apply runs them all again.
func TestUpstreamRecordFailureFailsReleasedDownstreams(t *testing.T) {
	w := newWorkspace(t, releasePipeline)
	require.NoError(t, os.Mkdir(filepath.Join(w.Root, "out"), 0o755))
	testBeforePersist = func(addr string) error {
		if addr == "stage.a" {
			if err := waitForFile(filepath.Join(w.Root, "out", "c.started")); err != nil {
				return err
			}
			return errors.New("no space left on device (test)")
		}
		return nil
	}
	defer func() { testBeforePersist = nil }()
	r := w.apply(ApplyOptions{})
	assert.Zero(t, r.res.Ran, r.out)
	require.Equal(t, 3, r.res.Failed, r.out)
	classes := map[string]string{}
	for _, f := range r.res.Failures {
		classes[f.Address] = f.Class
		if f.Address != "stage.a" {
			assert.Contains(t, f.Message, "could not be committed", f.Address)
		}
	}
	assert.Equal(t, map[string]string{"stage.a": failclass.Infra, "stage.b": failclass.Infra, "stage.c": failclass.Infra}, classes, r.out)
	assert.NotContains(t, r.out, "stage.a  ok", r.out)

	testBeforePersist = nil
	r = w.apply(ApplyOptions{})
	assert.Equal(t, 3, r.res.Ran, r.out)
	assert.Zero(t, r.res.Cached, r.out)
}

// waitForFile waits until path exists: for at most a minute, a bound only
// so that a test whose node never writes the file ends; the wait is for
// the file, however loaded the machine.
func waitForFile(path string) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
	}
	return errors.New(path + " never appeared")
}

//go:build !linux

package executor

import (
	"context"
	"io"
	"os"
	"time"
)

// Without Linux's pidfds there is no poll loop: goroutines wait for each
// process and copy its pipes (waitUntilExit, nodeLog.startCopy).

// poller is the poll loop's state of a job; newPoller never makes one
// here, and its methods are never called.
type poller struct{}

// pollOff is the tests' switch of the poll loop, which is always off here.
var pollOff = false

func newPoller(int, io.Reader) *poller { return nil }

// logPipe makes a log's pipe, both ends files.
func logPipe() (fd int, r, w *os.File, err error) {
	r, w, err = os.Pipe()
	return -1, r, w, err
}

func (*poller) cancel(bool)                            {}
func (*poller) watch(context.Context, <-chan struct{}) {}
func (*poller) drain(time.Time, *nodeLog, *nodeLog)    {}
func (j *localJob) pollUntilExit(context.Context, *nodeLog, *nodeLog) (error, bool) {
	panic("executor: no poll loop on this system")
}

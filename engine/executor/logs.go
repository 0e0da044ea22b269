package executor

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// nodeLog is one output stream of a node's process. The process writes
// into a pipe; cairn copies what comes out into the log file, which it
// creates with the first byte. A node that writes nothing to a stream
// leaves no file: a run of many quiet nodes makes no log files at all,
// and a file never made is one inode fewer for the filesystem to find
// (which, right after many deletions, costs more than the write).
//
// The file is written as the bytes arrive, so it can be followed while the
// node runs. The copy ends when every process holding the pipe has ended;
// see finish for one that escaped the node's process group.
//
// Who reads the pipe is decided once the process has started. On Linux the
// node's supervising goroutine does, in the same poll loop that waits for
// the process (see poll_linux.go): the read end stays a bare descriptor,
// fd, which Go's poller never sees. Otherwise startCopy hands the read end
// to a goroutine of its own, which copies until the end of the stream.
type nodeLog struct {
	path string
	fd   int           // the pipe's read end, for the poll loop; -1 once closed or made r
	r    *os.File      // the read end as a file, for copy
	w    *os.File      // its write end, for the child; closed here once started
	f    *os.File      // the log file, once made
	err  error         // the first error creating or writing the file
	done chan struct{} // closed when copy has ended; nil when no copy runs
	// ended: the poll loop has read the stream to its end.
	ended bool
	// appends: the file is written at its end, not truncated first.
	appends bool
}

// openNodeLog makes the pipe for a stream logged to path; nothing reads
// it yet (see startCopy and the poll loop). With now set, the file is made
// at once, empty or not. With appends, what the file holds is kept and the
// stream is added at its end.
func openNodeLog(path string, now, appends bool) (*nodeLog, error) {
	fd, r, w, err := logPipe()
	if err != nil {
		return nil, fmt.Errorf("exec: log pipe: %w", err)
	}
	l := &nodeLog{path: path, fd: fd, r: r, w: w, appends: appends}
	if now {
		l.write(nil)
		if l.err != nil {
			l.closeRead()
			w.Close()
			return nil, fmt.Errorf("exec: log: %w", l.err)
		}
	}
	return l, nil
}

// startCopy starts the goroutine that copies the pipe into the file, for a
// process the poll loop does not supervise. A bare read end is made a file
// of Go's poller first, so that finish can cut a copy off by closing it.
func (l *nodeLog) startCopy() {
	if l.r == nil {
		_ = syscall.SetNonblock(l.fd, true)
		l.r = os.NewFile(uintptr(l.fd), "|0")
		l.fd = -1
	}
	l.done = make(chan struct{})
	go l.copy()
}

// closeRead closes the read end, whichever form it has.
func (l *nodeLog) closeRead() {
	if l.r != nil {
		_ = l.r.Close()
	} else if l.fd >= 0 {
		_ = syscall.Close(l.fd)
		l.fd = -1
	}
}

// copyBufs are the buffers of the log copies, reused across nodes: a node
// that writes nothing costs no fresh 64 KiB for each of its streams.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

func (l *nodeLog) copy() {
	defer close(l.done)
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for {
		n, err := l.r.Read(buf)
		if n > 0 {
			l.write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// write appends p to the file, making it first. On a write error (a full
// disk) the stream is still drained, so that the node never blocks on it.
func (l *nodeLog) write(p []byte) {
	if l.f == nil && l.err == nil {
		mode := os.O_TRUNC
		if l.appends {
			mode = os.O_APPEND
		}
		l.f, l.err = os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|mode, 0o666)
	}
	if l.f != nil && l.err == nil {
		_, l.err = l.f.Write(p)
	}
}

// started closes cairn's copy of the write end: from now on only the node's
// processes hold it, and the copy ends when they all have.
func (l *nodeLog) started() {
	if l.w != nil {
		_ = l.w.Close()
		l.w = nil
	}
}

// finish waits for the copy to end, until the deadline: the node's process
// group has been killed by now, so the copy ends at once unless a process
// that left the group still holds the pipe; that one is cut off. (The poll
// loop has done this waiting itself by the time it calls finish, and a
// process that never started has written nothing.) Then line, if set, is
// appended (cairn's own word on the process). It returns the first error
// writing the file.
func (l *nodeLog) finish(deadline time.Time, line string) error {
	l.started()
	if l.done != nil {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case <-l.done:
		case <-t.C:
		}
	}
	l.closeRead() // ends a copy still reading
	if l.done != nil {
		<-l.done
	}
	if line != "" {
		l.write([]byte(line))
	}
	if l.f != nil {
		if err := l.f.Close(); err != nil && l.err == nil {
			l.err = err
		}
	}
	return l.err
}

// appendLog writes cairn's own line into a log that no process writes to.
func appendLog(path, line string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return fmt.Errorf("exec: log: %w", err)
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("exec: log: %w", err)
	}
	return nil
}

// ExistingLogs are those of a node's log paths that name a file: the
// streams it wrote something to.
func ExistingLogs(paths []string) []string {
	var out []string
	for _, p := range paths {
		if LogWritten(p) {
			out = append(out, p)
		}
	}
	return out
}

// LogWritten reports whether a log path names a file with something in
// it (a node's own logs are made with their first byte; an evaluation's
// workers.log is made before its workers start, and stays empty when the
// endpoint check fails before any did).
func LogWritten(path string) bool {
	if path == "" {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Size() > 0
}

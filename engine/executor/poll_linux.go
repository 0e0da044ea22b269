package executor

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The poll loop: on Linux, the goroutine that supervises a node's process
// waits for everything in one poll(2) over four descriptors: a pidfd of
// the process (readable once it has exited), the read ends of its stdout
// and stderr pipes, and an eventfd that Cancel, the end of Submit's
// context and the hard channel write to. The timeout and the kill grace
// are poll's timeout. Where goroutines do this (one in cmd.Wait, one
// copying each pipe, each woken through Go's poller; see waitUntilExit),
// a quick node takes about 0.1 ms longer to be seen done
// (BenchmarkLocalNode: 1.14 ms a node against 1.05 ms), and in a chain of
// nodes every node waits for the one before it.
//
// What the loop does is what waitUntilExit and nodeLog.finish do: the same
// signals at the same moments, the same log files written as the bytes
// arrive, the same cut a second after the process has ended.

// poller is the poll loop's state of one job, shared with Cancel and with
// the goroutine that watches ctx and the hard channel.
type poller struct {
	pidfd int // the process's pidfd, readable once it has exited

	mu   sync.Mutex
	wake int           // the eventfd; -1 once the loop has ended
	soft int           // Cancel(false) calls the loop has not yet seen
	hard int           // Cancel(true) calls the loop has not yet seen
	stop chan struct{} // closed when the loop ends, for watch's goroutine
}

// noPidfd is set once pidfd_open has failed with ENOSYS (a kernel before
// 5.3): every job is then supervised by goroutines, without asking again.
var noPidfd atomic.Bool

// pollOff turns the poll loop off, so that the tests can run the goroutine
// path on a kernel that has pidfds.
var pollOff = false

// logPipe makes a log's pipe. Its read end stays a bare descriptor, made
// close-on-exec at once so that no other node's process inherits it (which
// would hold the stream open); the write end is a file only for os/exec to
// hand to the child: blocking, so never registered with Go's poller.
func logPipe() (fd int, r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return -1, nil, nil, err
	}
	return p[0], nil, os.NewFile(uintptr(p[1]), "|1"), nil
}

// newPoller opens what the poll loop of the process pid needs, or returns
// nil where it cannot be had: the goroutines then supervise the process.
// It is called right after the process started, before anything waits
// for it, so the pid names this process (it is not reaped yet).
func newPoller(pid int, cmdStdin io.Reader) *poller {
	if pollOff || noPidfd.Load() {
		return nil
	}
	// A stdin os/exec copies from a reader is waited for by cmd.Wait,
	// for up to the command's WaitDelay after the process has ended.
	// During that wait the goroutines go on copying the pipes and taking
	// Cancel's requests; so such a job is theirs.
	if _, isFile := cmdStdin.(*os.File); cmdStdin != nil && !isFile {
		return nil
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if err == unix.ENOSYS {
			noPidfd.Store(true)
		}
		return nil
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = unix.Close(pidfd)
		return nil
	}
	return &poller{pidfd: pidfd, wake: wake}
}

// signal wakes the loop up; it does nothing once the loop has ended, when
// the eventfd is closed (its number may already name another file).
func (p *poller) signal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.signalLocked()
}

func (p *poller) signalLocked() {
	if p.wake < 0 {
		return
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	for {
		// The counter is far from its limit: the write does not fail
		// but when interrupted.
		if _, err := unix.Write(p.wake, one[:]); err != unix.EINTR {
			return
		}
	}
}

// cancel is Cancel's request: counted for the loop, which is woken up.
func (p *poller) cancel(hard bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wake < 0 {
		return
	}
	if hard {
		p.hard++
	} else {
		p.soft++
	}
	p.signalLocked()
}

// watch starts the goroutine that wakes the loop up when ctx ends and when
// hard is closed: both are channels, which poll cannot wait on. It ends
// once both have happened, or when the loop ends. A job that has neither
// needs none, nor one whose loop has already ended.
func (p *poller) watch(ctx context.Context, hard <-chan struct{}) {
	ctxDone := ctx.Done()
	if ctxDone == nil && hard == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wake < 0 {
		return
	}
	stop := make(chan struct{})
	p.stop = stop
	go func() {
		for ctxDone != nil || hard != nil {
			select {
			case <-ctxDone:
				ctxDone = nil
			case <-hard:
				hard = nil
			case <-stop:
				return
			}
			p.signal()
		}
	}()
}

// end closes the pidfd and the eventfd and stops the watching goroutine:
// the process has exited, and what comes later (Cancel, ctx's end, the
// hard channel) no longer concerns it.
func (p *poller) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = unix.Close(p.wake)
	p.wake = -1
	_ = unix.Close(p.pidfd)
	if p.stop != nil {
		close(p.stop)
	}
}

// The poll set's entries.
const (
	pollPid = iota
	pollStdout
	pollStderr
	pollWake
)

// pollUntilExit is waitUntilExit done by the poll loop: it waits for the
// process while copying its pipes into the logs, sends the timeout's and
// the cancels' signals, and reaps the process once it has exited. It
// returns cmd.Wait's error (or poll's) and whether cairn stopped the
// process.
func (j *localJob) pollUntilExit(ctx context.Context, stdout, stderr *nodeLog) (waitErr error, interrupted bool) {
	p, spec, cmd, res := j.poll, j.spec, j.cmd, j.res
	defer p.end()
	pid := cmd.Process.Pid
	now := time.Now()
	// The deadlines, zero when not pending: the timeout's, and SIGKILL's
	// once a SIGTERM has been sent.
	var timeoutAt, killAt time.Time
	if spec.Timeout > 0 {
		timeoutAt = now.Add(spec.Timeout)
	}
	grace := spec.Grace()
	ctxSeen, hard := false, spec.Hard
	soft := func() {
		interrupted = true
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		if killAt.IsZero() {
			killAt = now.Add(grace)
		}
	}
	kill := func() {
		interrupted = true
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	var buf logBuf
	defer buf.put()
	fds := [...]unix.PollFd{
		pollPid:    {Fd: int32(p.pidfd), Events: unix.POLLIN},
		pollStdout: {Fd: int32(stdout.fd), Events: unix.POLLIN},
		pollStderr: {Fd: int32(stderr.fd), Events: unix.POLLIN},
		pollWake:   {Fd: int32(p.wake), Events: unix.POLLIN},
	}
	for {
		_, err := unix.Poll(fds[:], pollTimeout(now, timeoutAt, killAt))
		now = time.Now()
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			// Not seen in practice (poll fails on bad arguments or
			// without memory for its table). The process must not run
			// on unwatched: it is killed and reaped, and the node fails
			// with the error.
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = cmd.Wait()
			return fmt.Errorf("poll: %w", err), interrupted
		}
		// The pipes first: what a process wrote just before it ended
		// is in its logs either way (drain reads the rest), but read
		// here it is read in the order it came.
		for _, i := range [...]int{pollStdout, pollStderr} {
			if fds[i].Revents != 0 {
				l := stdout
				if i == pollStderr {
					l = stderr
				}
				if !l.pollRead(&buf) {
					fds[i].Fd = -1 // at its end: poll skips it
				}
			}
		}
		if fds[pollPid].Revents != 0 {
			// The process has exited: Wait reaps it at once and
			// fills in cmd.ProcessState, its rusage included.
			return cmd.Wait(), interrupted
		}
		if fds[pollWake].Revents != 0 {
			var n [8]byte
			_, _ = unix.Read(p.wake, n[:]) // resets the count; woken is what matters
			if !ctxSeen && ctx.Err() != nil {
				ctxSeen = true
				soft()
			}
			p.mu.Lock()
			nSoft, nHard := p.soft, p.hard
			p.soft, p.hard = 0, 0
			p.mu.Unlock()
			for ; nSoft > 0; nSoft-- {
				soft()
			}
			for ; nHard > 0; nHard-- {
				kill()
			}
			if hard != nil {
				select {
				case <-hard:
					hard = nil
					kill()
				default:
				}
			}
		}
		if !timeoutAt.IsZero() && !now.Before(timeoutAt) {
			timeoutAt = time.Time{}
			res.TimedOut = true
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			killAt = now.Add(grace)
		}
		if !killAt.IsZero() && !now.Before(killAt) {
			killAt = time.Time{}
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

// drain reads what is left in the pipes once the process has exited and
// its group has been killed, until both are at their end or until cut: a
// process that left the group and still holds a pipe is cut off then, as
// nodeLog.finish cuts off a copy.
func (p *poller) drain(cut time.Time, stdout, stderr *nodeLog) {
	var buf logBuf
	defer buf.put()
	logs := [...]*nodeLog{stdout, stderr}
	var fds [len(logs)]unix.PollFd
	open := 0
	for i, l := range logs {
		fds[i] = unix.PollFd{Fd: -1, Events: unix.POLLIN}
		if !l.ended {
			fds[i].Fd = int32(l.fd)
			open++
		}
	}
	for open > 0 {
		now := time.Now()
		if !now.Before(cut) {
			return // finish closes the pipes, which cuts off their writers
		}
		_, err := unix.Poll(fds[:], pollTimeout(now, cut))
		if err != nil && err != unix.EINTR {
			return // as at the cut
		}
		for i, l := range logs {
			if fds[i].Fd >= 0 && fds[i].Revents != 0 && !l.pollRead(&buf) {
				fds[i].Fd = -1
				open--
			}
		}
	}
}

// pollTimeout is poll's timeout in milliseconds until the earliest of the
// deadlines that are set (-1, none: wait for a descriptor), rounded up so
// that the loop does not wake up just before one.
func pollTimeout(now time.Time, deadlines ...time.Time) int {
	ms := -1
	for _, d := range deadlines {
		if d.IsZero() {
			continue
		}
		left := d.Sub(now)
		if left <= 0 {
			return 0
		}
		m := (left + time.Millisecond - 1) / time.Millisecond
		if m > 1<<30 { // poll's timeout is a C int; the loop waits again
			m = 1 << 30
		}
		if ms < 0 || int(m) < ms {
			ms = int(m)
		}
	}
	return ms
}

// logBuf is the poll loop's read buffer, taken from copyBufs with the
// first byte a node writes: a quiet node takes none.
type logBuf struct{ p *[]byte }

func (b *logBuf) get() []byte {
	if b.p == nil {
		b.p = copyBufs.Get().(*[]byte)
	}
	return *b.p
}

func (b *logBuf) put() {
	if b.p != nil {
		copyBufs.Put(b.p)
		b.p = nil
	}
}

// pollRead reads what poll said the pipe holds into the log file, in one
// read (the read end is blocking: a second read could wait). It returns
// false, and marks the log ended, at the stream's end, when every process
// holding the pipe has closed it, or on an error reading it, as copy ends
// there.
func (l *nodeLog) pollRead(buf *logBuf) bool {
	for {
		n, err := unix.Read(l.fd, buf.get())
		if n > 0 {
			l.write((*buf.p)[:n])
			return true
		}
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return true
		}
		l.ended = true
		return false
	}
}

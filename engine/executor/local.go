package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/sysproc"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/process"
)

const localName = "local"

// Local runs processes on this machine, each in its own process
// group, with PR_SET_PDEATHSIG so that a child dies with cairn; anything it
// started that survives is reaped by the next apply from the journal
// (Recover).
type Local struct{}

// Name implements Executor.
func (Local) Name() string { return localName }

// CanRunMore implements Executor: the machine's limits are the
// scheduler's CPU slots and GPU pool.
func (Local) CanRunMore() bool { return true }

// LocalRef is the reference of a local process: its pid, the process
// group it leads and its start time (which tell it from a later process
// given the same number). Journals written before job references name a
// process by these numbers alone.
func LocalRef(pid int, startTicks uint64) process.JobRef {
	return process.JobRef{Executor: localName, ID: strconv.Itoa(pid), Details: map[string]string{
		"pgid":       strconv.Itoa(pid),
		"proc_start": strconv.FormatUint(startTicks, 10),
	}}
}

// LocalProcess reads a local reference's pid, process group and start
// time; ok is false for another executor's reference.
func LocalProcess(ref process.JobRef) (pid, pgid int, startTicks uint64, ok bool) {
	if ref.Executor != localName {
		return 0, 0, 0, false
	}
	pid, err1 := strconv.Atoi(ref.ID)
	pgid, err2 := strconv.Atoi(ref.Details["pgid"])
	startTicks, err3 := strconv.ParseUint(ref.Details["proc_start"], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, 0, false
	}
	return pid, pgid, startTicks, true
}

// Recover implements Executor: it kills what is left of each job's
// process group (children die with cairn through PR_SET_PDEATHSIG;
// grandchildren may not) and waits up to 2 s a group for it to go.
func (Local) Recover(_ context.Context, refs []process.JobRef) []string {
	var killed []string
	for _, ref := range refs {
		if _, pgid, start, ok := LocalProcess(ref); ok && pgid > 0 {
			for _, pid := range ReapGroup(pgid, start, 2*time.Second) {
				killed = append(killed, strconv.Itoa(pid))
			}
		}
	}
	return killed
}

// Attach implements Executor. A process an earlier apply started is not
// this one's child: its exit status cannot be read, so its Wait reports it
// interrupted once its group is gone.
func (Local) Attach(_ context.Context, ref process.JobRef) (Job, error) {
	_, pgid, start, ok := LocalProcess(ref)
	if !ok || pgid <= 0 || len(groupMembers(pgid, start)) == 0 {
		return nil, ErrGone
	}
	return &attachedJob{ref: ref, pgid: pgid, start: start}, nil
}

type attachedJob struct {
	ref   process.JobRef
	pgid  int
	start uint64
}

func (j *attachedJob) Ref() process.JobRef { return j.ref }

func (j *attachedJob) Wait(ctx context.Context) (*process.Result, error) {
	for len(groupMembers(j.pgid, j.start)) > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return &process.Result{ExitCode: -1, Class: failclass.Interrupted, Message: "started by an apply that stopped; its exit status cannot be read"}, nil
}

func (j *attachedJob) Cancel(hard bool) error {
	wait := 2 * time.Second
	if hard {
		wait = 0
	}
	ReapGroup(j.pgid, j.start, wait)
	return nil
}

// StartWorker implements process.Launcher: a worker is started as items
// starts one on this machine.
func (Local) StartWorker(ctx context.Context, w process.WorkerSpec) (process.Worker, error) {
	return process.LocalLauncher.StartWorker(ctx, w)
}

// FileTail returns the last max bytes of a file (nil if it cannot be read).
func FileTail(path string, max int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > max {
		if _, err := f.Seek(st.Size()-max, io.SeekStart); err != nil {
			return nil
		}
	}
	b, _ := io.ReadAll(io.LimitReader(f, max))
	return b
}

// localJob is a process Local started.
type localJob struct {
	ref     process.JobRef
	spec    *Spec
	cmd     *exec.Cmd
	res     *process.Result
	err     error
	poll    *poller   // the poll loop's state, where it supervises the job
	cancels chan bool // Cancel's requests, hard or not, where it does not
	done    chan struct{}
	// parentKiB is cairn's own maximum resident set once the process
	// started: the process's rusage maximum is its own only above it
	// (gpu.Peaks.WithRusage).
	parentKiB int64
}

func (j *localJob) Ref() process.JobRef { return j.ref }

func (j *localJob) Wait(ctx context.Context) (*process.Result, error) {
	select {
	case <-j.done:
		return j.res, j.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (j *localJob) Cancel(hard bool) error {
	if j.poll != nil {
		j.poll.cancel(hard) // never blocks; nothing once the process has exited
		return nil
	}
	select {
	case j.cancels <- hard:
	case <-j.done:
	}
	return nil
}

// Submit implements Executor. A process that cannot start (not found on
// the PATH, refused by the kernel) is a job that has ended, with the setup
// class.
func (Local) Submit(ctx context.Context, spec *Spec) (Job, error) {
	res := &process.Result{ExitCode: -1, GPUs: spec.GPUs}
	ended := func() (Job, error) { return Finished(process.JobRef{Executor: localName}, res, nil), nil }
	argv := spec.Argv
	if spec.Shell {
		argv = []string{"/bin/sh", "-c", strings.Join(argv, " ")}
	}
	if len(argv) == 0 {
		res.Class, res.Message = failclass.Setup, "nothing to run: the command is empty"
		return ended()
	}
	path := argv[0]
	if !strings.Contains(path, "/") {
		lp, err := lookPath(path, spec.Env)
		if err != nil {
			res.Class = failclass.Setup
			res.Message = process.RedactSecrets(fmt.Sprintf("cannot start %q: not found on PATH", path), spec.Secrets)
			if err := appendLog(spec.Stderr, "cairn: "+res.Message+"\n"); err != nil {
				return nil, err
			}
			return ended()
		}
		path = lp
	} else if !strings.HasPrefix(path, "/") {
		path = spec.Dir + "/" + path
	}
	stdout, err := openNodeLog(spec.Stdout, spec.NamedLogs, spec.AppendLogs)
	if err != nil {
		return nil, err
	}
	stderr, err := openNodeLog(spec.Stderr, spec.NamedLogs, spec.AppendLogs)
	if err != nil {
		_ = stdout.finish(time.Time{}, "")
		return nil, err
	}
	execPath, execArgs, attr := path, argv, sysproc.Group()
	if spec.Local.Guarded {
		if p, a, at, ok := sysproc.Guarded(path, argv, len(spec.Local.Inherit), spec.Grace()); ok {
			execPath, execArgs, attr = p, a, at
		}
	}
	cmd := &exec.Cmd{
		Path:  execPath,
		Args:  execArgs,
		Env:   spec.Env,
		Dir:   spec.Dir,
		Stdin: stdinOf(spec),
		// The pipes' write ends as files: Wait does not wait for the
		// copy, which whatever the node started may keep open after the
		// node's own process has ended (see nodeLog.finish).
		Stdout:      stdout.w,
		Stderr:      stderr.w,
		ExtraFiles:  spec.Local.Inherit,
		SysProcAttr: attr,
		// A stdin that is not a file is copied through a pipe: once the
		// process has ended, do not wait long for the copy.
		WaitDelay: time.Second,
	}
	oomBefore := oomCount.before()
	res.Started = time.Now()
	forkBefore := bootClock()
	err = cmd.Start()
	forkAfter := bootClock()
	if err != nil {
		res.Class = failclass.Setup
		res.Message = process.RedactSecrets(fmt.Sprintf("cannot start %s: %s", argv[0], err), spec.Secrets)
		_ = stdout.finish(time.Time{}, "")
		if err := stderr.finish(time.Time{}, "cairn: "+res.Message+"\n"); err != nil {
			return nil, fmt.Errorf("exec: log: %w", err)
		}
		res.Ended = time.Now()
		return ended()
	}
	parentKiB := gpu.SelfMaxRSSKiB() // the child has executed its program: Start waits for it
	stdout.started()
	stderr.started()
	pid := cmd.Process.Pid
	res.PID = pid
	ticks, ok := forkTicks(forkBefore, forkAfter)
	if !ok {
		ticks = ProcStartTicks(pid)
	}
	j := &localJob{ref: LocalRef(pid, ticks), spec: spec, cmd: cmd, res: res, done: make(chan struct{}), parentKiB: parentKiB}
	// The poll loop supervises the process and reads its pipes where the
	// system lets it (Linux with pidfds); otherwise goroutines wait for
	// the process and copy the pipes.
	if j.poll = newPoller(pid, cmd.Stdin); j.poll == nil {
		j.cancels = make(chan bool)
		stdout.startCopy()
		stderr.startCopy()
	}
	if spec.Started != nil {
		spec.Started(j.ref)
	}
	var stopSample func() gpu.Peaks
	if spec.Local.Sample != nil {
		stopSample = spec.Local.Sample(pid)
	}
	go func() {
		defer close(j.done)
		j.err = j.supervise(ctx, argv, stdout, stderr, oomBefore, stopSample)
		if j.err != nil {
			j.res = nil
		}
	}()
	if j.poll != nil {
		// Started after the supervising goroutine: the goroutine started
		// last is usually run first, so this one is parked before the
		// loop's first poll holds its thread.
		j.poll.watch(ctx, spec.Hard)
	}
	return j, nil
}

// supervise waits for the process, kills its group at its timeout, on
// ctx's end and on Cancel, and fills in how it ended.
func (j *localJob) supervise(ctx context.Context, argv []string, stdout, stderr *nodeLog, oomBefore uint64, stopSample func() gpu.Peaks) error {
	spec, cmd, res := j.spec, j.cmd, j.res
	pid := cmd.Process.Pid
	var waitErr error
	var interrupted bool
	if j.poll != nil {
		waitErr, interrupted = j.pollUntilExit(ctx, stdout, stderr)
	} else {
		waitErr, interrupted = j.waitUntilExit(ctx)
	}
	// Nothing the node started outlives it: its lease ends now.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	res.Ended = time.Now()
	if stopSample != nil {
		p := stopSample().WithRusage(cmd.ProcessState, j.parentKiB)
		res.PeakRSSMiB, res.PeakGPUMiB, res.GPUMemory = p.RSSMiB, p.GPUMiB, p.GPUMemory
	} else if cmd.ProcessState != nil {
		p := gpu.Peaks{}.WithRusage(cmd.ProcessState, j.parentKiB)
		res.PeakRSSMiB = p.RSSMiB
	}
	// The group is gone: the copies end now (a process that left the
	// group is cut off after a second).
	cut := time.Now().Add(time.Second)
	if j.poll != nil {
		j.poll.drain(cut, stdout, stderr)
	}
	// A log cairn cannot write (a full disk) fails the node with class
	// infrastructure, however the process ended: what it said is lost,
	// through no fault of its own.
	logErr := errors.Join(stdout.finish(cut, ""), stderr.finish(cut, ""))
	if stderr.f != nil {
		// A stream is logged from its first byte: no file, no tail.
		res.StderrTail = FileTail(spec.Stderr, 16<<10)
	}
	st := cmd.ProcessState
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return fmt.Errorf("exec: waiting for %s: %w", argv[0], waitErr)
	}
	ws, _ := st.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		res.Signal = ws.Signal().String()
	case st.Exited():
		res.ExitCode = st.ExitCode()
	}
	// Only a process killed by a signal can have been killed for memory.
	cgroupOOM := false
	if res.Signal != "" || res.ExitCode != 0 {
		oomAfter, haveCgroup := oomCount.after()
		cgroupOOM = res.Signal != "" && haveCgroup && oomAfter > oomBefore
	}
	res.Class, res.Message = classify(res, interrupted, cgroupOOM, spec)
	if logErr != nil && res.Class != failclass.Interrupted {
		res.Class = failclass.Infra
		res.Message = fmt.Sprintf("cannot write its log (%s): make room on the run folder's disk, and apply again", logErr)
	}
	res.Message = process.RedactSecrets(res.Message, spec.Secrets)
	return nil
}

// waitUntilExit waits for the process with goroutines: one in cmd.Wait,
// and the copies of its pipes (nodeLog.startCopy). Timeouts are timers;
// ctx, Cancel and the hard channel are selected on. This is how a job is
// supervised where the poll loop cannot be (no pidfds: not Linux, or a
// kernel before 5.3). It returns cmd.Wait's error and whether cairn
// stopped the process.
func (j *localJob) waitUntilExit(ctx context.Context) (waitErr error, interrupted bool) {
	spec, cmd, res := j.spec, j.cmd, j.res
	pid := cmd.Process.Pid
	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()

	var timeoutC <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	grace := spec.Grace()
	var killC <-chan time.Time
	hard := spec.Hard
	ctxDone := ctx.Done()
	soft := func() {
		interrupted = true
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		if killC == nil {
			killC = time.After(grace)
		}
	}
	for {
		select {
		case waitErr = <-waitDone:
			return waitErr, interrupted
		case <-timeoutC:
			res.TimedOut = true
			timeoutC = nil
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			killC = time.After(grace)
		case <-ctxDone:
			ctxDone = nil
			soft()
		case h := <-j.cancels:
			if !h {
				soft()
				continue
			}
			interrupted = true
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		case <-hard:
			hard = nil
			interrupted = true
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		case <-killC:
			killC = nil
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

// Grace is the wait between SIGTERM and SIGKILL: the spec's KillGrace,
// 10 s when it says none (negative); kill_grace = 0 means SIGKILL right
// after SIGTERM.
func (s *Spec) Grace() time.Duration {
	if s.KillGrace < 0 {
		return 10 * time.Second
	}
	return s.KillGrace
}

// devNull is /dev/null, opened once, for the stdin of every process that
// is given none: os/exec would open it afresh for each (an open, its
// poller registration and a close per node).
var devNull = sync.OnceValues(func() (*os.File, error) { return os.Open(os.DevNull) })

// stdinOf is the stdin a process is started with: its spec's, or /dev/null.
func stdinOf(spec *Spec) io.Reader {
	if spec.Stdin != nil {
		return spec.Stdin
	}
	if f, err := devNull(); err == nil {
		return f
	}
	return nil // os/exec opens /dev/null itself
}

// oomCount is the count of the OOM killer's kills in cairn's cgroup
// (gpu.CgroupOOMKills) as last read: at the first node, and after each
// node that failed. A node's count before it started is this value rather
// than a read of its own: a kill that made no node fail leaves the value
// behind the file, and a node killed by a signal after that is taken for
// one killed for memory; failing nodes refresh it, and an OOM kill seldom
// leaves every node succeeding.
var oomCount oomCounter

type oomCounter struct {
	mu   sync.Mutex
	n    uint64
	read bool
}

// before is the count to compare with once a node has ended.
func (c *oomCounter) before() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.read {
		c.n, _ = gpu.CgroupOOMKills()
		c.read = true
	}
	return c.n
}

// after reads the count now, after a node failed.
func (c *oomCounter) after() (uint64, bool) {
	n, ok := gpu.CgroupOOMKills()
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok && n > c.n {
		c.n = n
	}
	c.read = true
	return n, ok
}

// lookPath finds a program on the PATH the node will have (its declared
// env may set one), not cairn's own.
func lookPath(name string, env []string) (string, error) {
	pathEnv := os.Getenv("PATH")
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			pathEnv = kv[len("PATH="):] // the last one wins, as for the child
		}
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		// A bare stat, without os.Stat's FileInfo: every node that names
		// its program without a folder looks through the whole PATH.
		var st syscall.Stat_t
		if syscall.Stat(p, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Mode&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// signalText names a signal given as Go's description of it ("killed")
// as people look it up: "SIGKILL (9, killed)".
func signalText(desc string) string {
	for n := syscall.Signal(1); n < 65; n++ {
		if n.String() == desc {
			return SignalText(n)
		}
	}
	return desc
}

// SignalText names signal n as people look it up: "SIGKILL (9, killed)".
func SignalText(n syscall.Signal) string {
	if name := unix.SignalName(n); name != "" {
		return fmt.Sprintf("%s (%d, %s)", name, int(n), n)
	}
	return fmt.Sprintf("%d (%s)", int(n), n)
}

// classify decides a finished process's failure class ("" for success).
// Order: cairn's own timeout and interrupt; declared stderr patterns;
// diagnosed out-of-memory; then signal (killed) or exit status (exit).
func classify(res *process.Result, interrupted, cgroupOOM bool, spec *Spec) (string, string) {
	if res.TimedOut {
		return failclass.Timeout, fmt.Sprintf("killed at its timeout of %s", spec.Timeout)
	}
	if interrupted {
		return failclass.Interrupted, "stopped because cairn was interrupted"
	}
	if res.ExitCode == 0 && res.Signal == "" {
		return "", ""
	}
	how := fmt.Sprintf("exited with status %d", res.ExitCode)
	if res.Signal != "" {
		how = "killed by signal " + signalText(res.Signal)
	}
	for _, p := range spec.Classify {
		if m := p.Pattern.Find(res.StderrTail); m != nil {
			return p.Class, fmt.Sprintf("%s; stderr matched %s pattern %q", how, p.Class, string(m))
		}
	}
	if m, ok := gpu.DiagnoseOOM(res.StderrTail, nil); ok {
		return failclass.MemoryFailure, fmt.Sprintf("%s; out of memory: %q in stderr", how, m)
	}
	if res.Signal != "" {
		if cgroupOOM {
			return failclass.MemoryFailure, how + "; the kernel reports an OOM kill in this cgroup"
		}
		return failclass.Killed, how + " (not sent by cairn; no out-of-memory diagnosis)"
	}
	return failclass.Exit, how
}

package process

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/engine/sysproc"
)

// Launcher starts an evaluation's worker processes. The engine passes its
// executor (a cluster executor starts them where it runs jobs); nil in
// Config is LocalLauncher.
type Launcher interface {
	StartWorker(ctx context.Context, w WorkerSpec) (Worker, error)
}

// WorkerSpec is one worker process to start.
type WorkerSpec struct {
	Argv   []string
	Env    []string // the complete environment
	Dir    string
	Stdin  *os.File // the worker's end of the request pipe
	Stdout *os.File // the worker's end of the response pipe
	Stderr io.Writer
}

// Worker is a started worker process.
type Worker interface {
	// Name names the process in messages ("pid 123").
	Name() string
	// Wait returns once the process has exited and its stderr has been
	// copied.
	Wait() error
	// Kill ends the process and everything it started.
	Kill()
	// Terminate asks the process and everything it started to end
	// (SIGTERM), for a stop that gives them time to.
	Terminate()
	// State says how it ended, once Wait has returned ("exit status 1").
	State() string
}

// LocalLauncher starts workers on this machine, each leading its own
// process group, with PR_SET_PDEATHSIG so that a worker dies with cairn.
var LocalLauncher Launcher = localLauncher{}

type localLauncher struct{}

func (localLauncher) StartWorker(_ context.Context, w WorkerSpec) (Worker, error) {
	cmd := exec.Command(w.Argv[0], w.Argv[1:]...)
	cmd.Dir = w.Dir
	cmd.Env = w.Env
	cmd.Stdin = w.Stdin
	cmd.Stdout = w.Stdout
	cmd.Stderr = w.Stderr
	cmd.WaitDelay = time.Second
	cmd.SysProcAttr = sysproc.Group()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return localWorker{cmd}, nil
}

type localWorker struct{ cmd *exec.Cmd }

func (w localWorker) Name() string  { return fmt.Sprintf("pid %d", w.cmd.Process.Pid) }
func (w localWorker) Wait() error   { return w.cmd.Wait() }
func (w localWorker) State() string { return fmt.Sprint(w.cmd.ProcessState) }

// Kill ends the worker's whole process group, which it leads.
func (w localWorker) Kill() { _ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL) }

// Terminate sends SIGTERM to the worker's process group.
func (w localWorker) Terminate() { _ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGTERM) }

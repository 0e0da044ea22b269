// Package slurm runs nodes as Slurm jobs: one sbatch of a small wrapper per
// node (of a job array for a stage's instances submitted together, each
// task running its node's wrapper), one status query per poll cycle for
// all of a run's jobs, the job's
// state and the exit file the wrapper writes deciding how it ended, and a
// chunked scancel on interrupt.
//
// Every job of a run carries the run id as its job name, so one query by
// name finds them all, also after cairn restarted. Jobs are submitted with
// --requeue: a job that Slurm requeues (a node failure, a preemption, an
// administrator's scontrol requeue) keeps its job id and is waited for under
// it; the wrapper removes the exit file when it starts, and cairn reads the
// exit file only once the job has reached a final state, so a job started
// twice is decided by its last run. Retries after a final failure are
// cairn's, by failure class, as for the local executor.
package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/sysproc"
)

// Options configure a Client. Zero values take the defaults.
type Options struct {
	Partition string
	Account   string
	QOS       string
	ExtraArgs []string // more sbatch arguments, as given
	// MaxSubmitted bounds the run's jobs in Slurm at once (submitted and
	// not yet final); default 100.
	MaxSubmitted int
	// PollInterval is the shortest wait between two status queries;
	// default 1s. Quiet cycles stretch it up to MaxPollInterval (default
	// 30s, and at most half of the cluster's MinJobAge, so that no job
	// ends and leaves squeue between two queries).
	PollInterval    time.Duration
	MaxPollInterval time.Duration
	// SubmitGap is the least time between two sbatch calls; default 20ms.
	SubmitGap time.Duration
	// SubmitRetryFor bounds how long transient sbatch errors are retried
	// for one job; default 10m.
	SubmitRetryFor time.Duration
	// RetryBackoff is the first wait before a retry (doubling up to 30s);
	// default 1s.
	RetryBackoff time.Duration
	// ExitFileWait bounds the wait for a final job's exit file (network
	// filesystems cache attributes); default 60s.
	ExitFileWait time.Duration
	// LostAfter: a job missing from every status source this long is
	// lost (class infrastructure); default 5m.
	LostAfter time.Duration
	// CallTimeout bounds every Slurm client call; default 30s.
	CallTimeout time.Duration
	// Bin is a folder holding sbatch, squeue, sacct, scancel and scontrol;
	// "" finds them on the PATH.
	Bin string
	// Notify, when set, is told at once when the Slurm commands stop
	// answering (the controller away: the first call that fails so, with
	// its own error) and when one answers again.
	Notify func(executor.Notice)
}

func (o *Options) defaults() {
	if o.MaxSubmitted <= 0 {
		o.MaxSubmitted = 100
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.MaxPollInterval <= 0 {
		o.MaxPollInterval = 30 * time.Second
	}
	if o.MaxPollInterval < o.PollInterval {
		o.MaxPollInterval = o.PollInterval
	}
	if o.SubmitGap <= 0 {
		o.SubmitGap = 20 * time.Millisecond
	}
	if o.SubmitRetryFor <= 0 {
		o.SubmitRetryFor = 10 * time.Minute
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = time.Second
	}
	if o.ExitFileWait <= 0 {
		o.ExitFileWait = time.Minute
	}
	if o.LostAfter <= 0 {
		o.LostAfter = 5 * time.Minute
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
}

// Client submits and follows the jobs of one run.
type Client struct {
	run  string // the run id: every job's name
	opts Options
	// accounting: the cluster keeps accounting storage, so sacct answers
	// for finished jobs; otherwise squeue -t all does, for MinJobAge.
	accounting bool
	minJobAge  time.Duration
	// killWait is the cluster's KillWait: how long Slurm waits between a
	// cancel's SIGTERM and its SIGKILL (30 s unless configured).
	killWait time.Duration
	// begins: ExtraArgs give the jobs a begin time (a job pending for
	// BeginTime is not necessarily a requeued one then).
	begins bool
	// maxArray is the cluster's MaxArraySize: an array's tasks are
	// numbered 0 to maxArray-1, so one sbatch holds at most maxArray.
	maxArray int

	slotMu   sync.Mutex
	inFlight int           // jobs submitted or attached, not yet final
	freed    chan struct{} // closed when a slot frees

	submitMu   sync.Mutex
	lastSubmit time.Time

	mu sync.Mutex
	// names are the job names the status queries ask for: run, and the
	// names of the dead runs whose jobs it re-attached to (each dead run
	// named its jobs after itself).
	names   []string
	jobs    map[string]*tracked // by job id
	start   time.Time           // the earliest submission followed (sacct -S)
	wake    chan struct{}       // a new job to follow: poll soon
	polling bool
	closed  chan struct{} // Close: the poller stops
	pollWG  sync.WaitGroup
	// life ends at Close: the poller's queries and the finish goroutines'
	// waits for exit files end with it.
	life    context.Context
	endLife context.CancelFunc

	// work counts the Slurm calls in flight and the finish goroutines;
	// Close waits until it is zero, so that nothing the Client started
	// (a stand-in's or a client command's process) outlives Close.
	// A zero Client (ClusterGPUs' one-call client) counts too.
	workMu sync.Mutex
	work   int
	idle   chan struct{} // closed when work falls to zero; nil while zero
	// Queries counts status queries made, for tests and benchmarks.
	queries int

	// waitMu guards waitSince: when the Slurm commands stopped
	// answering; zero while they answer.
	waitMu    sync.Mutex
	waitSince time.Time
}

// New makes a Client for run and reads the cluster's configuration
// (accounting storage, MinJobAge) with one scontrol call.
func New(ctx context.Context, run string, opts Options) (*Client, error) {
	opts.defaults()
	c := &Client{
		run:    run,
		names:  []string{run},
		opts:   opts,
		freed:  make(chan struct{}),
		jobs:   map[string]*tracked{},
		wake:   make(chan struct{}, 1),
		closed: make(chan struct{}),
	}
	c.life, c.endLife = context.WithCancel(context.Background())
	for _, a := range opts.ExtraArgs {
		if a == "-b" || strings.HasPrefix(a, "--begin") || strings.HasPrefix(a, "-b") && len(a) > 2 {
			c.begins = true
		}
	}
	out, err := c.callRetry(ctx, "scontrol", "show", "config")
	if err != nil && noConfig(err) {
		return nil, fmt.Errorf("slurm: this machine has no Slurm configuration; set SLURM_CONF to the cluster's slurm.conf, or run cairn on a machine of the cluster (a login node). %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("slurm: reading the cluster's configuration: %w", err)
	}
	cfg := parseConfig(out)
	c.accounting = cfg["AccountingStorageType"] != "" && !strings.HasSuffix(cfg["AccountingStorageType"], "/none")
	if f := strings.Fields(cfg["MinJobAge"]); len(f) > 0 {
		if n, err := strconv.Atoi(f[0]); err == nil {
			c.minJobAge = time.Duration(n) * time.Second
		}
	}
	c.killWait = 30 * time.Second
	if f := strings.Fields(cfg["KillWait"]); len(f) > 0 {
		if n, err := strconv.Atoi(f[0]); err == nil && n >= 0 {
			c.killWait = time.Duration(n) * time.Second
		}
	}
	c.maxArray = defaultMaxArraySize
	if f := strings.Fields(cfg["MaxArraySize"]); len(f) > 0 {
		if n, err := strconv.Atoi(f[0]); err == nil && n > 0 {
			c.maxArray = n
		}
	}
	if !c.accounting && c.minJobAge > 0 && c.opts.MaxPollInterval > c.minJobAge/2 {
		c.opts.MaxPollInterval = max(c.minJobAge/2, time.Second)
		if c.opts.PollInterval > c.opts.MaxPollInterval {
			c.opts.PollInterval = c.opts.MaxPollInterval
		}
	}
	return c, nil
}

// addName adds a job name to those the status queries ask for.
func (c *Client) addName(name string) {
	if name == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.names, name) {
		c.names = append(c.names, name)
	}
}

// nameList is the --name argument that finds every job the client
// follows: its job names, comma separated.
func (c *Client) nameList() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.names, ",")
}

// defaultMaxArraySize is Slurm's MaxArraySize where the configuration
// does not say.
const defaultMaxArraySize = 1001

// MaxArraySize is the most tasks one job array of the cluster holds.
func (c *Client) MaxArraySize() int { return c.maxArray }

// Close stops following jobs and waits until everything the Client
// started has ended: the poller (its query in flight is killed), the
// goroutines deciding final jobs (their waits for exit files cut short,
// those jobs left undecided) and the calls in flight of Submit and Cancel
// (each bounded by CallTimeout). Waits that are left return their
// context's end only.
func (c *Client) Close() {
	c.mu.Lock()
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	c.mu.Unlock()
	if c.endLife != nil {
		c.endLife()
	}
	c.pollWG.Wait()
	for {
		c.workMu.Lock()
		idle := c.idle
		c.workMu.Unlock()
		if idle == nil {
			return
		}
		<-idle
	}
}

// begin and end bracket work Close waits for.
func (c *Client) begin() {
	c.workMu.Lock()
	if c.work == 0 {
		c.idle = make(chan struct{})
	}
	c.work++
	c.workMu.Unlock()
}

func (c *Client) end() {
	c.workMu.Lock()
	c.work--
	if c.work == 0 {
		close(c.idle)
		c.idle = nil
	}
	c.workMu.Unlock()
}

// Accounting says whether status comes from sacct (accounting storage)
// rather than squeue.
func (c *Client) Accounting() bool { return c.accounting }

// Queries is the number of status queries made so far.
func (c *Client) Queries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queries
}

// parseConfig reads `scontrol show config`: "Key = value" lines.
func parseConfig(out []byte) map[string]string {
	cfg := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		cfg[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return cfg
}

// callError is a Slurm client call that failed: its stderr says why.
type callError struct {
	cmd     string
	stderr  string
	err     error
	timeout time.Duration // how long it ran unanswered before it was stopped; 0: it ended by itself
}

func (e *callError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	switch {
	case e.timeout > 0 && msg != "":
		// What the command said before it was stopped is why it hung
		// (a configuration file it cannot read, say).
		msg = fmt.Sprintf("no answer within %s; it said: %s", e.timeout, msg)
	case e.timeout > 0:
		msg = fmt.Sprintf("no answer within %s", e.timeout)
	case msg == "":
		msg = e.err.Error()
	}
	if strings.HasPrefix(msg, e.cmd+":") {
		return msg // "sbatch: error: ...": it names itself
	}
	return e.cmd + ": " + msg
}

func (e *callError) Unwrap() error { return e.err }

// callRetry is call, retried with backoff until it answers or ctx ends:
// for the questions cairn cannot go on without, which a controller that is
// restarting answers a little later.
//
// When ctx ends, the error is the last call's, unless that call, cut
// short, said nothing and an earlier one said why it failed: that one is
// returned (a configuration file the command cannot read, which it says
// at once and then retries reading, is why it hangs, whichever call ctx's
// end happened to cut).
func (c *Client) callRetry(ctx context.Context, name string, args ...string) ([]byte, error) {
	backoff := c.opts.RetryBackoff
	var said error // the last failure that said why
	for {
		out, err := c.call(ctx, name, args...)
		if err == nil || errors.Is(err, exec.ErrNotFound) || noConfig(err) {
			return out, err
		}
		if saysWhy(err) {
			said = err
		}
		if ctx.Err() != nil {
			return out, whyOf(err, said)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return out, whyOf(err, said)
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// saysWhy reports whether a failed call's command said something.
func saysWhy(err error) bool {
	var ce *callError
	return errors.As(err, &ce) && strings.TrimSpace(ce.stderr) != ""
}

// whyOf is err, or said (an earlier failure of the same call that said
// why) where err says nothing.
func whyOf(err, said error) error {
	if said != nil && !saysWhy(err) {
		return said
	}
	return err
}

// noConfig says whether a Slurm command failed because it found no
// configuration at all (no SLURM_CONF, no slurm.conf where Slurm looks,
// no configless DNS record): no retry makes one appear.
func noConfig(err error) bool {
	var ce *callError
	return errors.As(err, &ce) && ce.timeout == 0 && strings.Contains(ce.stderr, "Could not establish a configuration source")
}

// call runs one Slurm client command under the call timeout.
func (c *Client) call(ctx context.Context, name string, args ...string) ([]byte, error) {
	return c.callEnv(ctx, nil, name, args...)
}

func (c *Client) callEnv(parent context.Context, env []string, name string, args ...string) ([]byte, error) {
	c.begin()
	defer c.end()
	start := time.Now()
	ctx, cancel := context.WithTimeout(parent, c.opts.CallTimeout)
	defer cancel()
	path := name
	if c.opts.Bin != "" {
		path = c.opts.Bin + "/" + name
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The command runs in its own process group, and a call that ends
	// early (its context, the call timeout) kills the whole group: a
	// client command's (or a script's) children do not outlive the call.
	// It dies with cairn too (PR_SET_PDEATHSIG): an sbatch still waiting
	// for the controller when cairn is killed must not submit after the
	// next apply looked for its job and found none.
	cmd.SysProcAttr = sysproc.Group()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		// The command ended but left a child holding its output open.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		ce := &callError{cmd: name, stderr: stderr.String(), err: err}
		switch {
		case ctx.Err() != nil && parent.Err() == nil:
			ce.timeout = c.opts.CallTimeout
		case ctx.Err() != nil:
			// Cut short by the caller's end.
			ce.timeout = max(time.Since(start).Round(time.Millisecond), time.Millisecond)
		}
		if parent.Err() == nil && transient(ce) {
			c.unanswered(start, ce)
		}
		return stdout.Bytes(), ce
	}
	c.answered()
	return stdout.Bytes(), nil
}

// controller is what a failing Slurm command leaves cairn waiting for.
const controller = "the Slurm controller"

// unanswered notes a call that failed as a controller away fails (see
// transient): the first such call of a spell says so at once, with the
// command's own error.
func (c *Client) unanswered(start time.Time, err error) {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	if !c.waitSince.IsZero() {
		return
	}
	c.waitSince = start
	if c.opts.Notify != nil {
		c.opts.Notify(executor.Notice{Waiting: true, What: controller, Since: start, Detail: err.Error()})
	}
}

// answered notes a call that succeeded: a spell of failures is over.
func (c *Client) answered() {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	if c.waitSince.IsZero() {
		return
	}
	since := c.waitSince
	c.waitSince = time.Time{}
	if c.opts.Notify != nil {
		c.opts.Notify(executor.Notice{What: controller, Since: since})
	}
}

// jobEnv is the environment sbatch runs with, which the job inherits
// (--export=ALL): the node's own, less CUDA_VISIBLE_DEVICES (Slurm sets it
// from --gres; a job without GPUs gets it empty) and the SLURM_* variables of an allocation cairn itself may
// run in, plus SLURM_CONF when cairn has one and the node does not.
func jobEnv(env []string, gpus int) []string {
	out := make([]string, 0, len(env)+2)
	haveConf := false
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "CUDA_VISIBLE_DEVICES" || k == "CUDA_DEVICE_ORDER":
			continue
		case k == "SLURM_CONF":
			haveConf = true
		case strings.HasPrefix(k, "SLURM_"):
			continue
		}
		out = append(out, kv)
	}
	if v, ok := os.LookupEnv("SLURM_CONF"); ok && !haveConf {
		out = append(out, "SLURM_CONF="+v)
	}
	if len(env) == 0 {
		out = append(out, "PATH="+os.Getenv("PATH"))
	}
	if gpus == 0 {
		// A job that asked for no GPU sees none.
		out = append(out, "CUDA_VISIBLE_DEVICES=")
	}
	return out
}

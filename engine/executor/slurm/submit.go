package slurm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Ref is a submitted job as the journal keeps it: enough for a later
// cairn to find the job again and decide how it ended.
type Ref struct {
	JobID    string `json:"job_id"`
	Run      string `json:"run"` // the job name
	ExitFile string `json:"exit_file"`
}

// comment is the job's --comment: the node and its attempt, and a token
// that tells this submission from any other of the same node.
func comment(job *Job, token string) string {
	return fmt.Sprintf("cairn %s attempt %d sub %s", job.Node, job.Attempt, token)
}

// minutes is d as sbatch's --time, rounded up (Slurm's limits are whole
// minutes).
func minutes(d time.Duration) string {
	m := int64((d + time.Minute - 1) / time.Minute)
	return strconv.FormatInt(max(m, 1), 10)
}

// sbatchArgs are the arguments to submit job.
func (c *Client) sbatchArgs(job *Job, token string) []string {
	return c.sbatchArgsAs(job, comment(job, token), job.Stdout, job.Stderr, job.Script, "")
}

// sbatchArgsAs are the arguments to submit script with job's resources,
// under comment, with those log files, and as a job array of those tasks
// (--array; "" for a single job).
func (c *Client) sbatchArgsAs(job *Job, comment, stdout, stderr, script, array string) []string {
	args := []string{
		"--parsable",
		"--job-name=" + c.run,
		"--comment=" + comment,
		"--output=" + stdout,
		"--error=" + stderr,
		"--chdir=" + job.Dir,
		"--signal=B:USR2@60",
		"--requeue",
		"--export=ALL",
	}
	if array != "" {
		args = append(args, "--array="+array)
	}
	if job.AppendLogs {
		args = append(args, "--open-mode=append")
	}
	if job.GPUs > 0 {
		args = append(args, "--gres=gpu:"+strconv.Itoa(job.GPUs))
	}
	if job.CPUs > 0 {
		args = append(args, "--cpus-per-task="+strconv.Itoa(job.CPUs))
	}
	if job.MemMiB > 0 {
		args = append(args, "--mem="+strconv.Itoa(job.MemMiB)+"M")
	}
	if limit := job.timeLimit(); limit > 0 {
		args = append(args, "--time="+minutes(limit))
	}
	if c.opts.Partition != "" {
		args = append(args, "--partition="+c.opts.Partition)
	}
	if c.opts.Account != "" {
		args = append(args, "--account="+c.opts.Account)
	}
	if c.opts.QOS != "" {
		args = append(args, "--qos="+c.opts.QOS)
	}
	args = append(args, c.opts.ExtraArgs...)
	return append(args, script)
}

// transient says whether an sbatch failure is worth a retry: the
// controller busy or away, or a per-user limit on submitted jobs that
// frees as jobs end.
func transient(err error) bool {
	var ce *callError
	if !errors.As(err, &ce) {
		return false
	}
	if ce.timeout > 0 {
		return true
	}
	for _, s := range []string{
		"Socket timed out",
		"Unable to contact slurm controller",
		"Slurm temporarily unable to accept job",
		"Resource temporarily unavailable",
		"Zero Bytes were transmitted",
		"Connection refused",
		"Connection reset",
		"QOSMaxSubmitJobPerUserLimit",
		"AssocMaxSubmitJobLimit",
		"MaxSubmitJobLimit",
		"Job violates accounting/QOS policy",
		"Transport endpoint",
	} {
		if strings.Contains(ce.stderr, s) {
			return true
		}
	}
	return false
}

// ErrRefused is a submission sbatch refused for what the job asks (an
// invalid partition, account, qos or gres; a time over the partition's
// limit): the stage's settings, not the cluster's state, and the same
// submission fails again.
var ErrRefused = errors.New("slurm refused the job")

// Submit writes job's wrapper and submits it. It waits for a free slot
// (MaxSubmitted), keeps SubmitGap between sbatch calls, and retries
// transient errors with backoff for up to SubmitRetryFor. After a failure
// that may have submitted all the same (a timeout), it looks the job up
// by its comment before it submits again, so that a job is never submitted
// twice. The slot is the job's until Wait has seen it end.
func (c *Client) Submit(ctx context.Context, job *Job) (Ref, error) {
	if err := writeScript(job); err != nil {
		return Ref{}, fmt.Errorf("slurm: writing the batch script of %s: %w", job.Node, err)
	}
	if err := c.takeSlot(ctx); err != nil {
		return Ref{}, err
	}
	id, err := c.submit(ctx, job)
	if err != nil {
		c.freeSlot()
		return Ref{}, err
	}
	ref := Ref{JobID: id, Run: c.run, ExitFile: job.ExitFile}
	c.follow(ref, true)
	return ref, nil
}

// newToken tells one submission from any other.
func newToken() string {
	var tok [4]byte
	_, _ = rand.Read(tok[:])
	return hex.EncodeToString(tok[:])
}

func (c *Client) submit(ctx context.Context, job *Job) (string, error) {
	return c.submitAs(ctx, job, newToken())
}

// submitAs submits job under the comment token makes.
func (c *Client) submitAs(ctx context.Context, job *Job, token string) (string, error) {
	return c.sbatch(ctx, job.Node, c.sbatchArgs(job, token), jobEnv(job.Env, job.GPUs), comment(job, token))
}

// sbatch submits with args and env, what being what it submits (for
// messages) and comment its --comment, by which a submission whose
// answer was lost is looked up before another sbatch. It returns the job
// id (an array's base id).
func (c *Client) sbatch(ctx context.Context, what string, args, env []string, comment string) (string, error) {
	deadline := time.Now().Add(c.opts.SubmitRetryFor)
	backoff := c.opts.RetryBackoff
	ambiguous := false
	for {
		if ambiguous {
			// Until the lookup answers, submitting again may submit twice.
			id, _, found, err := c.findByComment(ctx, comment)
			if found {
				return id, nil
			}
			if err != nil {
				if ctx.Err() != nil {
					return "", ctx.Err()
				}
				if time.Now().Add(backoff).After(deadline) {
					return "", fmt.Errorf("slurm: submitting %s: cannot tell whether a submission that timed out went through: %w", what, err)
				}
				select {
				case <-time.After(backoff):
				case <-ctx.Done():
					return "", ctx.Err()
				}
				backoff = min(backoff*2, 30*time.Second)
				continue
			}
		}
		c.gap(ctx)
		out, err := c.callEnv(ctx, env, "sbatch", args...)
		if err == nil {
			id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
			if _, perr := strconv.ParseUint(id, 10, 64); perr != nil {
				return "", fmt.Errorf("slurm: sbatch for %s printed %q, not a job id", what, strings.TrimSpace(string(out)))
			}
			return id, nil
		}
		if ctx.Err() != nil {
			c.cancelCutSubmission(ctx, comment)
			return "", ctx.Err()
		}
		if !transient(err) {
			var ce *callError
			if errors.As(err, &ce) && ce.timeout == 0 && strings.TrimSpace(ce.stderr) != "" {
				// sbatch answered, and no: the job as written (its
				// partition, account, qos, gres, time) is not one
				// this cluster takes, and submitting again cannot help.
				return "", fmt.Errorf("%w: submitting %s: %w", ErrRefused, what, err)
			}
			return "", fmt.Errorf("slurm: submitting %s: %w", what, err)
		}
		var ce *callError
		ambiguous = ambiguous || (errors.As(err, &ce) && (ce.timeout > 0 || strings.Contains(ce.stderr, "Socket timed out")))
		if time.Now().Add(backoff).After(deadline) {
			return "", fmt.Errorf("slurm: submitting %s: still failing after %s: %w", what, c.opts.SubmitRetryFor, err)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// cancelCutSubmission cancels the job an sbatch that ctx's end stopped
// (Ctrl-C) may have submitted all the same: the controller can take the
// job before the client is killed, and neither this apply, which never
// heard its id, nor the next, which finds no record of it, would end it.
// It is looked up by its comment twice, a second apart (a submission in
// flight shows up late), and cancelled when found.
func (c *Client) cancelCutSubmission(ctx context.Context, comment string) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	for try := 0; try < 2; try++ {
		if try > 0 {
			select {
			case <-time.After(time.Second):
			case <-lctx.Done():
				return
			}
		}
		id, _, found, err := c.findByComment(lctx, comment)
		if err != nil {
			continue
		}
		if found {
			_ = c.Cancel(lctx, []Ref{{JobID: id, Run: c.run}})
			return
		}
	}
}

// gap waits until SubmitGap has passed since the last sbatch call.
func (c *Client) gap(ctx context.Context) {
	c.submitMu.Lock()
	defer c.submitMu.Unlock()
	if wait := time.Until(c.lastSubmit.Add(c.opts.SubmitGap)); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	c.lastSubmit = time.Now()
}

// findByComment looks for the job with this comment among those of the
// client's job names (a submission whose answer was lost, or a dead run's
// whose id its journal lacks); for a job array, its base id (squeue prints
// 1234_[0-9] for the pending tasks and 1234_3 for each other one), and
// when Slurm says it was submitted (zero where that does not read).
func (c *Client) findByComment(ctx context.Context, want string) (id string, submitted time.Time, found bool, err error) {
	out, err := c.call(ctx, "squeue", "--noheader", "--states=all", "--name="+c.nameList(), "--format=%i|%V|%k")
	if err != nil {
		return "", time.Time{}, false, err
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.SplitN(line, "|", 3)
		if len(f) == 3 && strings.TrimSpace(f[2]) == want {
			base, _, _ := strings.Cut(strings.TrimSpace(f[0]), "_")
			// squeue prints the submit time in the controller's local
			// time, to the second.
			at, _ := time.ParseInLocation("2006-01-02T15:04:05", strings.TrimSpace(f[1]), time.Local)
			return base, at, true, nil
		}
	}
	return "", time.Time{}, false, nil
}

package slurm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// cancelChunk is how many job ids one scancel call names.
const cancelChunk = 500

// Cancel cancels jobs with as few scancel calls as it can (cancelChunk ids
// each). A job that already ended is no error. A call that fails for
// another reason (the controller restarting) is retried with backoff until
// ctx ends.
//
// A running job's batch script is signalled first (scancel --batch
// --signal=TERM), and the job is cancelled only once that script has
// ended, or after the cluster's KillWait: a plain scancel sends SIGTERM to
// each of the job's processes one at a time, in no set order, and a shell
// running the node's command can start its next step between its child's
// SIGTERM and its own, after the cancel. The script's trap ends the
// command's whole process group with one signal instead. A job not seen
// running is cancelled first, at once (a pending one must never start).
func (c *Client) Cancel(ctx context.Context, refs []Ref) error {
	run, rest := c.splitRunning(refs)
	// The jobs not running first: the running ones' end frees their
	// resources, and a pending job must not start on them.
	err := c.scancel(ctx, nil, rest, true)
	if len(run) == 0 {
		return err
	}
	if c.scancel(ctx, []string{"--batch", "--signal=TERM"}, run, false) == nil {
		run = c.awaitScripts(ctx, run)
	}
	// Those whose scripts did not end (or had no signal) are cancelled.
	return errors.Join(err, c.scancel(ctx, nil, run, true))
}

// splitRunning parts refs into the jobs running now, as a fresh status
// query shows them (else the last poll's), and the others.
func (c *Client) splitRunning(refs []Ref) (run, rest []Ref) {
	states, err := c.query(c.earliest())
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range refs {
		st, ok := states[r.JobID]
		if err != nil || !ok {
			if t, found := c.jobs[r.JobID]; found {
				st.state = t.state
			}
		}
		if running(st.state) {
			run = append(run, r)
		} else {
			rest = append(rest, r)
		}
	}
	return run, rest
}

// earliest is the earliest submission followed, where sacct looks from.
func (c *Client) earliest() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.start
}

// awaitScripts waits until the batch scripts of refs have ended (their
// exit files written, or their jobs decided), for the cluster's KillWait
// at most, and returns the jobs whose scripts have not.
func (c *Client) awaitScripts(ctx context.Context, refs []Ref) []Ref {
	deadline := time.Now().Add(c.killWait)
	for {
		var left []Ref
		for _, r := range refs {
			if !exitWritten(r.ExitFile) && !c.decidedJob(r.JobID) {
				left = append(left, r)
			}
		}
		if len(left) == 0 || !time.Now().Before(deadline) {
			return left
		}
		refs = left
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return left
		}
	}
}

// decidedJob says whether the job followed as id reached a final state.
func (c *Client) decidedJob(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.jobs[id]
	return ok && t.finishing
}

// ids are the job ids of refs.
func ids(refs []Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.JobID
	}
	return out
}

// scancel runs scancel with args on refs, cancelChunk ids a call. With
// retry, a call that fails for another reason than jobs that ended already
// is retried; without, its error is returned at once (a script's signal
// has the plain scancel behind it).
func (c *Client) scancel(ctx context.Context, args []string, refs []Ref, retry bool) error {
	var errs []string
	for i := 0; i < len(refs); i += cancelChunk {
		chunk := ids(refs[i:min(i+cancelChunk, len(refs))])
		var err error
		backoff := c.opts.RetryBackoff
		for {
			if _, err = c.call(ctx, "scancel", append(slices.Clone(args), chunk...)...); err == nil || alreadyDone(err) {
				err = nil
				c.cancelled(chunk)
				break
			}
			if !retry {
				return fmt.Errorf("slurm: signalling %d jobs: %w", len(refs), err)
			}
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return fmt.Errorf("slurm: cancelling %d jobs: %w", len(refs), err)
			}
			backoff = min(backoff*2, 10*time.Second)
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("slurm: cancelling %d jobs: %s", len(refs), strings.Join(errs, "; "))
	}
	return nil
}

// cancelled notes the jobs cairn's own scancel cancelled: one that then
// leaves the status queries without an exit file was cancelled before
// it ran (Slurm drops a cancelled pending array task from squeue with no
// CANCELLED line), and is taken as cancelled at once (see poll).
func (c *Client) cancelled(ids []string) {
	c.mu.Lock()
	for _, id := range ids {
		if t, ok := c.jobs[id]; ok {
			t.cancelled = true
		}
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// alreadyDone: scancel complains about jobs that ended already and about
// nothing else.
func alreadyDone(err error) bool {
	ce, ok := err.(*callError)
	if !ok || ce.timeout > 0 {
		return false
	}
	for _, line := range strings.Split(strings.TrimSpace(ce.stderr), "\n") {
		if line == "" {
			continue
		}
		if !strings.Contains(line, "already completing or completed") && !strings.Contains(line, "Invalid job id specified") {
			return false
		}
	}
	return true
}

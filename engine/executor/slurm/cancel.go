package slurm

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// cancelChunk is how many job ids one scancel call names.
const cancelChunk = 500

// Cancel cancels jobs with as few scancel calls as it can (cancelChunk ids
// each). A job that already ended is no error. A call that fails for
// another reason (the controller restarting) is retried with backoff until
// ctx ends.
func (c *Client) Cancel(ctx context.Context, refs []Ref) error {
	var errs []string
	for i := 0; i < len(refs); i += cancelChunk {
		ids := make([]string, 0, cancelChunk)
		for _, r := range refs[i:min(i+cancelChunk, len(refs))] {
			ids = append(ids, r.JobID)
		}
		var err error
		backoff := c.opts.RetryBackoff
		for {
			if _, err = c.call(ctx, "scancel", ids...); err == nil || alreadyDone(err) {
				err = nil
				c.cancelled(ids)
				break
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

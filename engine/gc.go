package engine

import (
	"os"
	"time"

	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
)

// GC is cairn gc: store.GC (old records, blobs no record references, the
// index compacted) with the runs of the cache folder, which the cache
// itself does not know: the run folders and the lines of the up-to-date log
// older than opts.OlderThan go too.
func GC(c *store.Cache, opts store.GCOptions) (*store.GCResult, error) {
	opts.Runs = trimRuns
	return store.GC(c, opts)
}

// trimRuns removes the finished runs of the cache folder dir that started
// longer than olderThan ago, and returns how many it removed (or, with
// dryRun, would).
func trimRuns(dir string, olderThan time.Duration, dryRun bool) (int, error) {
	n := 0
	runs, _ := runlog.List(dir)
	for _, r := range runs {
		if r.Dir != "" && r.State != "running" && !r.Start.IsZero() && time.Since(r.Start) > olderThan {
			n++
			if !dryRun {
				_ = os.RemoveAll(r.Dir)
			}
		}
	}
	// The runs the up-to-date check answered: lines of one log.
	m, err := runlog.TrimUpToDate(dir, time.Now().Add(-olderThan), dryRun)
	if err != nil {
		return n, err
	}
	return n + m, nil
}

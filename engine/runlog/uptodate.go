package runlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cairn-run/cairn/storage/atomicfile"
)

// UpToDateFile is the log, in a cache's runs folder, of the applies that
// the up-to-date check answered: every node cached, nothing run. Such an
// apply has nothing to journal but that it happened, so it makes no run
// folder (a folder, a journal and a lock file for every no-op apply, read
// back by every `cairn status`): it appends one line here.
const UpToDateFile = "up-to-date.log"

// UpToDateRun is one line of the up-to-date log: a JSON object.
type UpToDateRun struct {
	RunID    string    `json:"run"`
	Time     time.Time `json:"time"` // when the apply started
	Pipeline string    `json:"pipeline"`
	PID      int       `json:"pid"`
	Args     []string  `json:"args,omitempty"`
	Cached   int       `json:"cached"` // the nodes, every one taken from the cache
	Duration float64   `json:"duration_s"`
}

// Info is the run as `cairn status` lists it: ended ok.
func (r *UpToDateRun) Info() *RunInfo {
	return &RunInfo{
		ID: r.RunID, Pipeline: r.Pipeline, PID: r.PID, Start: r.Time, State: "ok", UpToDate: r.Cached,
		End: r.Time.Add(r.Took()),
	}
}

// Took is how long the apply took.
func (r *UpToDateRun) Took() time.Duration {
	return time.Duration(r.Duration * float64(time.Second))
}

// FindUpToDate returns the run of the up-to-date log with id runID, or nil.
func FindUpToDate(cacheDir, runID string) (*UpToDateRun, error) {
	var found *UpToDateRun
	_, err := upToDateLines(cacheDir, func(_ []byte, r *UpToDateRun) {
		if r.RunID == runID {
			found = r
		}
	})
	return found, err
}

// UpToDatePath is the up-to-date log of the cache at cacheDir.
func UpToDatePath(cacheDir string) string {
	return filepath.Join(cacheDir, "runs", UpToDateFile)
}

// AppendUpToDate adds a run to the up-to-date log with one write to a file
// opened for appending, so that applies of several processes add whole
// lines side by side without a lock, and a kill leaves the line written or
// not. Nothing is synced: the line is information only (a power loss can
// take it, or leave it torn; readers skip what does not parse). The file
// is made 0666 less the umask, as the cache's other files.
func AppendUpToDate(cacheDir string, r UpToDateRun) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	path := UpToDatePath(cacheDir)
	open := func() (*os.File, error) { return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666) }
	f, err := open()
	if errors.Is(err, os.ErrNotExist) { // no runs folder yet
		if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		f, err = open()
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	_, werr := f.Write(line)
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("journal: %s: %w", path, err)
	}
	return nil
}

// upToDateLines calls fn for every line of the up-to-date log that reads
// as a run, in the order written, and returns the size of the log it read;
// none when the log is missing. A line that does not parse (torn by a
// power loss, or damaged) is skipped.
func upToDateLines(cacheDir string, fn func(line []byte, r *UpToDateRun)) (int, error) {
	b, err := os.ReadFile(UpToDatePath(cacheDir))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("journal: %w", err)
	}
	size := len(b)
	for len(b) > 0 {
		line, rest, _ := bytes.Cut(b, []byte{'\n'})
		b = rest
		// What a power loss can leave: zeros where a line was to be.
		line = bytes.TrimLeft(line, "\x00")
		var r UpToDateRun
		if json.Unmarshal(line, &r) != nil || r.RunID == "" {
			continue
		}
		fn(line, &r)
	}
	return size, nil
}

// ReadUpToDate returns the runs of the up-to-date log, oldest first.
func ReadUpToDate(cacheDir string) ([]*UpToDateRun, error) {
	var runs []*UpToDateRun
	_, err := upToDateLines(cacheDir, func(_ []byte, r *UpToDateRun) { runs = append(runs, r) })
	return runs, err
}

// TrimUpToDate removes the runs that ended before cutoff from the
// up-to-date log, rewriting it whole (atomically), and returns how many
// there were; with dryRun it only counts them. Lines that do not parse go
// too. The caller holds the cache's gc lock exclusively: no apply appends
// meanwhile.
func TrimUpToDate(cacheDir string, cutoff time.Time, dryRun bool) (int, error) {
	var kept []byte
	removed := 0
	size, err := upToDateLines(cacheDir, func(line []byte, r *UpToDateRun) {
		if r.Time.Add(r.Took()).Before(cutoff) {
			removed++
			return
		}
		kept = append(append(kept, line...), '\n')
	})
	if err != nil || dryRun || len(kept) == size { // nothing to remove
		return removed, err
	}
	if err := atomicfile.Write(UpToDatePath(cacheDir), kept, false); err != nil {
		return 0, fmt.Errorf("journal: %w", err)
	}
	return removed, nil
}

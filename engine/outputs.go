package engine

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/cas"
	"github.com/cairn-run/cairn/stages"
)

// commit stores a successful node's outputs and result and commits its
// action record. A missing output or an unreadable result fails the node
// with class "result" (nothing is committed).
func (a *applier) commit(ns *nodeState, out *stages.Outcome) (*Record, string, string) {
	c := ns.spec.Common
	rec := &Record{
		Key: ns.key, Outputs: map[string]string{}, Modes: map[string]uint32{},
		Pipeline: a.g.Config.Name, Address: ns.n.Addr, RunID: a.runID,
		Attempts: ns.attempts, Started: ns.started, Ended: ns.ended,
		Debug: a.opts.Debug[ns.n.Addr], RunCounts: out.RunCounts,
	}
	if env, err := json.Marshal(ns.env); err == nil {
		rec.Envelope = env
	}
	if out.Proc != nil {
		rec.ExitCode = out.Proc.ExitCode
		rec.PeakRSSMiB, rec.PeakGPUMiB = out.Proc.PeakRSSMiB, out.Proc.PeakGPUMiB
		rec.Started, rec.Ended = out.Proc.Started, out.Proc.Ended
	}
	result := out.Result
	if result == nil && c.Result != "" {
		if err := a.checkInside(c.Result); err != nil {
			return nil, dsl.ClassResult, fmt.Sprintf("the result file %s", err)
		}
		b, err := os.ReadFile(filepath.Join(a.g.Root, c.Result))
		if err != nil {
			return nil, dsl.ClassResult, fmt.Sprintf("the result file %s was not written: %s", c.Result, errText(err))
		}
		if !json.Valid(b) {
			return nil, dsl.ClassResult, fmt.Sprintf("the result file %s is not valid JSON", c.Result)
		}
		result = b
	}
	if result != nil {
		var compact json.RawMessage
		if err := json.Unmarshal(result, &compact); err != nil {
			return nil, dsl.ClassResult, fmt.Sprintf("the result is not valid JSON: %s", err)
		}
		rec.Result = compact
	}
	files := append([]string{}, c.Outputs...)
	if c.Result != "" {
		files = append(files, c.Result)
	}
	files = append(files, out.Files...)
	for _, f := range files {
		full := filepath.Join(a.g.Root, f)
		st, err := os.Stat(full)
		if err != nil {
			return nil, dsl.ClassResult, fmt.Sprintf("the declared output %s was not written", f)
		}
		if st.IsDir() {
			err := filepath.WalkDir(full, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(a.g.Root, p)
				return a.storeFile(rec, rel)
			})
			if err != nil {
				return nil, dsl.ClassResult, fmt.Sprintf("cannot store output %s: %s", f, err)
			}
			continue
		}
		if err := a.storeFile(rec, f); err != nil {
			return nil, dsl.ClassResult, fmt.Sprintf("cannot store output %s: %s", f, err)
		}
	}
	// Without the monotonic clock reading, the record in memory measures
	// the same duration as the one read back from the cache, so a
	// downstream that sees this node's duration_s gets the same key on
	// the next apply.
	rec.Started, rec.Ended = rec.Started.Round(0), rec.Ended.Round(0)
	rec.OutputDigest = outputDigest(rec.Outputs, rec.Result, "ok")
	if err := a.cache.Commit(rec); err != nil {
		return nil, dsl.ClassInfra, fmt.Sprintf("cannot commit the result to the cache: %s", err)
	}
	return rec, "", ""
}

// checkInside refuses a path that resolves outside the workspace: paths
// are checked when the pipeline is planned, but a workload may make an
// output (or a folder on its way) a symlink to anywhere when it runs.
// Nothing outside the workspace is read into the cache.
func (a *applier) checkInside(rel string) error {
	root, err := filepath.EvalSymlinks(a.g.Root)
	if err != nil {
		root = a.g.Root
	}
	real, err := filepath.EvalSymlinks(filepath.Join(a.g.Root, rel))
	if err != nil {
		return nil // missing: the caller says so
	}
	if real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) {
		return fmt.Errorf("%s is a symlink to %s, outside the workspace: it is not stored", rel, real)
	}
	return nil
}

func (a *applier) storeFile(rec *Record, rel string) error {
	if err := a.checkInside(rel); err != nil {
		return err
	}
	full := filepath.Join(a.g.Root, rel)
	d, _, err := a.cache.Blobs.PutFile(full)
	if err != nil {
		return err
	}
	st, err := os.Stat(full)
	if err != nil {
		return err
	}
	rec.Outputs[rel] = string(d)
	rec.Modes[rel] = uint32(st.Mode().Perm())
	return nil
}

// restoreOutputs puts a cached node's outputs in the workspace: files
// whose content already matches are left alone; the rest are copied from
// the blob store and verified.
func (a *applier) restoreOutputs(rec *Record) error {
	paths := make([]string, 0, len(rec.Outputs))
	for p := range rec.Outputs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		want := rec.Outputs[p]
		full := filepath.Join(a.g.Root, p)
		if got, err := a.cache.Stat.File(full); err == nil && got == want {
			continue
		}
		mode := os.FileMode(0o644)
		if m, ok := rec.Modes[p]; ok && m != 0 {
			mode = os.FileMode(m)
		}
		if err := a.cache.Blobs.Restore(cas.Digest(want), full, mode); err != nil {
			return fmt.Errorf("output %s: %w", p, err)
		}
	}
	return nil
}

func errText(err error) string {
	if os.IsNotExist(err) {
		return "no such file"
	}
	return err.Error()
}

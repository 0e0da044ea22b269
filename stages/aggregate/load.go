package aggregate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"unicode"

	"github.com/cairn-run/cairn/stages/jsonpos"
	"github.com/cairn-run/cairn/storage/filekind"
)

// The formats this package reads (docs/job-artifacts.md).
const (
	ResultFormat = "cairn.job-result/1"
	TestFormat   = "cairn.job-test/1"
)

// ResultFile and TestFile are the names of a job's artifacts.
const (
	ResultFile       = "result.json"
	TestFile         = "test.json"
	JobFile          = "job.json"
	SelectionFile    = "selection.json"
	OptimizationFile = "optimization.json"
)

// JobFormat is job.json's format (docs/job-artifacts.md).
const JobFormat = "cairn.job/1"

// jobIdentityFields are the fields of job.json that its result.json
// repeats: the job a result reports is the job its job.json seals.
var jobIdentityFields = []string{"method", "cell_id", "dataset", "runtime", "model", "seed", "budget", "nonconformant"}

// InputError is a problem with the artifacts read: a file that does not
// parse, items that do not pair up, seeds that disagree. The command line
// exits 2 on it.
type InputError struct {
	File      string // the file at fault, as found under the roots
	Line, Col int    // 1-based, in bytes; 0 when the problem has no one place
	Msg       string
}

func (e *InputError) Error() string {
	switch {
	case e.File == "":
		return e.Msg
	case e.Line > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// ErrBadInput matches every *InputError with errors.Is.
var ErrBadInput = errors.New("aggregate: bad input")

// Is implements errors.Is.
func (e *InputError) Is(target error) bool { return target == ErrBadInput }

func badFile(file, format string, args ...any) error {
	return &InputError{File: file, Msg: fmt.Sprintf(format, args...)}
}

// badAt is badFile at the position of offset in data.
func badAt(file string, data []byte, offset int64, format string, args ...any) error {
	line, col := position(data, offset)
	return &InputError{File: file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// resultDoc is result.json as read; pointers tell a missing field from a
// zero one.
type resultDoc struct {
	Format           *string   `json:"format"`
	Status           *string   `json:"status"`
	Method           *string   `json:"method"`
	CellID           *string   `json:"cell_id"`
	Dataset          *string   `json:"dataset"`
	Runtime          *string   `json:"runtime"`
	Model            *string   `json:"model"`
	Seed             *int      `json:"seed"`
	Deployed         *string   `json:"deployed"`
	Nonconformant    *[]string `json:"nonconformant"`
	TestItems        *int      `json:"test_items"`
	TestInvalidItems *int      `json:"test_invalid_items"`
	// What the job wrote of its test items, checked against test.json
	// when present (docs/job-artifacts.md): a file that contradicts the
	// other is refused, not read either way.
	TestSHA256          *string  `json:"test_sha256"`
	BaselineMean        *float64 `json:"baseline_mean"`
	DeployedMean        *float64 `json:"deployed_mean"`
	DeltaPP             *float64 `json:"delta_pp"`
	ValidForAggregation *bool    `json:"valid_for_aggregation"`
	FallbackReason      *string  `json:"fallback_reason"`
	Budget              *int     `json:"budget"`
	ChargedRollouts     *int     `json:"charged_rollouts"`
	SelectionSHA256     *string  `json:"selection_sha256"`
	// Source is the provenance of a job cairn import made
	// (docs/model-cache.md): absent from a job cairn ran.
	Source json.RawMessage `json:"source"`
}

// FallbackReasons are the reasons a job deploys the seed bundle
// (docs/job-artifacts.md): its result.json's fallback_reason is one of
// them.
var FallbackReasons = []string{"incumbent_not_better", "no_incumbent", "validation_invalid"}

// resultFields are the fields every result.json has (docs/job-artifacts.md;
// fallback_reason may be null, the others not). A file without one is
// not a job's whole record: its figures are not taken on trust.
var resultFields = []string{"format", "status", "method", "cell_id", "dataset", "runtime", "model", "seed",
	"budget", "charged_rollouts", "baseline_mean", "deployed_mean", "delta_pp", "deployed", "fallback_reason",
	"valid_for_aggregation", "nonconformant", "test_items", "test_invalid_items", "selection_sha256", "test_sha256"}

// meanFields are the result.json fields that are null when no test item
// is valid.
var meanFields = []string{"baseline_mean", "deployed_mean", "delta_pp"}

type testDoc struct {
	Format   *string    `json:"format"`
	Method   *string    `json:"method"`
	CellID   *string    `json:"cell_id"`
	Seed     *int       `json:"seed"`
	Deployed *string    `json:"deployed"`
	Items    *[]itemDoc `json:"items"`
}

type itemDoc struct {
	ID       *string  `json:"id"`
	Baseline *float64 `json:"baseline"`
	Deployed *float64 `json:"deployed"`
	Valid    *bool    `json:"valid"`
}

// Job is one method × cell × seed, read from its result.json and the
// test.json beside it.
type Job struct {
	File          string // the result.json, as found under its root
	TestFile      string
	Status        string
	Method        string
	CellID        string
	Dataset       string
	Runtime       string
	Model         string
	Seed          int
	Nonconformant []string
	// Items are the test items by id, sorted by id.
	Items []Item
	// Invalid counts the items that are not valid.
	Invalid int
	// JobFile is the job.json beside the result, "" when there is none
	// (an imported job); Setup is what of it every seed of a row shares
	// (jobSetupFields), as canonical JSON by field.
	JobFile string
	Setup   map[string]string
}

// jobSetupFields are the fields of job.json that every seed of a row
// shares: the models, the servers that answered, the runtime env, the
// rollout worker and the digests of the method's code, the data, the
// worker and the seed bundle. Seeds that differ in one are not one
// experiment. (The command differs by its --seed; the pipeline file may
// change by a comment.)
var jobSetupFields = []string{"task_model", "reflection_model", "servers", "env", "worker",
	"digests.method", "digests.data", "digests.worker", "digests.bundle"}

// readSetup reads the job.json beside a result (name as found, path
// resolved, result its bytes) into j.JobFile and j.Setup; one that is
// not the result's job is refused (sameJob). A job cairn ran has one (its
// first node writes it), an imported job none: either way round is
// refused, as its setup would go uncompared with the other seeds'.
func (j *Job) readSetup(name, path string, result []byte, imported bool) error {
	jpath := filepath.Join(filepath.Dir(path), JobFile)
	jname := filepath.Join(filepath.Dir(name), JobFile)
	ok, err := present(jpath, jname)
	switch {
	case err != nil:
		return err
	case !ok && imported:
		return nil
	case !ok:
		return badFile(name, "has no %s beside it, but no \"source\" either: a job cairn ran writes its job.json first, and only a job cairn import made (with a source) has none; without it the job's setup is compared with no other seed's: restore the job's job.json, or apply the job again", JobFile)
	case imported:
		return badFile(jname, "is beside a result.json that cairn import made (it has a \"source\"), and an imported job has no %s: these are not one job's files; remove the %s, or import into a folder of its own", JobFile, JobFile)
	}
	j.JobFile = jname
	var doc map[string]json.RawMessage
	if _, err := decodeFile(jpath, j.JobFile, &doc); err != nil {
		return err
	}
	if err := sameJob(j.JobFile, name, doc, result); err != nil {
		return err
	}
	j.Setup = map[string]string{}
	for _, f := range jobSetupFields {
		top, sub, nested := strings.Cut(f, ".")
		raw, ok := doc[top]
		if ok && nested {
			var inner map[string]json.RawMessage
			if json.Unmarshal(raw, &inner) != nil {
				return badFile(j.JobFile, "%s is not an object", top)
			}
			raw, ok = inner[sub]
		}
		if !ok {
			continue // absent: as the job wrote it (no env, no servers)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return badFile(j.JobFile, "%s: %s", f, err)
		}
		canon, _ := json.Marshal(v)
		j.Setup[f] = string(canon)
	}
	return nil
}

// sameJob refuses a job.json (jobName, doc) that is not the job its
// result.json (resName, result) reports: another format, or an identity
// field (jobIdentityFields) missing or of another value.
func sameJob(jobName, resName string, doc map[string]json.RawMessage, result []byte) error {
	var format string
	if raw, ok := doc["format"]; !ok || json.Unmarshal(raw, &format) != nil || format != JobFormat {
		got := "no \"format\""
		if ok {
			got = "format " + canonical(raw)
		}
		return badFile(jobName, "has %s; cairn reads %q", got, JobFormat)
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(result, &res); err != nil {
		return badFile(resName, "is not a JSON object")
	}
	for _, f := range jobIdentityFields {
		raw, ok := doc[f]
		if !ok {
			return badFile(jobName, "has no %q: every job.json has it (docs/job-artifacts.md); was the file edited?", f)
		}
		if got, want := canonical(raw), canonical(res[f]); got != want {
			return badFile(jobName, "%s %s disagrees with %s's %s %s: a job's result.json reports the job its job.json seals, so these are not one job's files; restore the job's own files, or remove its folder", f, got, resName, f, want)
		}
	}
	return nil
}

// canonical is a JSON value as compact JSON, its numbers as float64
// gives them (1.0 is 1), strings unescaped where JSON allows.
func canonical(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// present says whether the job's file at path (name as found) is there:
// false when nothing of its name is; a link to nothing is refused.
func present(path, name string) (bool, error) {
	li, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, badFile(name, "cannot be read: %s", errors.Unwrap(err))
	case li.Mode()&fs.ModeSymlink != 0:
		if _, err := os.Stat(path); err != nil {
			return false, danglingLink(name, path, err)
		}
	}
	return true, nil
}

// sameSetup refuses two seeds of a row whose job.json differ in a field
// every seed shares; seeds without a job.json are not compared.
func sameSetup(a, b *Job) error {
	if a == nil || a.Setup == nil || b.Setup == nil {
		return nil
	}
	for _, f := range jobSetupFields {
		if a.Setup[f] != b.Setup[f] {
			show := func(v string) string {
				if v == "" {
					return "(none)"
				}
				return v
			}
			return &InputError{Msg: fmt.Sprintf("%s %s: seeds %d and %d ran with different %s (%s: %s; %s: %s): every seed of a row is one experiment, its seed aside",
				a.Method, a.CellID, a.Seed, b.Seed, f, a.JobFile, show(a.Setup[f]), b.JobFile, show(b.Setup[f]))}
		}
	}
	return nil
}

// Item is one paired test item.
type Item struct {
	ID                 string
	Baseline, Deployed float64
	Valid              bool
}

// Skip is a job left out of the aggregation, and why.
type Skip struct {
	File    string   `json:"file"`
	Reasons []string `json:"reasons"`
	// Nonconformant: skipped for its non-conformance reasons, which
	// Options.IncludeNonconformant takes in (not for its seed, say).
	Nonconformant bool `json:"-"`
}

// SkippedNonconformant counts the jobs skipped as non-conformant.
func (s *Summary) SkippedNonconformant() int {
	n := 0
	for _, sk := range s.Skipped {
		if sk.Nonconformant {
			n++
		}
	}
	return n
}

// Warning is the line a skip is reported with on standard error.
func (s Skip) Warning() string {
	return fmt.Sprintf("warning: skipped %s: %s", s.File, strings.Join(s.Reasons, "; "))
}

// FindResults lists every result.json under the roots (a root may also be
// a result.json itself), each once: a file reached from two roots keeps
// the smaller of its two names. Roots are resolved against dir when
// relative; the names returned are as found (the root joined with the
// path below it), sorted.
func FindResults(dir string, roots []string) ([]string, error) {
	byID := map[any]string{} // the file -> name
	add := func(name, abs string) {
		var id any = abs
		if fi, err := os.Stat(abs); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				// The file itself, however reached: through links, or
				// by another hard link to it.
				id = [2]uint64{uint64(st.Dev), st.Ino}
			} else if real, err := filepath.EvalSymlinks(abs); err == nil {
				id = real
			}
		}
		if old, ok := byID[id]; !ok || name < old {
			byID[id] = name
		}
	}
	if err := walkRoots(dir, roots, add, nil, true); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(byID))
	for _, name := range byID {
		out = append(out, name)
	}
	slices.Sort(out)
	return out, nil
}

// Links lists the symbolic links below the roots that reading them
// follows (FindResults and ReadJob): a link to a folder, walked as the
// folder it points to, and a link named result.json, test.json or
// job.json, read through; and, beside a root that is a result.json
// itself, the test.json and job.json that exist, which the job's reading
// takes in too. Their content is what the aggregate reads, so the stage
// keys it by them (their link text alone would leave it cached when a
// linked job changes). A link that points to nothing is not followed,
// and not listed. Names are as found (the root joined with the path below
// it), sorted and each once.
func Links(dir string, roots []string) ([]string, error) {
	seen := map[string]bool{}
	link := func(name, _ string) { seen[filepath.Clean(name)] = true }
	if err := walkRoots(dir, roots, func(string, string) {}, link, false); err != nil {
		return nil, err
	}
	for _, root := range roots {
		abs := root
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(dir, root)
		}
		if filepath.Base(root) != ResultFile {
			continue
		}
		for _, f := range []string{TestFile, JobFile} {
			if fi, err := os.Stat(filepath.Join(filepath.Dir(abs), f)); err == nil && fi.Mode().IsRegular() {
				seen[filepath.Join(filepath.Dir(filepath.Clean(root)), f)] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	slices.Sort(out)
	return out, nil
}

// walkRoots calls add(name, path) for every result.json under the roots
// and, when link is not nil, link(name, path) for every symbolic link the
// walk follows (resultWalk.walk). strict refuses what would leave a job out
// unseen (resultWalk.strict); without it, a link that leads to nothing is
// passed over, unless it is named result.json.
func walkRoots(dir string, roots []string, add, link func(name, abs string), strict bool) error {
	if len(roots) == 0 {
		return &InputError{Msg: "no root given: name the folders that hold the jobs' result.json files"}
	}
	for _, root := range roots {
		abs := root
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(dir, root)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			if li, lerr := os.Lstat(abs); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
				return danglingLink(filepath.Clean(root), abs, err)
			}
			if errors.Is(err, fs.ErrNotExist) {
				return &InputError{File: root, Msg: "no such file or folder"}
			}
			return &InputError{File: root, Msg: err.Error()}
		}
		if fi.IsDir() && strict && filepath.Base(abs) == ResultFile {
			return notRegular(filepath.Clean(root), ResultFile, fi.Mode())
		}
		if !fi.IsDir() {
			if filepath.Base(abs) != ResultFile {
				return &InputError{File: root, Msg: "is neither a folder nor a " + ResultFile}
			}
			add(filepath.Clean(root), abs)
			continue
		}
		w := resultWalk{seen: map[string]bool{}, add: add, link: link, strict: strict}
		if err := w.walk(abs, root); err != nil {
			var in *InputError
			if errors.As(err, &in) {
				return err // it names the file
			}
			return fmt.Errorf("aggregate: reading %s: %w", root, err)
		}
	}
	return nil
}

// danglingLink is the refusal of the link name (at path) that leads to
// nothing: err is why it could not be followed.
func danglingLink(name, path string, err error) error {
	to, rerr := os.Readlink(path)
	if rerr != nil {
		to = "(unreadable: " + rerr.Error() + ")"
	}
	why := "what it led to would be left out of the table without a word (a seed shown missing, or a whole method's rows gone, which changes the other rows' Holm correction)"
	switch filepath.Base(name) {
	case ResultFile:
		why = "the job would be left out of the table without a word, its seed shown missing"
	case TestFile:
		why = "the job's paired test scores would look missing"
	case JobFile:
		why = "the job would be read as one without a job.json (an imported job), and its setup compared with no other seed's"
	}
	return &InputError{File: name, Msg: fmt.Sprintf("is a link to %s, which leads to nothing readable (%s): %s; restore its target, or remove the link", to, errors.Unwrap(err), why)}
}

// notRegular is the refusal of a job's file (name as found, base its kind:
// result.json, test.json or job.json) that is not a regular file.
func notRegular(name, base string, m fs.FileMode) error {
	return badFile(name, "is not a regular file (%s): cairn reads a job's %s only from a regular file, as the job wrote it; put the job's own file there, or remove this one", filekind.Of(m), base)
}

// resultWalk walks a root for its result.json files: add is called for
// each, link (when not nil) for each symbolic link followed. seen holds
// the real paths of the folders walked, so that a link back up the tree
// is walked once. strict refuses a link that leads to nothing, whatever
// its name, and a folder named result.json: either would leave a job, or
// a method's jobs, out of the table unseen.
type resultWalk struct {
	seen      map[string]bool
	add, link func(name, abs string)
	strict    bool
}

// walk calls add(name, path) for every result.json under the folder abs
// (named name), following links to folders as a link to a result.json is
// followed: a job folder linked into the tree is one of its jobs.
func (w resultWalk) walk(abs, name string) error {
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	if w.seen[real] {
		return nil
	}
	w.seen[real] = true
	entries, err := os.ReadDir(abs)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p, n := filepath.Join(abs, e.Name()), filepath.Join(name, e.Name())
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			fi, err := os.Stat(p)
			if err != nil && (w.strict || e.Name() == ResultFile) {
				// A job's result, or a folder of jobs, that cannot be
				// read is not a job that never ran.
				return danglingLink(n, p, err)
			}
			if err != nil {
				continue // keying only: the aggregation refuses it
			}
			isDir = fi.IsDir()
			if w.link != nil && (isDir || e.Name() == ResultFile || e.Name() == TestFile || e.Name() == JobFile) {
				w.link(n, p)
			}
		}
		switch {
		case isDir && w.strict && e.Name() == ResultFile:
			return notRegular(n, ResultFile, fs.ModeDir)
		case isDir:
			if err := w.walk(p, n); err != nil {
				return err
			}
		case e.Name() == ResultFile:
			w.add(n, p)
		}
	}
	return nil
}

// ReadJob reads a result.json (name as found, resolved against dir), the
// job.json beside it if there is one, and, unless the job is to be
// skipped, the test.json beside it. skip is non-nil when the job is
// non-conformant and include is false; then the test file is not read,
// and every other check has been made.
func ReadJob(dir, name string, include bool) (*Job, *Skip, error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, name)
	}
	var r resultDoc
	data, err := decodeFile(path, name, &r)
	if err != nil {
		return nil, nil, err
	}
	if r.Format == nil {
		return nil, nil, badFile(name, "has no \"format\": a job's result.json says \"format\": %q", ResultFormat)
	}
	if *r.Format != ResultFormat {
		return nil, nil, badFile(name, "format %q is not one cairn reads (want %q)", *r.Format, ResultFormat)
	}
	if err := checkResultFields(name, data, &r); err != nil {
		return nil, nil, err
	}
	j := &Job{
		File: name, Status: *r.Status, Method: *r.Method, CellID: *r.CellID,
		Dataset: *r.Dataset, Runtime: *r.Runtime, Model: *r.Model, Seed: *r.Seed,
		Nonconformant: *r.Nonconformant,
	}
	switch {
	case j.Method == "" || strings.IndexFunc(j.Method, unicode.IsControl) >= 0:
		return nil, nil, badFile(name, "method %q must be a non-empty name without tabs, newlines or other control characters", j.Method)
	case j.CellID == "" || strings.IndexFunc(j.CellID, func(r rune) bool { return r == ' ' || unicode.IsControl(r) }) >= 0:
		return nil, nil, badFile(name, "cell_id %q must be a non-empty id without spaces, tabs, newlines or other control characters", j.CellID)
	case j.CellID != j.Dataset+"/"+j.Runtime+"/"+j.Model:
		return nil, nil, badFile(name, "cell_id %q is not dataset/runtime/model (%q/%q/%q)", j.CellID, j.Dataset, j.Runtime, j.Model)
	case j.Dataset == "" || j.Runtime == "" || j.Model == "":
		return nil, nil, badFile(name, "cell_id %q has an empty part (dataset %q, runtime %q, model %q): each names something", j.CellID, j.Dataset, j.Runtime, j.Model)
	}
	imported := r.imported()
	if err := checkProvenance(name, &r, imported); err != nil {
		return nil, nil, err
	}
	// The job.json, which needs no test item, is read for a job skipped
	// too: as for the result.json's own checks above, whether it is
	// refused does not depend on include.
	if err := j.readSetup(name, path, data, imported); err != nil {
		return nil, nil, err
	}
	if len(j.Nonconformant) > 0 && !include {
		return j, &Skip{File: name, Reasons: j.Nonconformant, Nonconformant: true}, nil
	}
	if err := j.readTests(&r, name, path); err != nil {
		return nil, nil, err
	}
	return j, nil, nil
}

// checkResultFields refuses a result.json that lacks a field (null only
// for fallback_reason), gives an empty non-conformance reason, or whose
// figures contradict each other: test_invalid_items is from 0 to
// test_items, which is 1 or more; valid_for_aggregation is "nonconformant
// empty and test_invalid_items 0"; delta_pp is 100 × (deployed_mean −
// baseline_mean) of the rounded means, the seed bundle deployed has equal
// means and a fallback reason, the incumbent none. These need only the
// result.json: they are made before a job is skipped.
func checkResultFields(name string, data []byte, r *resultDoc) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return badFile(name, "is not a JSON object")
	}
	for _, f := range resultFields {
		v, ok := keys[f]
		if !ok {
			return badFile(name, "has no %q: every job's result.json has it (docs/job-artifacts.md); was the file edited?", f)
		}
		if f != "fallback_reason" && !slices.Contains(meanFields, f) && string(bytes.TrimSpace(v)) == "null" {
			return badFile(name, "has %q null: see docs/job-artifacts.md", f)
		}
	}
	for i, why := range *r.Nonconformant {
		if strings.TrimSpace(why) == "" {
			return badFile(name, "nonconformant[%d] is empty: each reason is a sentence saying why the job is not part of the experiment", i)
		}
	}
	// The counts of test items, which the means and
	// valid_for_aggregation follow (test.json is read against them after).
	if *r.TestItems < 1 {
		return badFile(name, "says test_items = %d: a job is tested on one item at least, and its test.json lists them", *r.TestItems)
	}
	if n := *r.TestInvalidItems; n < 0 || n > *r.TestItems {
		return badFile(name, "says test_invalid_items = %d, but the invalid items are among its %d test items (0 to %d): the file contradicts itself", n, *r.TestItems, *r.TestItems)
	}
	if v := *r.ValidForAggregation; v != (len(*r.Nonconformant) == 0 && *r.TestInvalidItems == 0) {
		return badFile(name, "says valid_for_aggregation = %t, but it is true exactly when nonconformant is empty (here %d reasons) and test_invalid_items is 0 (here %d): the file contradicts itself", v, len(*r.Nonconformant), *r.TestInvalidItems)
	}
	// The means and delta_pp are null exactly when no test item is valid:
	// a mean of none is no figure (test.json is read against this after).
	noneValid := *r.TestInvalidItems == *r.TestItems
	for _, m := range []struct {
		field string
		v     *float64
	}{{"baseline_mean", r.BaselineMean}, {"deployed_mean", r.DeployedMean}, {"delta_pp", r.DeltaPP}} {
		switch {
		case m.v == nil && !noneValid:
			return badFile(name, "has %q null, but %d of its %d test items are valid: a job with valid items gives their means (docs/job-artifacts.md)", m.field, *r.TestItems-*r.TestInvalidItems, *r.TestItems)
		case m.v != nil && noneValid:
			return badFile(name, "says %s = %g, but none of its %d test items is valid (test_invalid_items = %d): a mean of no items is null, so the figure comes from nowhere", m.field, *m.v, *r.TestItems, *r.TestInvalidItems)
		}
	}
	var b, d float64
	if !noneValid {
		b, d = *r.BaselineMean, *r.DeployedMean
		delta := *r.DeltaPP
		if want := 100 * (d - b); !(math.Abs(delta-want) <= 5.0001e-7+1e-12*math.Abs(want)) {
			return badFile(name, "says delta_pp = %g, but 100 × (deployed_mean − baseline_mean) is %g: the file contradicts itself", delta, want)
		}
	}
	switch *r.Deployed {
	case "incumbent":
		if r.FallbackReason != nil {
			return badFile(name, "deploys the incumbent but gives fallback_reason %q, which only a seed bundle deployed has: the file contradicts itself", *r.FallbackReason)
		}
	case "seed":
		if r.FallbackReason == nil {
			return badFile(name, "deploys the seed bundle with fallback_reason null: a seed bundle deployed says why (incumbent_not_better, no_incumbent or validation_invalid)")
		}
		if !slices.Contains(FallbackReasons, *r.FallbackReason) {
			return badFile(name, "fallback_reason %q is not one of %s: a seed bundle is deployed for one of those reasons (docs/job-artifacts.md)", *r.FallbackReason, strings.Join(FallbackReasons, ", "))
		}
		if b != d {
			return badFile(name, "deploys the seed bundle, yet baseline_mean %g and deployed_mean %g differ: the file contradicts itself", b, d)
		}
	default:
		return badFile(name, "deployed %q is neither \"incumbent\" nor \"seed\"", *r.Deployed)
	}
	return nil
}

// imported says whether cairn import made the job: its result.json has a
// source (docs/job-artifacts.md), which a job cairn ran never has.
func (r *resultDoc) imported() bool {
	return len(r.Source) > 0 && string(bytes.TrimSpace(r.Source)) != "null"
}

// checkProvenance refuses a result.json (name) that is neither a job
// cairn ran nor one it imported, consistently: an imported job (a source)
// has budget and charged_rollouts 0 and an empty selection_sha256; a job
// cairn ran names the selection its result was made from. An empty
// selection_sha256 without a source would leave the job's chain
// (selection.json, optimization.json) unchecked.
func checkProvenance(name string, r *resultDoc, imported bool) error {
	sel := *r.SelectionSHA256
	switch {
	case imported && (*r.Budget != 0 || *r.ChargedRollouts != 0 || sel != ""):
		return badFile(name, "has a \"source\", so cairn import made it, but budget %d, charged_rollouts %d and selection_sha256 %q: an imported job has 0, 0 and \"\" (docs/job-artifacts.md); the file contradicts itself", *r.Budget, *r.ChargedRollouts, sel)
	case !imported && sel == "":
		return badFile(name, "has selection_sha256 \"\", which only a job cairn import made has (with a \"source\"), and no source: a job cairn ran names the digest of the selection.json its result was made from, which is checked with the optimization.json before it; restore the job's result.json, or apply the job again")
	}
	return nil
}

// checkChain refuses a result (r, read from path, as name) that no
// longer follows from the job's artifacts before it: a selection.json
// that is not the one its selection_sha256 names, or an optimization.json
// that is not the one that selection.json's optimization_sha256 names (an
// optimization run again since, or a file edited): the figures would be
// of a job whose optimization or selection is not there any more. A
// result without selection_sha256 (imported) has none to check.
func checkChain(r *resultDoc, name, path string) error {
	if r.SelectionSHA256 == nil || *r.SelectionSHA256 == "" {
		return nil
	}
	dir := filepath.Dir(path)
	selName := filepath.Join(filepath.Dir(name), SelectionFile)
	const again = "the job's selection, test and result are not those of the artifacts in its folder: apply the job again with --replace naming its select node, which makes them anew"
	if ok, err := present(filepath.Join(dir, SelectionFile), selName); !ok {
		if err != nil {
			return err
		}
		return badFile(name, "names a %s (selection_sha256 %s), but there is none beside it: %s", SelectionFile, *r.SelectionSHA256, again)
	}
	sel, err := readRegular(filepath.Join(dir, SelectionFile), selName)
	if err != nil {
		return err
	}
	if got := digestOf(sel); got != *r.SelectionSHA256 {
		return badFile(selName, "is not the selection this result was made from: its digest is %s, %s's selection_sha256 is %s (a selection made again since, or the file edited): %s", got, ResultFile, *r.SelectionSHA256, again)
	}
	var doc struct {
		Optimization *string `json:"optimization_sha256"`
	}
	if json.Unmarshal(sel, &doc) != nil || doc.Optimization == nil || *doc.Optimization == "" {
		return nil
	}
	optName := filepath.Join(filepath.Dir(name), OptimizationFile)
	if ok, err := present(filepath.Join(dir, OptimizationFile), optName); !ok {
		if err != nil {
			return err
		}
		return badFile(selName, "names an %s (optimization_sha256 %s), but there is none beside it: %s", OptimizationFile, *doc.Optimization, again)
	}
	opt, err := readRegular(filepath.Join(dir, OptimizationFile), optName)
	if err != nil {
		return err
	}
	if got := digestOf(opt); got != *doc.Optimization {
		return badFile(optName, "is not the optimization the job's selection and result were made from: its digest is %s, %s's optimization_sha256 is %s (the optimization run again since, an earlier one set aside, or the file edited): %s", got, SelectionFile, *doc.Optimization, again)
	}
	return nil
}

// digestOf is the digest of data as the job's artifacts write them.
func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// readTests reads the test.json beside the job's result.json (r, read
// from path, as name) into j: its items, checked against the result.
func (j *Job) readTests(r *resultDoc, name, path string) error {
	j.TestFile = filepath.Join(filepath.Dir(name), TestFile)
	tpath := filepath.Join(filepath.Dir(path), TestFile)
	if ok, err := present(tpath, j.TestFile); !ok {
		if err != nil {
			return err
		}
		return badFile(name, "has no %s beside it: the job's paired test scores are missing", TestFile)
	}
	var t testDoc
	tdata, err := decodeFile(tpath, j.TestFile, &t)
	if err != nil {
		return err
	}
	{
		if got := digestOf(tdata); got != *r.TestSHA256 {
			if len(r.Source) > 0 && string(r.Source) != "null" {
				return badFile(j.TestFile, "is not the file the import wrote: its digest is %s, %s's test_sha256 is %s (was it edited after the import, or an import into this folder interrupted? cairn import --job writes both files again)", got, ResultFile, *r.TestSHA256)
			}
			return badFile(j.TestFile, "is not the file the job wrote: its digest is %s, %s's test_sha256 is %s (was it edited after the job ended?)", got, ResultFile, *r.TestSHA256)
		}
	}
	if err := checkChain(r, name, path); err != nil {
		return err
	}
	if t.Format == nil || *t.Format != TestFormat {
		got := "no \"format\""
		if t.Format != nil {
			got = fmt.Sprintf("format %q", *t.Format)
		}
		return badFile(j.TestFile, "has %s; cairn reads %q", got, TestFormat)
	}
	agree := func(field string, got *string, want string) error {
		if got == nil {
			return badFile(j.TestFile, "has no %q", field)
		}
		if *got != want {
			return badFile(j.TestFile, "%s %q disagrees with %s's %q", field, *got, ResultFile, want)
		}
		return nil
	}
	if err := agree("method", t.Method, j.Method); err != nil {
		return err
	}
	if err := agree("cell_id", t.CellID, j.CellID); err != nil {
		return err
	}
	if err := agree("deployed", t.Deployed, *r.Deployed); err != nil {
		return err
	}
	if t.Seed == nil {
		return badFile(j.TestFile, "has no \"seed\"")
	}
	if *t.Seed != j.Seed {
		return badFile(j.TestFile, "seed %d disagrees with %s's seed %d", *t.Seed, ResultFile, j.Seed)
	}
	if t.Items == nil {
		return badFile(j.TestFile, "has no \"items\"")
	}
	items := make([]Item, 0, len(*t.Items))
	seen := make(map[string]int, len(*t.Items))
	for i, it := range *t.Items {
		where := fmt.Sprintf("items[%d]", i)
		if it.ID == nil || *it.ID == "" {
			return badFile(j.TestFile, "%s has no \"id\"", where)
		}
		where += fmt.Sprintf(" (id %q)", *it.ID)
		if first, dup := seen[*it.ID]; dup {
			return badFile(j.TestFile, "%s repeats the id of items[%d]: ids must be unique", where, first)
		}
		seen[*it.ID] = i
		if it.Valid == nil {
			return badFile(j.TestFile, "%s has no \"valid\"", where)
		}
		x := Item{ID: *it.ID, Valid: *it.Valid}
		if x.Valid {
			switch {
			case it.Baseline == nil && it.Deployed == nil:
				return badFile(j.TestFile, "%s is valid but has neither score: a valid item pairs a baseline and a deployed score", where)
			case it.Baseline == nil:
				return badFile(j.TestFile, "%s is valid but its baseline score is null: it has no pair", where)
			case it.Deployed == nil:
				return badFile(j.TestFile, "%s is valid but its deployed score is null: it has no pair", where)
			}
			x.Baseline, x.Deployed = *it.Baseline, *it.Deployed
			if *r.Deployed == "seed" && x.Deployed != x.Baseline {
				return badFile(j.TestFile, "%s: deployed %g differs from baseline %g, but the job deployed the seed bundle, which is the baseline: its scores are the same numbers (docs/job-artifacts.md)", where, x.Deployed, x.Baseline)
			}
			if err := CheckScores(x.Baseline, x.Deployed, len(*t.Items)); err != nil {
				return badFile(j.TestFile, "%s: %s", where, err)
			}
		} else {
			j.Invalid++
		}
		items = append(items, x)
	}
	if len(items) == 0 {
		return badFile(j.TestFile, "has no test items")
	}
	if len(items) != *r.TestItems {
		return badFile(j.TestFile, "holds %d items where %s says test_items = %d", len(items), ResultFile, *r.TestItems)
	}
	if j.Invalid != *r.TestInvalidItems {
		return badFile(j.TestFile, "holds %d invalid items where %s says test_invalid_items = %d", j.Invalid, ResultFile, *r.TestInvalidItems)
	}
	slices.SortFunc(items, func(a, b Item) int { return strings.Compare(a.ID, b.ID) })
	if err := checkMeans(name, j.TestFile, items, r.BaselineMean, r.DeployedMean); err != nil {
		return err
	}
	j.Items = items
	return nil
}

// checkMeans refuses a result.json whose baseline_mean or deployed_mean
// is not the mean of test.json's valid items (sorted by id), rounded to 6
// places as the job writes it: the table is computed from test.json, and a
// result.json that says otherwise is not the same job.
func checkMeans(name, testName string, items []Item, baseline, deployed *float64) error {
	var sumB, sumD float64
	valid := 0
	for _, it := range items {
		if it.Valid {
			sumB += it.Baseline
			sumD += it.Deployed
			valid++
		}
	}
	if valid == 0 {
		// checkResultFields saw the means null, and test.json's items
		// were counted against test_items and test_invalid_items.
		return nil
	}
	for _, m := range []struct {
		field string
		given *float64
		sum   float64
	}{{"baseline_mean", baseline, sumB}, {"deployed_mean", deployed, sumD}} {
		if m.given == nil {
			return badFile(name, "has %s null, but %s has %d valid items", m.field, testName, valid)
		}
		// The job rounds the mean to 6 places: it may be off by half a
		// millionth, and by float64's own error on a large one.
		mean := m.sum / float64(valid)
		if !(math.Abs(*m.given-mean) <= 5.0001e-7+1e-12*math.Abs(mean)) {
			return badFile(name, "says %s = %g, but the mean of %s's %d valid items is %g: the two files are not one job's", m.field, *m.given, testName, valid, mean)
		}
	}
	return nil
}

// ScoreLimit is the largest magnitude a score, and a paired difference
// (deployed − baseline), of a job with n test items may have:
// math.MaxFloat64 / (16 · max(n, 100)). Within it, every sum over a seed's
// items (n terms at most), every mean and bootstrap replicate, every value
// in percentage points and the difference of two (the percentiles'
// interpolation), and every coordinate of the forest plot's axis is finite.
func ScoreLimit(n int) float64 {
	return math.MaxFloat64 / (16 * float64(max(n, 100)))
}

// CheckScores says why a valid item's pair of scores, of a job with n
// test items, can give no figure: a score, or deployed − baseline, beyond
// ScoreLimit(n). It is nil for a pair within it.
func CheckScores(baseline, deployed float64, n int) error {
	limit := ScoreLimit(n)
	for _, v := range []struct {
		what string
		v    float64
	}{{"baseline score", baseline}, {"deployed score", deployed}, {"deployed − baseline", deployed - baseline}} {
		if !(math.Abs(v.v) <= limit) {
			return fmt.Errorf("the %s %g is beyond ±%.2g, the largest magnitude whose sums over %d items cairn can add without overflow; nothing can be computed from it", v.what, v.v, limit, n)
		}
	}
	return nil
}

// decodeFile reads one JSON object from path into v; a file that does not
// parse is an *InputError naming the file and the line and column.
func decodeFile(path, name string, v any) ([]byte, error) {
	data, err := readRegular(path, name)
	if err != nil {
		return nil, err
	}
	return data, decodeData(data, name, v)
}

// readRegular reads the job's file at path (name as found), refusing one
// that is not a regular file without waiting on it: a named pipe is opened
// without waiting for a writer (O_NONBLOCK) and never read, and the file
// opened is the one checked (fstat), whatever took its place since.
func readRegular(path, name string) ([]byte, error) {
	base := filepath.Base(path)
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, notRegular(name, base, fi.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, badFile(name, "cannot be read: %s", errors.Unwrap(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, badFile(name, "cannot be read: %s", errors.Unwrap(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(name, base, fi.Mode())
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, badFile(name, "cannot be read: %s", errors.Unwrap(err))
	}
	return data, nil
}

// decodeData is decodeFile's reading of the file's bytes.
func decodeData(data []byte, name string, v any) error {
	if bytes.HasPrefix(data, jsonpos.BOM) {
		return badAt(name, data, 0, "%s", jsonpos.BOMMessage)
	}
	if off := jsonpos.NotUTF8(data); off >= 0 {
		return badAt(name, data, int64(off), "%s", jsonpos.NotUTF8Message)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(v)
	if err == nil {
		end := dec.InputOffset()
		if _, extra := dec.Token(); extra != io.EOF {
			return badAt(name, data, end+int64(len(data[end:])-len(bytes.TrimLeft(data[end:], " \t\r\n"))), "more after the JSON object: a job's file holds one object and nothing else")
		}
		if p, off, dup := jsonpos.FirstDuplicate(data); dup {
			return badAt(name, data, int64(off), "%s is given twice: JSON readers disagree on which one counts, so give it once", p)
		}
		// A struct's fields match keys in any letter case: "Deployed"
		// after "deployed" would be read as it, where other readers see
		// two keys.
		if reflect.TypeOf(v).Elem().Kind() == reflect.Struct {
			if p, off, dup := jsonpos.FirstFoldDuplicate(data); dup {
				return badAt(name, data, int64(off), "%s is given twice, in two letter cases: JSON readers disagree on whether that is one key, so give it once, as docs/job-artifacts.md spells it", p)
			}
			// Alone, it would be read as the field other readers do not
			// see: "Baseline" is not "baseline".
			if keys := jsonpos.InexactKeys(data, reflect.TypeOf(v).Elem()); len(keys) > 0 {
				return badAt(name, data, int64(keys[0].Off), "%s is not a field: field names are matched exactly, in their letter case, so give it as docs/job-artifacts.md spells it", keys[0].Path)
			}
		}
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return badAt(name, data, syn.Offset, "not valid JSON: %s", strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		if typ.Field == "" {
			return badAt(name, data, typ.Offset, "want a JSON object, got %s", typ.Value)
		}
		// The field as encoding/json names it leaves out which item:
		// "items[9].baseline", where the value starts, says.
		field, off := jsonpos.ValueAt(data, typ.Field, typ.Offset)
		if strings.HasPrefix(typ.Value, "number ") && typ.Type.Kind() == reflect.Float64 {
			return badAt(name, data, off, "%s is the %s, beyond what a 64-bit float holds (about ±1.8e308)", field, typ.Value)
		}
		if n, ok := strings.CutPrefix(typ.Value, "number "); ok && typ.Type.Kind() == reflect.Int && strings.Trim(n, "-0123456789") == "" {
			return badAt(name, data, off, "%s is the whole number %s, beyond what cairn reads (at most %d)", field, n, math.MaxInt)
		}
		return badAt(name, data, off, "%s is %s, want %s", field, typ.Value, friendlyType(typ.Type.String()))
	case errors.Is(err, io.EOF):
		return badFile(name, "is empty: want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badAt(name, data, int64(len(data)), "not valid JSON: the file ends before the object does (cut short?)")
	}
	return badAt(name, data, dec.InputOffset(), "not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

func friendlyType(t string) string {
	switch strings.TrimLeft(t, "*[]") {
	case "string":
		if strings.Contains(t, "[]") {
			return "a list of strings"
		}
		return "a string"
	case "int":
		return "a whole number"
	case "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "aggregate.itemDoc":
		if strings.HasPrefix(strings.TrimLeft(t, "*"), "[]") {
			return "a list of objects" // items itself, not one of them
		}
		return "an object"
	}
	return t
}

// position is the 1-based line and column (in bytes) of offset in data.
func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	if offset < 0 {
		offset = 0
	}
	prefix := data[:offset]
	line = 1 + bytes.Count(prefix, []byte{'\n'})
	col = int(offset) - bytes.LastIndexByte(prefix, '\n')
	return line, col
}

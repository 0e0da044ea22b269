package decision

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairn-run/cairn/storage/digest"
)

// InputsKey names, in the replay's JSON, the files the replay read.
const InputsKey = "inputs"

// Input is a file a replay read: its path as given, and the sha256 of
// its bytes.
type Input struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
}

// InputOf names data, read from file.
func InputOf(file string, data []byte) Input {
	sum := sha256.Sum256(data)
	return Input{File: file, SHA256: hex.EncodeToString(sum[:])}
}

// Inputs are the files a replay read, and what was checked of the files
// the protocol froze.
type Inputs struct {
	Protocol Input       `json:"protocol"`
	Outcomes Input       `json:"outcomes"`
	Frozen   FrozenCheck `json:"frozen_files"`
	// NotMeasured, set by Replay, says which of the outcomes the figures
	// rest on are not measurements; nil when every one is.
	NotMeasured *NotMeasured `json:"not_measured,omitempty"`
}

// NotMeasuredKey names NotMeasured in the replay's JSON.
const NotMeasuredKey = "not_measured"

// NotMeasured counts the planned slots whose outcome is not a
// measurement: Simulated, judged on simulated GPUs (made-up peaks), and
// Absent, left out of the outcomes file (counted unresolved with one
// started attempt: the file cannot say whether they started, or at what
// cost), in protocol order.
type NotMeasured struct {
	Planned   int      `json:"planned"`
	Simulated int      `json:"simulated"`
	Absent    []string `json:"absent"`
}

// notMeasured is what Replay says of o's outcomes of p's slots (nil:
// every one measured).
func notMeasured(p *Protocol, o Outcomes) *NotMeasured {
	m := &NotMeasured{Absent: []string{}}
	for _, s := range p.Slots() {
		m.Planned++
		if _, given := o[s.ID]; !given {
			m.Absent = append(m.Absent, s.ID)
		}
		if o.Of(s.ID).Simulated {
			m.Simulated++
		}
	}
	if m.Simulated == 0 && len(m.Absent) == 0 {
		return nil
	}
	return m
}

// AbsentNote is the line of the table's header for a replay of outcomes
// that leave planned slots out ("" when none is).
func (in Inputs) AbsentNote() string {
	m := in.NotMeasured
	if m == nil || len(m.Absent) == 0 {
		return ""
	}
	ids := m.Absent
	more := ""
	if len(ids) > 3 {
		ids, more = ids[:3], fmt.Sprintf(" and %d more", len(ids)-3)
	}
	verb := "are"
	if len(m.Absent) == 1 {
		verb = "is"
	}
	return fmt.Sprintf("absent: %d of the %d planned slots %s not in the outcomes file, each counted unresolved with 1 started attempt (the file cannot say whether it started, or at what cost): %s%s",
		len(m.Absent), m.Planned, verb, strings.Join(ids, ", "), more)
}

// SimulatedNote is the line of the table's header, and the words of the
// decision stage's heading, for a replay of outcomes judged on simulated
// GPUs ("" when none was).
func (in Inputs) SimulatedNote() string {
	m := in.NotMeasured
	if m == nil || m.Simulated == 0 {
		return ""
	}
	return fmt.Sprintf("SIMULATED: the outcomes of %d of the %d planned slots were judged on simulated GPUs (made-up peak memory): no figure resting on them is a measurement", m.Simulated, m.Planned)
}

// FrozenCheck is what CheckFrozen found of the files the protocol froze
// (source_files_sha256, data_files_sha256, implementation_sha256 and
// matrix_sha256).
type FrozenCheck struct {
	// Matched are the pinned files present with the protocol's digest,
	// as the protocol names them.
	Matched []string `json:"matched"`
	// Absent are the pinned files not there: not checked.
	Absent []string `json:"absent"`
	// Matrix is the file found to have matrix_sha256, "" when no matrix
	// file was given (not checked).
	Matrix string `json:"matrix"`
}

// pinSet is one of the protocol's fields that pin files: its name, and
// its paths with their digests.
type pinSet struct {
	field string
	pins  map[string]string
}

func (p *Protocol) pinSets() []pinSet {
	return []pinSet{{"source_files_sha256", p.SourceFilesSHA256}, {"data_files_sha256", p.DataFilesSHA256}, {"implementation_sha256", p.ImplementationSHA256}}
}

// pins are the files the protocol pins in source_files_sha256,
// data_files_sha256 and implementation_sha256, each with its digest and
// the field that pins it, by cleaned path (a path pinned twice: the last
// field's; ParseProtocol refuses two digests for one file).
func (p *Protocol) pins() map[string][2]string {
	pinned := map[string][2]string{} // path -> digest, field
	for _, set := range p.pinSets() {
		for f, d := range set.pins {
			if f != "" {
				f = filepath.Clean(f) // "a/./b" is "a/b"
			}
			pinned[f] = [2]string{d, set.field}
		}
	}
	return pinned
}

// notInFolder says why a pinned path is not a path inside the protocol's
// folder ("" when it is one): the files a protocol pins are named
// relative to its folder, inside it, so that it pins the files of its
// own folder wherever that is, and nothing else.
func notInFolder(f string) string {
	switch {
	case f == "":
		return "names no file"
	case filepath.IsAbs(f):
		return "is an absolute path"
	case !filepath.IsLocal(f):
		return "leaves the protocol's folder"
	}
	return ""
}

// FrozenFiles are the paths of the files the protocol pins (relative to
// its folder, inside it), sorted, each once.
func (p *Protocol) FrozenFiles() []string {
	return slices.Sorted(maps.Keys(p.pins()))
}

// CheckFrozen checks the files the protocol pins in source_files_sha256,
// data_files_sha256 and implementation_sha256 that are present in dir
// (the protocol's paths are relative to it), and the matrix file against
// matrix_sha256 when one is given. A present file with another digest is
// an error naming it and both digests, as is a matrix file that cannot be
// read or differs; an absent pinned file is listed as not checked. A
// pinned file is read only inside dir: a path that is absolute or leaves
// dir, and one that resolves through a symlink to a place outside it, is
// an error, and is not read.
func (p *Protocol) CheckFrozen(dir, matrix string) (FrozenCheck, error) {
	c := FrozenCheck{Matched: []string{}, Absent: []string{}}
	var errs Errors
	pinned := p.pins()
	dirReal, dirErr := filepath.EvalSymlinks(dir)
	for _, f := range p.FrozenFiles() {
		want, field := pinned[f][0], pinned[f][1]
		if why := notInFolder(f); why != "" {
			errs = append(errs, &Error{File: f, Msg: fmt.Sprintf("the protocol's %s pins it, but it is not a path inside the protocol's folder %s (it %s): not read; name a file by its path inside the protocol's folder", field, dir, why)})
			continue
		}
		full := filepath.Join(dir, f)
		real, err := filepath.EvalSymlinks(full)
		if err == nil && dirErr != nil {
			err = dirErr
		}
		if err == nil {
			if rel, rerr := filepath.Rel(dirReal, real); rerr != nil || !filepath.IsLocal(rel) {
				errs = append(errs, &Error{File: full, Msg: fmt.Sprintf("the protocol's %s pins it, but it resolves through a symlink to %s, outside the protocol's folder %s: not read; point the link at a file inside the folder, or copy the file into it", field, real, dirReal)})
				continue
			}
		}
		got := ""
		if err == nil {
			got, err = digest.File(real)
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			c.Absent = append(c.Absent, f)
		case err != nil:
			errs = append(errs, &Error{File: full, Msg: fmt.Sprintf("the protocol's %s pins it to sha256 %s, but %s", field, want, err)})
		case got != strings.ToLower(want):
			errs = append(errs, &Error{File: full, Msg: fmt.Sprintf("the protocol's %s pins it to sha256 %s, but the file's sha256 is %s: it is not the file the protocol froze", field, want, got)})
		default:
			c.Matched = append(c.Matched, f)
		}
	}
	if matrix != "" {
		got, err := digest.File(matrix)
		switch {
		case p.MatrixSHA256 == "":
			errs = append(errs, &Error{File: matrix, Msg: "the protocol gives no matrix_sha256 to check the matrix file against"})
		case err != nil:
			errs = append(errs, &Error{File: matrix, Msg: fmt.Sprintf("the matrix file cannot be checked against the protocol's matrix_sha256 %s: %s", p.MatrixSHA256, err)})
		case got != strings.ToLower(p.MatrixSHA256):
			errs = append(errs, &Error{File: matrix, Msg: fmt.Sprintf("the protocol's matrix_sha256 is %s, but the file's sha256 is %s: it is not the matrix the protocol froze", p.MatrixSHA256, got)})
		default:
			c.Matrix = matrix
		}
	}
	if len(errs) > 0 {
		return c, errs
	}
	return c, nil
}

// CheckSHA256 refuses a protocol whose sha256 is not want (hex, either
// case): it is not the protocol that was frozen.
func (p *Protocol) CheckSHA256(want string) error {
	w := strings.ToLower(strings.TrimSpace(want))
	if _, err := hex.DecodeString(w); err != nil || len(w) != 2*sha256.Size {
		return fmt.Errorf("the expected sha256 %q is not 64 hex digits", want)
	}
	if w != p.SHA256 {
		return &Error{File: p.File, Msg: fmt.Sprintf("the protocol's sha256 is %s, but %s is expected: it is not the protocol that was frozen (an edited copy?)", p.SHA256, w)}
	}
	return nil
}

// Describe is the table's header: the files read, what was checked, and
// which outcomes are not measurements (absent, simulated); the run report
// heads the replay's table with it too.
func (in Inputs) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "protocol  %s  sha256 %s\n", in.Protocol.File, in.Protocol.SHA256)
	fmt.Fprintf(&b, "outcomes  %s  sha256 %s\n", in.Outcomes.File, in.Outcomes.SHA256)
	for _, note := range []string{in.AbsentNote(), in.SimulatedNote()} {
		if note != "" {
			b.WriteString(note + "\n")
		}
	}
	f := in.Frozen
	fmt.Fprintf(&b, "frozen files: %d match the protocol's sha256", len(f.Matched))
	if len(f.Absent) > 0 {
		fmt.Fprintf(&b, ", %d absent (not checked)", len(f.Absent))
	}
	if f.Matrix != "" {
		fmt.Fprintf(&b, "; matrix %s matches matrix_sha256\n", f.Matrix)
	} else {
		b.WriteString("; matrix_sha256 not checked (no matrix file given)\n")
	}
	return b.String()
}

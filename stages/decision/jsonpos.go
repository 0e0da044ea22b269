package decision

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/cairn-run/cairn/stages/jsonpos"
)

// Error is one problem in a JSON input file, at a position people can go
// to: "protocol.json:12:7: cases[0].query_order[2]: ...".
type Error struct {
	File      string
	Line, Col int // 1-based; 0 when the problem has no one place
	Msg       string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Errors is every problem found in one file, in file order.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// source is a JSON file with the position of every value in it, by path
// (`cases[0].candidates[1].slot_ids.screen[0]`), so that a check on the
// decoded value can say where in the file the value was written.
type source struct {
	file string
	data []byte
	val  map[string]int // path -> byte offset of the value
	key  map[string]int // path -> byte offset of its key (object members)
	errs Errors
}

// readSource indexes data. It reports syntax errors and duplicate keys
// (encoding/json would keep the last of two silently).
func readSource(file string, data []byte) *source {
	s := &source{file: file, data: data, val: map[string]int{}, key: map[string]int{}}
	if bytes.HasPrefix(data, jsonpos.BOM) {
		s.errorf(0, "%s", jsonpos.BOMMessage)
		return s
	}
	if off := jsonpos.NotUTF8(data); off >= 0 {
		s.errorf(off, "%s", jsonpos.NotUTF8Message)
		return s
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	err := jsonpos.Walk(dec, data, "", jsonpos.Visitor{
		Value: func(p string, off int) { s.val[p] = off },
		Key: func(p string, off int) {
			if _, dup := s.key[p]; dup {
				s.errorf(off, "%s is given twice: JSON readers disagree on which one counts, so give it once", p)
			}
			s.key[p] = off
		},
	})
	if err != nil {
		s.syntax(err, dec)
		return s
	}
	if _, err := dec.Token(); err != io.EOF {
		s.errorf(int(dec.InputOffset()), "more than one JSON value in the file: it must hold one object")
	}
	return s
}

func (s *source) syntax(err error, dec *json.Decoder) {
	var se *json.SyntaxError
	off := int(dec.InputOffset())
	if errors.As(err, &se) {
		off = int(se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		off = len(s.data)
		err = errors.New("the file ends in the middle of a JSON value")
	}
	s.errorf(off, "not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// lineCol turns a byte offset into a 1-based line and column (in bytes).
func (s *source) lineCol(off int) (int, int) {
	if off > len(s.data) {
		off = len(s.data)
	}
	before := s.data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := off - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

func (s *source) errorf(off int, format string, args ...any) {
	e := &Error{File: s.file, Msg: fmt.Sprintf(format, args...)}
	if off >= 0 {
		e.Line, e.Col = s.lineCol(off)
	}
	s.errs = append(s.errs, e)
}

// at reports a problem with the value at path (its key when the value is
// missing there, the file when neither is).
func (s *source) at(path, format string, args ...any) {
	off, ok := s.val[path]
	if !ok {
		if off, ok = s.key[path]; !ok {
			off = -1
		}
	}
	s.errorf(off, "%s: %s", path, fmt.Sprintf(format, args...))
}

// atKey reports a problem with the object member at path, at its key.
func (s *source) atKey(path, format string, args ...any) {
	off, ok := s.key[path]
	if !ok {
		off = -1
	}
	s.errorf(off, "%s: %s", path, fmt.Sprintf(format, args...))
}

// sorted is the errors in file order.
func (s *source) sorted() Errors {
	sort.SliceStable(s.errs, func(i, j int) bool {
		a, b := s.errs[i], s.errs[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return s.errs
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// has says whether the file gives a value at path.
func (s *source) has(path string) bool {
	_, ok := s.val[path]
	return ok
}

// inexactKeys reports every key of the file that encoding/json would take,
// decoding the file into a value of type t, for a field it names in
// another letter case ("Attempts" for "attempts"): field names are
// matched exactly, as other JSON readers match them, so such a key is an
// unknown field, not the field. It says whether there was one.
func (s *source) inexactKeys(t reflect.Type) bool {
	keys := jsonpos.InexactKeys(s.data, t)
	for _, k := range keys {
		s.errorf(k.Off, "%s: unknown field: field names are matched exactly, in their letter case; the known fields are listed in docs/decision.md", k.Path)
	}
	return len(keys) > 0
}

// decodeError places an error of encoding/json's decoder in the file.
func (s *source) decodeError(err error) {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "the file"
		}
		s.errorf(int(te.Offset)-1, "%s: %s where %s is expected", field, jsonKind(te.Value), goKind(te.Type.String()))
		return
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
		name, _ = strconv.Unquote(name)
		for p, off := range s.key {
			if p == name || strings.HasSuffix(p, "."+name) || strings.HasSuffix(p, "["+strconv.Quote(name)+"]") {
				s.errorf(off, "%s: unknown field; the known fields are listed in docs/decision.md", p)
				return
			}
		}
	}
	s.errorf(-1, "%s", msg)
}

func jsonKind(v string) string {
	switch v {
	case "number", "string", "bool", "array", "object":
		return "a " + v
	}
	if strings.HasPrefix(v, "number") {
		return "the number " + strings.TrimPrefix(v, "number ")
	}
	return v
}

func goKind(t string) string {
	switch {
	case strings.HasPrefix(t, "int"):
		return "a whole number"
	case strings.HasPrefix(t, "uint"):
		return "a whole number, 0 or more"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "an object"
	case t == "bool":
		return "true or false"
	}
	return "an object"
}

package decision

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
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
	// fatal is set when the file cannot be read as JSON at all (a syntax
	// error, a byte-order mark, a byte that is not UTF-8): its one error
	// is all that is said.
	fatal bool
	// bad are the paths of the values that could not be read as their
	// fields are (checkValues), and of keys given twice.
	bad map[string]bool
}

// MaxDepth is how deeply a protocol or outcomes file may nest its values:
// a protocol nests seven levels (cases, candidates, slot_ids, their
// lists), an outcomes file two. Deeper, readSource refuses the file
// before walking it: the walk keeps every value's path, as long as its
// depth, so a file of a few kilobytes nested thousands deep would take
// gigabytes.
const MaxDepth = 64

// readSource indexes data. It reports syntax errors and duplicate keys
// (encoding/json would keep the last of two silently).
func readSource(file string, data []byte) *source {
	s := &source{file: file, data: data, val: map[string]int{}, key: map[string]int{}, bad: map[string]bool{}}
	if bytes.HasPrefix(data, jsonpos.BOM) {
		s.errorf(0, "%s", jsonpos.BOMMessage)
		s.fatal = true
		return s
	}
	if off := jsonpos.NotUTF8(data); off >= 0 {
		s.errorf(off, "%s", jsonpos.NotUTF8Message)
		s.fatal = true
		return s
	}
	if off, deep := jsonpos.TooDeep(data, MaxDepth); deep {
		s.errorf(off, "a value nested more than %d levels deep: a protocol or outcomes file nests a few levels (docs/decision.md), and one nested this deep is not read (the file is checked no further)", MaxDepth)
		s.fatal = true
		return s
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	err := jsonpos.Walk(dec, data, "", jsonpos.Visitor{
		Value: func(p string, off int) { s.val[p] = off },
		Key: func(p string, off int) {
			if _, dup := s.key[p]; dup {
				s.errorf(off, "%s is given twice: JSON readers disagree on which one counts, so give it once", p)
				s.bad[p] = true
			}
			s.key[p] = off
		},
	})
	if err != nil {
		s.syntax(err, dec)
		s.fatal = true
		return s
	}
	if _, err := dec.Token(); err != io.EOF {
		s.errorf(int(dec.InputOffset()), "more than one JSON value in the file: it must hold one object")
		s.fatal = true
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
	s.errorf(off, "not valid JSON: %s (the file is checked no further)", strings.TrimPrefix(err.Error(), "json: "))
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
// missing there, the file when neither is), unless the value there, or
// one holding it, could not be read (related): that is reported already.
func (s *source) at(path, format string, args ...any) {
	if s.related(path) {
		return
	}
	off, ok := s.val[path]
	if !ok {
		if off, ok = s.key[path]; !ok {
			off = -1
		}
	}
	s.errorf(off, "%s: %s", path, fmt.Sprintf(format, args...))
}

// atKey reports a problem with the object member at path, at its key
// (unless related, as at).
func (s *source) atKey(path, format string, args ...any) {
	if s.related(path) {
		return
	}
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

// fieldUse is how a value is placed: as an element of a list or an
// object of any keys, or as a field of a struct, required or not.
type fieldUse int

const (
	element fieldUse = iota
	optionalField
	requiredField
)

// checkValues reports every value of the file at and under path (v, as
// decoded with UseNumber) that cannot be read as a value of type t: a
// null (unless t reads one itself, as Peak does), a value of another
// kind, a number out of range or that is not whole where a whole number
// is expected, and a key that is none of a struct's fields, matched
// exactly. Each is reported at its value (a key: at the key) with its
// full path, and each such value's path is marked bad, so that the
// checks of decoded values say nothing of it (encoding/json leaves it
// zero). nullHint, when it returns one, says what to give instead of a
// null at path.
func (s *source) checkValues(v any, t reflect.Type, path string, use fieldUse, nullHint func(path string) string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return // reads any value, and says itself what it cannot read
	}
	bad := func(format string, args ...any) {
		s.bad[path] = true
		s.errorf(s.val[path], "%s: %s", path, fmt.Sprintf(format, args...))
	}
	if v == nil {
		hint := ""
		if nullHint != nil {
			hint = nullHint(path)
		}
		switch {
		case hint != "":
		case use == requiredField:
			hint = "give " + typeWord(t) + ": the field is required"
		case use == optionalField:
			hint = "give " + typeWord(t) + ", or leave the field out"
		default:
			hint = "give " + typeWord(t)
		}
		bad("is null: %s", hint)
		return
	}
	mismatch := func() { bad("%s where %s is expected", valueWord(v), typeWord(t)) }
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			mismatch()
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			mismatch()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			mismatch()
			return
		}
		// The range of t.
		unsigned := t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64
		lo, hi := new(big.Int), new(big.Int).SetUint64(math.MaxUint64>>(64-t.Bits()))
		rangeWords := fmt.Sprintf("a whole number here is from 0 to %s", hi)
		if !unsigned {
			hi.SetInt64(math.MaxInt64 >> (64 - t.Bits()))
			lo.Neg(hi).Sub(lo, big.NewInt(1))
			rangeWords = fmt.Sprintf("a whole number is from %s to %s", lo, hi)
		}
		whole, exact := wholeNumber(string(n))
		switch {
		case whole == nil, unsigned && whole.Sign() < 0:
			mismatch()
		case whole.Cmp(hi) > 0, whole.Cmp(lo) < 0:
			bad("the number %s is out of range: %s", n, rangeWords)
		case !exact:
			// 1e2 or 8.0: encoding/json, and other readers, refuse it
			// where a whole number is expected, or read a float.
			bad("%s where %s is expected: write it as %s", valueWord(v), typeWord(t), whole)
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			mismatch()
			return
		}
		if why, ok := floatProblem(string(n), t.Bits()); !ok {
			mismatch()
		} else if why != "" {
			bad("%s", why)
		}
	case reflect.Slice, reflect.Array:
		list, ok := v.([]any)
		if !ok {
			mismatch()
			return
		}
		for i, e := range list {
			s.checkValues(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), element, nullHint)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			mismatch()
			return
		}
		for _, k := range sortedKeys(obj) {
			s.checkValues(obj[k], t.Elem(), jsonpos.Member(path, k), element, nullHint)
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			mismatch()
			return
		}
		fields := structFields(t)
		for _, k := range sortedKeys(obj) {
			kp := jsonpos.Member(path, k)
			f, known := fields[k]
			switch {
			case known:
				s.checkValues(obj[k], f.t, kp, f.use, nullHint)
			case foldsToOne(k, fields) != "":
				// encoding/json would take it for the field (and keep
				// the later of the two); other readers would not. The
				// field's decoded value is not the file's.
				s.errorf(s.key[kp], "%s: unknown field: field names are matched exactly, in their letter case; the known fields are listed in docs/decision.md", kp)
				s.bad[jsonpos.Member(path, foldsToOne(k, fields))] = true
			default:
				s.errorf(s.key[kp], "%s: unknown field; the known fields are listed in docs/decision.md", kp)
			}
		}
	}
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// structField is a field of a struct as a JSON object has it: its type,
// and whether the object must give it (its tag decision:"required").
type structField struct {
	t   reflect.Type
	use fieldUse
}

// structFields are the fields of struct type t by their JSON names.
func structFields(t reflect.Type) map[string]structField {
	out := map[string]structField{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		use := optionalField
		if f.Tag.Get("decision") == "required" {
			use = requiredField
		}
		out[name] = structField{f.Type, use}
	}
	return out
}

// foldsToOne returns the name of the field key names in another letter
// case, as encoding/json matches a key to a field ("" when none).
func foldsToOne(key string, fields map[string]structField) string {
	for name := range fields {
		if strings.EqualFold(key, name) {
			return name
		}
	}
	return ""
}

// valueWord names a value (decoded with UseNumber) in a message.
func valueWord(v any) string {
	switch v := v.(type) {
	case string:
		return "a string"
	case json.Number:
		return "the number " + string(v)
	case bool:
		return fmt.Sprintf("the value %t", v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return "null"
}

// typeWord names what a value of type t is, for a message.
func typeWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}

// wholeNumber returns the value of the JSON number n when it is a whole
// number (nil when it is not), and whether n writes it in digits alone
// (exact: "100", not "1e2" or "100.0"). An exponent beyond ±1000 is not
// written out: such a number, unless its digits are all 0, is taken for
// a whole number out of every range (a large exponent), or for none (a
// small one).
func wholeNumber(n string) (*big.Int, bool) {
	if _, err := strconv.ParseInt(n, 10, 64); err == nil || (!strings.ContainsAny(n, ".eE") && errors.Is(err, strconv.ErrRange)) {
		v, ok := new(big.Int).SetString(n, 10)
		return v, ok
	}
	mantissa, exp, hasExp := strings.Cut(strings.ToLower(n), "e")
	if hasExp {
		e, err := strconv.Atoi(exp)
		zero := !strings.ContainsAny(mantissa, "123456789")
		switch {
		case zero && (err != nil || e > 1000 || e < -1000):
			return new(big.Int), false
		case err != nil && strings.HasPrefix(exp, "-"), e < -1000:
			return nil, false
		case err != nil, e > 1000:
			v := new(big.Int).Exp(big.NewInt(10), big.NewInt(1001), nil)
			if strings.HasPrefix(mantissa, "-") {
				v.Neg(v)
			}
			return v, false
		}
	}
	r, ok := new(big.Rat).SetString(n)
	if !ok || !r.IsInt() {
		return nil, false
	}
	return new(big.Int).Set(r.Num()), false
}

// floatProblem says why the JSON number n cannot be held in a float of
// bits ("" when it can): too large (it would be read as infinity), or too
// near 0 (it would be read as 0: a donor's peak of 1e-400 as none, a
// guard of 1e-400 as no guard). ok is false when n is no number at all.
func floatProblem(n string, bits int) (why string, ok bool) {
	f, err := strconv.ParseFloat(n, bits)
	mantissa, _, _ := strings.Cut(strings.ToLower(n), "e")
	switch {
	case errors.Is(err, strconv.ErrRange):
		return fmt.Sprintf("the number %s is too large to be held: a number is at most about %s in size", n, maxFloat(bits)), true
	case err != nil:
		return "", false
	case f == 0 && strings.ContainsAny(mantissa, "123456789"):
		return fmt.Sprintf("the number %s is too near 0 to be held (a number other than 0 is at least about %s in size), and would be read as 0: write 0, or the number meant", n, minFloat(bits)), true
	}
	return "", true
}

// maxFloat and minFloat are the largest number a float of bits holds,
// and the least other than 0, as a message writes them ("1.8e308").
func maxFloat(bits int) string {
	if bits == 32 {
		return shortFloat(math.MaxFloat32)
	}
	return shortFloat(math.MaxFloat64)
}

func minFloat(bits int) string {
	if bits == 32 {
		return shortFloat(math.SmallestNonzeroFloat32)
	}
	return shortFloat(math.SmallestNonzeroFloat64)
}

func shortFloat(f float64) string {
	return strings.Replace(strconv.FormatFloat(f, 'g', 2, 64), "e+", "e", 1)
}

// related says whether a problem at path would be said of a value that
// could not be read (checkValues marked it bad): path is that value, or
// in it. The checks of decoded values report nothing there: the value
// read as zero is not the file's. (A check of a value that holds one
// that could not be read, and rests on it, asks badUnder.)
func (s *source) related(path string) bool {
	for b := range s.bad {
		if path == b || under(path, b) {
			return true
		}
	}
	return false
}

// unread says whether the value at path could not be read.
func (s *source) unread(path string) bool { return s.bad[path] }

// badUnder says whether a value at or under path could not be read.
func (s *source) badUnder(path string) bool {
	for b := range s.bad {
		if b == path || under(b, path) {
			return true
		}
	}
	return false
}

// under says whether path p is inside the value at path q.
func under(p, q string) bool {
	return q == "" || strings.HasPrefix(p, q+".") || strings.HasPrefix(p, q+"[")
}

// decode decodes the document into v, as far as it can be: a value
// checkValues reported is left zero.
func (s *source) decode(v any) {
	err := json.Unmarshal(s.data, v)
	var te *json.UnmarshalTypeError
	if err != nil && !errors.As(err, &te) {
		s.errorf(-1, "%s", strings.TrimPrefix(err.Error(), "json: "))
	}
}

// document is the file decoded as JSON values, numbers as written.
func (s *source) document() any {
	dec := json.NewDecoder(bytes.NewReader(s.data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		s.errorf(-1, "%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return v
}

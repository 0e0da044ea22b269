package dsl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// JSONBOM is the UTF-8 byte-order mark some editors put at a file's
// start; JSON has none (RFC 8259), and a reader that meets one reports an
// "invalid character 'ï'" that points nowhere useful.
var JSONBOM = []byte{0xEF, 0xBB, 0xBF}

// JSONBOMMessage is what a reader says of JSON text that starts with
// JSONBOM.
const JSONBOMMessage = "starts with a UTF-8 byte-order mark (bytes EF BB BF), which JSON does not have: save the file without it (UTF-8 without BOM)"

// JSONProblem says what keeps data from being one JSON value, as a
// predicate ("is not valid JSON at line 1, column 10: ..."), for people:
// where, what, and what to do about a byte-order mark or a NaN; "" when
// nothing does.
func JSONProblem(data []byte) string {
	if json.Valid(data) {
		return ""
	}
	if bytes.HasPrefix(data, JSONBOM) {
		return JSONBOMMessage
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return "is empty: it holds no JSON value"
	}
	at, what, ok := jsonSyntaxProblem(data)
	if !ok {
		return "is not valid JSON"
	}
	line, col := JSONLineCol(data, at)
	return fmt.Sprintf("is not valid JSON at line %d, column %d: %s", line, col, what)
}

// JSONTextRefusal says, as a predicate ("holds at line 2, column 7 an
// escape of half a UTF-16 surrogate pair ..."), what in data, valid JSON,
// JSON readers change without a word: a byte that is not UTF-8 or half a
// surrogate pair, each read as U+FFFD, or a key given twice in one object;
// "" when there is none (or data is not valid JSON: JSONProblem says why).
// jsondecode refuses the same.
func JSONTextRefusal(data []byte) string {
	_, _, refusal := decodeJSONChecked(data)
	return refusal
}

// JSONLineProblem is JSONProblem for one line of JSON Lines, which says
// its line itself: the predicate gives the column only ("is not valid
// JSON at column 14: ..."), counted from col0 (the line's characters
// before data, when data is the line trimmed), with what to do about a
// NaN. "" when data is one JSON value.
func JSONLineProblem(data []byte, col0 int) string {
	if json.Valid(data) {
		return ""
	}
	at, what, ok := jsonSyntaxProblem(data)
	if !ok || bytes.IndexByte(data, '\n') >= 0 {
		return JSONProblem(data)
	}
	_, col := JSONLineCol(data, at)
	return fmt.Sprintf("is not valid JSON at column %d: %s", col0+col, what)
}

// jsonSyntaxProblem is where data, not valid JSON, stops being JSON (a
// byte offset), and what is wrong there with what to do about it; ok is
// false when encoding/json gives no position.
func jsonSyntaxProblem(data []byte) (at int, what string, ok bool) {
	var v any
	var se *json.SyntaxError
	if err := json.Unmarshal(data, &v); !errors.As(err, &se) {
		return 0, "", false
	}
	at = int(se.Offset)
	if strings.HasPrefix(se.Error(), "invalid character") {
		at-- // the offset is past the character
	}
	at = min(max(at, 0), len(data))
	what = se.Error()
	rest := data[at:]
	switch {
	case bytes.HasPrefix(rest, []byte("NaN")) || bytes.HasPrefix(rest, []byte("Infinity")):
		what += ". JSON has no NaN or Infinity (Python's json.dump writes them unless allow_nan=False): write null for a number that is not one, or a string (\"NaN\")"
	case at == len(data):
		what += " (the text ends before the value does: cut short?)"
	}
	return at, what, true
}

// JSONLineCol is the 1-based line and column (in characters) of byte
// offset at of data.
func JSONLineCol(data []byte, at int) (line, col int) {
	before := data[:at]
	start := bytes.LastIndexByte(before, '\n') + 1
	return bytes.Count(before, []byte{'\n'}) + 1, utf8.RuneCount(before[start:]) + 1
}

// jsonDecodeFunc is cty's jsondecode, whose errors say where and what
// (JSONProblem): its own say "invalid character 'ï' looking for
// beginning of value" of a file saved with a byte-order mark. It also
// refuses, where cty's changes without a word, a key given twice in one
// object (cty keeps the last) and text that is not Unicode (cty reads it
// as U+FFFD): the error names the key and its line and column in the
// text (see decodeJSONChecked). Its parameter takes marked text, so that
// the error shows no key of a sensitive one; its value has the text's
// marks, as cty's has (TestJSONDecodeIsCtysOnWhatItTakes).
var jsonDecodeFunc = function.New(&function.Spec{
	Description: stdlib.JSONDecodeFunc.Description(),
	Params:      jsonDecodeParams(),
	Type: func(args []cty.Value) (cty.Type, error) {
		if s, sensitive, ok := knownText(args[0]); ok {
			v, ok, refusal := decodeJSONOnce(s, sensitive)
			if refusal != "" {
				return cty.NilType, function.NewArgErrorf(0, "the JSON text %s", refusal)
			}
			if ok {
				return v.Type(), nil
			}
		}
		ty, err := stdlib.JSONDecodeFunc.ReturnTypeForValues(args)
		if err == nil {
			return ty, nil
		}
		if s, _ := args[0].Unmark(); s.IsKnown() && !s.IsNull() && s.Type() == cty.String {
			if msg := JSONProblem([]byte(s.AsString())); msg != "" {
				return cty.NilType, function.NewArgErrorf(0, "the JSON text %s", msg)
			}
		}
		return ty, err
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if s, sensitive, ok := knownText(args[0]); ok {
			v, ok, refusal := decodeJSONOnce(s, sensitive)
			if refusal != "" {
				return cty.NilVal, function.NewArgErrorf(0, "the JSON text %s", refusal)
			}
			if ok {
				_, marks := args[0].Unmark()
				return v.WithMarks(marks), nil
			}
		}
		return stdlib.JSONDecodeFunc.Call(args)
	},
})

// jsonDecodeParams are cty's jsondecode's parameters, taking marked and
// unknown text (and values of no type yet): what is not known text goes
// to cty's jsondecode, which deals with marks and unknown values itself.
func jsonDecodeParams() []function.Parameter {
	ps := stdlib.JSONDecodeFunc.Params()
	ps[0].AllowMarked = true
	ps[0].AllowUnknown = true
	ps[0].AllowDynamicType = true
	return ps
}

// knownText is v's text, unmarked, when v is a known string that is not
// null; sensitive says whether v was marked so.
func knownText(v cty.Value) (s string, sensitive, ok bool) {
	u, marks := v.Unmark()
	if !u.IsKnown() || u.IsNull() || !u.Type().Equals(cty.String) {
		return "", false, false
	}
	_, sensitive = marks[SensitiveMark]
	return u.AsString(), sensitive, true
}

// jsonEncodeFunc is cty's jsonencode, writing a known value through
// MarshalJSON: the same text, with numbers written by NumberText (whole
// numbers and decimals read from text by strconv). cty's Text('f', -1) at
// 512 bits was 80% of jsonencode's time: 0.2 s for an object of 10,000
// numbers. Unknown and null values,
// and what MarshalJSON refuses, go to cty's as before.
var jsonEncodeFunc = function.New(&function.Spec{
	Description:  stdlib.JSONEncodeFunc.Description(),
	Params:       stdlib.JSONEncodeFunc.Params(),
	Type:         function.StaticReturnType(cty.String),
	RefineResult: refineNotNull,
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if v := args[0]; v.IsWhollyKnown() && !v.IsNull() {
			if buf, err := MarshalJSON(v, v.Type()); err == nil {
				return cty.StringVal(string(bytes.TrimSpace(buf))), nil
			}
		}
		return stdlib.JSONEncodeFunc.Call(args)
	},
})

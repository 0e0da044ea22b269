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
	var v any
	var se *json.SyntaxError
	if err := json.Unmarshal(data, &v); !errors.As(err, &se) {
		return "is not valid JSON"
	}
	at := int(se.Offset)
	if strings.HasPrefix(se.Error(), "invalid character") {
		at-- // the offset is past the character
	}
	at = min(max(at, 0), len(data))
	line, col := jsonLineCol(data, at)
	msg := fmt.Sprintf("is not valid JSON at line %d, column %d: %s", line, col, se)
	rest := data[at:]
	switch {
	case bytes.HasPrefix(rest, []byte("NaN")) || bytes.HasPrefix(rest, []byte("Infinity")):
		msg += ". JSON has no NaN or Infinity (Python's json.dump writes them unless allow_nan=False): write null for a number that is not one, or a string (\"NaN\")"
	case at == len(data):
		msg += " (the text ends before the value does: cut short?)"
	}
	return msg
}

// jsonLineCol is the 1-based line and column (in characters) of byte
// offset at of data.
func jsonLineCol(data []byte, at int) (line, col int) {
	before := data[:at]
	start := bytes.LastIndexByte(before, '\n') + 1
	return bytes.Count(before, []byte{'\n'}) + 1, utf8.RuneCount(before[start:]) + 1
}

// jsonDecodeFunc is cty's jsondecode, whose errors say where and what
// (JSONProblem): its own say "invalid character 'ï' looking for
// beginning of value" of a file saved with a byte-order mark.
var jsonDecodeFunc = function.New(&function.Spec{
	Description: stdlib.JSONDecodeFunc.Description(),
	Params:      stdlib.JSONDecodeFunc.Params(),
	Type: func(args []cty.Value) (cty.Type, error) {
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
		return stdlib.JSONDecodeFunc.Call(args)
	},
})

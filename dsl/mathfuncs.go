package dsl

import (
	"fmt"
	"math"
	"strconv"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	"github.com/zclconf/go-cty/cty/gocty"
)

// logFunc and powFunc are the expression library's log and pow, whose
// result where it has no real value (NaN: the log of a negative number, a
// negative number to a fractional power) is refused with words a pipeline
// author reads; the library's own panics on making a number of NaN and
// reports the panic's Go text. An infinite result (log(0, 2), pow(0, -1))
// is a number out of range, refused as every other one (checkNumbers).
var (
	logFunc = function.New(&function.Spec{
		Description:  stdlib.LogFunc.Description(),
		Params:       []function.Parameter{{Name: "num", Type: cty.Number}, {Name: "base", Type: cty.Number}},
		Type:         function.StaticReturnType(cty.Number),
		RefineResult: refineNotNull,
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			num, base, err := twoFloats(args)
			if err != nil {
				return cty.UnknownVal(cty.Number), err
			}
			r := math.Log(num) / math.Log(base)
			if !math.IsNaN(r) {
				return cty.NumberFloatVal(r), nil
			}
			switch {
			case num < 0:
				return cty.UnknownVal(cty.Number), fmt.Errorf("the log of a negative number (%s) has no real value", floatText(num))
			case base < 0:
				return cty.UnknownVal(cty.Number), fmt.Errorf("a log in a negative base (%s) has no real value", floatText(base))
			case base == 1:
				return cty.UnknownVal(cty.Number), fmt.Errorf("a log in base 1 has no value")
			}
			return cty.UnknownVal(cty.Number), notANumber
		},
	})
	powFunc = function.New(&function.Spec{
		Description:  stdlib.PowFunc.Description(),
		Params:       []function.Parameter{{Name: "num", Type: cty.Number}, {Name: "power", Type: cty.Number}},
		Type:         function.StaticReturnType(cty.Number),
		RefineResult: refineNotNull,
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			num, power, err := twoFloats(args)
			if err != nil {
				return cty.UnknownVal(cty.Number), err
			}
			r := math.Pow(num, power)
			if !math.IsNaN(r) {
				return cty.NumberFloatVal(r), nil
			}
			if num < 0 {
				return cty.UnknownVal(cty.Number), fmt.Errorf("a negative number (%s) to a fractional power (%s) has no real value", floatText(num), floatText(power))
			}
			return cty.UnknownVal(cty.Number), notANumber
		},
	})
)

// notANumber is the error of a math function whose result is NaN for a
// reason the function does not name.
var notANumber = fmt.Errorf("the result is not a number (NaN)")

// twoFloats is a math function's two number arguments, as the library's
// own functions read them.
func twoFloats(args []cty.Value) (a, b float64, err error) {
	if err = gocty.FromCtyValue(args[0], &a); err == nil {
		err = gocty.FromCtyValue(args[1], &b)
	}
	return a, b, err
}

// floatText is f as a pipeline writes it: -1, 0.5, 1e+100.
func floatText(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

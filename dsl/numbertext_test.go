package dsl

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

// sameText checks NumberText against big.Float's Text('f', -1), what cty
// writes.
func sameText(t testing.TB, f *big.Float) {
	t.Helper()
	require.Equal(t, f.Text('f', -1), NumberText(f), "%s at %d bits", f.Text('g', 40), f.Prec())
}

// A number is written as cty writes it: parsed from text (cty's 512 bits)
// in every form and magnitude, whole or not, made from a float64 or an
// int64, computed (1/3, whose float64 reads back otherwise), at low
// precision, zero of both signs, beyond float64's range.
func TestNumberTextAsCty(t *testing.T) {
	for _, s := range []string{
		"0", "-0", "1", "-1", "0.1", "0.042", "-0.001", "2.5e-7", "1e-320", "4.9e-324", "2.2250738585072014e-308",
		"1.7976931348623157e308", "1e308", "1e309", "1e-400", "123456789012345678901234567890", "0.30000000000000004",
		"9007199254740993", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
		"3.141592653589793238462643383279", "0.1000000000000000055511151231257827", "1.5", "100.25", "1e21", "1e22",
		"12345678901234567", "1234567890123456789.5", "0.00000000000000000001",
	} {
		sameText(t, cty.MustParseNumberVal(s).AsBigFloat())
	}
	third := cty.NumberIntVal(1).Divide(cty.NumberIntVal(3))
	sameText(t, third.AsBigFloat())
	sameText(t, cty.MustParseNumberVal("0.042").Multiply(cty.MustParseNumberVal("3")).AsBigFloat())
	for _, x := range []float64{0.1, 1.0 / 3, math.Pi, 5e-324, math.MaxFloat64, -2.5, 1e100} {
		sameText(t, cty.NumberFloatVal(x).AsBigFloat())
		sameText(t, new(big.Float).SetPrec(24).SetFloat64(x))
		sameText(t, new(big.Float).SetPrec(65).SetFloat64(x))
	}
	sameText(t, new(big.Float).SetPrec(512).SetInf(true))
	// Whole numbers with more bits than their precision holds: the
	// shortest decimal that reads back is not their digits.
	sameText(t, cty.NumberFloatVal(1<<60).AsBigFloat())
	sameText(t, cty.NumberFloatVal(-(1 << 62)).AsBigFloat())
	sameText(t, new(big.Float).SetPrec(10).SetInt64(1024))
	r := rand.New(rand.NewPCG(1, 2))
	for range 1500 {
		// Decimals of 1 to 20 significant digits, any exponent.
		digits := r.IntN(20) + 1
		m := r.Uint64() % uint64(math.Pow10(min(digits, 19)))
		s := fmt.Sprintf("%de%d", m, r.IntN(700)-350)
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		sameText(t, cty.MustParseNumberVal(s).AsBigFloat())
		// Any float64, written shortest and parsed back at 512 bits.
		x := math.Float64frombits(r.Uint64())
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			sameText(t, cty.MustParseNumberVal(strconv.FormatFloat(x, 'g', -1, 64)).AsBigFloat())
		}
	}
}

// NumberText writes what cty writes of any number text parses to.
func FuzzNumberText(f *testing.F) {
	for _, s := range []string{"0.042", "-1e-7", "1e400", "0.30000000000000004", "123456789.123456789"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := cty.ParseNumberVal(s)
		if err != nil {
			return
		}
		b := v.AsBigFloat()
		if e := b.MantExp(nil); e > 4000 || e < -4000 {
			return // Text's decimal of such a number takes long; no float64 is near it
		}
		sameText(t, b)
	})
}

// BenchmarkNumberText writes a decimal cty parsed (0.042, at 512 bits) as
// NumberText does, and as Text does.
//
//	go test ./dsl -run XXX -bench NumberText
func BenchmarkNumberText(b *testing.B) {
	f := cty.MustParseNumberVal("0.042").AsBigFloat()
	b.Run("cairn", func(b *testing.B) {
		for b.Loop() {
			NumberText(f)
		}
	})
	b.Run("big.Float.Text", func(b *testing.B) {
		for b.Loop() {
			f.Text('f', -1)
		}
	})
}

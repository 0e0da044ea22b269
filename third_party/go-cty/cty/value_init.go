package cty

import (
	"fmt"
	"iter"
	"maps"
	"math/big"
	"reflect"
	"sync/atomic"

	"github.com/zclconf/go-cty/cty/ctymarks"
	"github.com/zclconf/go-cty/cty/ctystrings"
	"github.com/zclconf/go-cty/cty/set"
)

// BoolVal returns a Value of type Number whose internal value is the given
// bool.
func BoolVal(v bool) Value {
	return Value{
		ty: Bool,
		v:  v,
	}
}

// NumberVal returns a Value of type Number whose internal value is the given
// big.Float. The returned value becomes the owner of the big.Float object,
// and so it's forbidden for the caller to mutate the object after it's
// wrapped in this way.
func NumberVal(v *big.Float) Value {
	return Value{
		ty: Number,
		v:  v,
	}
}

// ParseNumberVal returns a Value of type number produced by parsing the given
// string as a decimal real number. To ensure that two identical strings will
// always produce an equal number, always use this function to derive a number
// from a string; it will ensure that the precision and rounding mode for the
// internal big decimal is configured in a consistent way.
//
// If the given string cannot be parsed as a number, the returned error has
// the message "a number is required", making it suitable to return to an
// end-user to signal a type conversion error.
//
// If the given string contains a number that becomes a recurring fraction
// when expressed in binary then it will be truncated to have a 512-bit
// mantissa. Note that this is a higher precision than that of a float64,
// so coverting the same decimal number first to float64 and then calling
// NumberFloatVal will not produce an equal result; the conversion first
// to float64 will round the mantissa to fewer than 512 bits.
func ParseNumberVal(s string) (Value, error) {
	// Base 10, precision 512, and rounding to nearest even is the standard
	// way to handle numbers arriving as strings.
	f, _, err := big.ParseFloat(s, 10, 512, big.ToNearestEven)
	if err != nil {
		return NilVal, fmt.Errorf("a number is required")
	}
	return NumberVal(f), nil
}

// MustParseNumberVal is like ParseNumberVal but it will panic in case of any
// error. It can be used during initialization or any other situation where
// the given string is a constant or otherwise known to be correct by the
// caller.
func MustParseNumberVal(s string) Value {
	ret, err := ParseNumberVal(s)
	if err != nil {
		panic(err)
	}
	return ret
}

// NumberIntVal returns a Value of type Number whose internal value is equal
// to the given integer.
func NumberIntVal(v int64) Value {
	// [cairn] patch (third_party/README.md): a small whole number is made
	// once and shared, as cty never changes a number it holds (AsBigFloat
	// gives a copy). Every element of a list or tuple that an iterator
	// gives comes with its index made by this function.
	if v >= 0 && v < int64(len(smallInts)) {
		f := smallInts[v].Load()
		if f == nil {
			smallInts[v].CompareAndSwap(nil, new(big.Float).SetInt64(v))
			f = smallInts[v].Load()
		}
		return NumberVal(f)
	}
	return NumberVal(new(big.Float).SetInt64(v))
}

// smallInts are the numbers NumberIntVal made of 0 to 65,535, each made
// when first asked for (the array is zero pages until then).
var smallInts [1 << 16]atomic.Pointer[big.Float]

// NumberUIntVal returns a Value of type Number whose internal value is equal
// to the given unsigned integer.
func NumberUIntVal(v uint64) Value {
	return NumberVal(new(big.Float).SetUint64(v))
}

// NumberFloatVal returns a Value of type Number whose internal value is
// equal to the given float.
func NumberFloatVal(v float64) Value {
	return NumberVal(new(big.Float).SetFloat64(v))
}

// StringVal returns a Value of type String whose internal value is the
// given string.
//
// Strings must be UTF-8 encoded sequences of valid unicode codepoints, and
// they are NFC-normalized on entry into the world of cty values.
//
// If the given string is not valid UTF-8 then behavior of string operations
// is undefined.
func StringVal(v string) Value {
	return Value{
		ty: String,
		v:  NormalizeString(v),
	}
}

// NormalizeString applies the same normalization that cty applies when
// constructing string values.
//
// A return value from this function can be meaningfully compared byte-for-byte
// with a Value.AsString result.
func NormalizeString(s string) string {
	return ctystrings.Normalize(s)
}

// ObjectVal returns a Value of an object type whose structure is defined
// by the key names and value types in the given map.
//
// The attribute names are automatically normalized in the same way that cty
// strings are normalized, as implemented by [NormalizeString]. If two distinct
// attribute names have the same normalization then this function will panic.
// If you're choosing attribute names dynamically based on [String] values
// then they are already pre-normalized anyway, but take care when using
// strings from outside of cty directly as attribute names.
func ObjectVal(attrs map[string]Value) Value {
	attrTypes := make(map[string]Type, len(attrs))
	attrVals := make(map[string]any, len(attrs))

	for attr, val := range attrs {
		attr = NormalizeString(attr)
		attrTypes[attr] = val.ty
		attrVals[attr] = val.v
	}

	// [cairn] attrTypes holds each normalized name once: the object type
	// takes it as it is. Object copied it into a map of its own,
	// normalizing every name again, which changes none of them.
	return Value{
		ty: Type{typeObject{AttrTypes: attrTypes}},
		v:  attrVals,
	}
}

// TupleVal returns a Value of a tuple type whose element types are
// defined by the value types in the given slice.
func TupleVal(elems []Value) Value {
	elemTypes := make([]Type, len(elems))
	elemVals := make([]any, len(elems))

	for i, val := range elems {
		elemTypes[i] = val.ty
		elemVals[i] = val.v
	}

	return Value{
		ty: Tuple(elemTypes),
		v:  elemVals,
	}
}

// ListVal returns a Value of list type whose element type is defined by
// the types of the given values, which must be homogenous.
//
// If the types are not all consistent (aside from elements that are of the
// dynamic pseudo-type) then this function will panic. It will panic also
// if the given list is empty, since then the element type cannot be inferred.
// (See also ListValEmpty.)
func ListVal(vals []Value) Value {
	if len(vals) == 0 {
		panic("must not call ListVal with empty slice")
	}
	elementType := DynamicPseudoType
	rawList := make([]any, len(vals))

	for i, val := range vals {
		if elementType == DynamicPseudoType {
			elementType = val.ty
		} else if val.ty != DynamicPseudoType && !elementType.Equals(val.ty) {
			panic(fmt.Errorf(
				"inconsistent list element types (%#v then %#v)",
				elementType, val.ty,
			))
		}

		rawList[i] = val.v
	}

	return Value{
		ty: List(elementType),
		v:  rawList,
	}
}

// ListValEmpty returns an empty list of the given element type.
func ListValEmpty(element Type) Value {
	return Value{
		ty: List(element),
		v:  []any{},
	}
}

// CanListVal returns false if the given Values can not be coalesced
// into a single List due to inconsistent element types.
func CanListVal(vals []Value) bool {
	elementType := DynamicPseudoType
	for _, val := range vals {
		if elementType == DynamicPseudoType {
			elementType = val.ty
		} else if val.ty != DynamicPseudoType && !elementType.Equals(val.ty) {
			return false
		}
	}
	return true
}

// MapVal returns a Value of a map type whose element type is defined by
// the types of the given values, which must be homogenous.
//
// If the types are not all consistent (aside from elements that are of the
// dynamic pseudo-type) then this function will panic. It will panic also
// if the given map is empty, since then the element type cannot be inferred.
// (See also MapValEmpty.)
func MapVal(vals map[string]Value) Value {
	if len(vals) == 0 {
		panic("must not call MapVal with empty map")
	}
	elementType := DynamicPseudoType
	rawMap := make(map[string]any, len(vals))

	for key, val := range vals {
		if elementType == DynamicPseudoType {
			elementType = val.ty
		} else if val.ty != DynamicPseudoType && !elementType.Equals(val.ty) {
			panic(fmt.Errorf(
				"inconsistent map element types (%#v then %#v)",
				elementType, val.ty,
			))
		}

		key := NormalizeString(key)
		if _, exists := rawMap[key]; exists {
			// This can occur if the caller provides two different keys that
			// normalize to the same string. Callers that are implementing
			// a higher-level language like ZCL/HCL typically pre-normalize
			// strings before getting here, but if someone directly calls this
			// function with non-normalized strings then they're required to
			// deal with conflicts themselves before calling, so they can
			// decide their own policy for how to resolve the conflict.
			panic(fmt.Sprintf("multiple map keys that normalize to %q", key))
		}
		rawMap[key] = val.v
	}

	return Value{
		ty: Map(elementType),
		v:  rawMap,
	}
}

// MapValEmpty returns an empty map of the given element type.
func MapValEmpty(element Type) Value {
	return Value{
		ty: Map(element),
		v:  map[string]any{},
	}
}

// CanMapVal returns false if the given Values can not be coalesced into a
// single Map due to inconsistent element types or conflicting keys.
func CanMapVal(vals map[string]Value) bool {
	elementType := DynamicPseudoType
	keys := make(map[string]struct{}, len(vals))
	for key, val := range vals {
		key := NormalizeString(key)
		if _, exists := keys[key]; exists {
			return false
		}
		keys[key] = struct{}{}
		if elementType == DynamicPseudoType {
			elementType = val.ty
		} else if val.ty != DynamicPseudoType && !elementType.Equals(val.ty) {
			return false
		}
	}
	return true
}

// SetVal returns a Value of set type whose element type is defined by
// the types of the given values, which must be homogenous.
//
// If the types are not all consistent (aside from elements that are of the
// dynamic pseudo-type) then this function will panic. It will panic also
// if the given list is empty, since then the element type cannot be inferred.
// (See also SetValEmpty.)
func SetVal(vals []Value) Value {
	if len(vals) == 0 {
		panic("must not call SetVal with empty slice")
	}
	elementType := DynamicPseudoType
	rawList := make([]any, len(vals))
	var markSets []ValueMarks

	for i, val := range vals {
		if unmarkedVal, marks := val.UnmarkDeep(); len(marks) > 0 {
			val = unmarkedVal
			markSets = append(markSets, marks)
		}
		if elementType == DynamicPseudoType {
			elementType = val.ty
		} else if val.ty != DynamicPseudoType && !elementType.Equals(val.ty) {
			panic(fmt.Errorf(
				"inconsistent set element types (%#v then %#v)",
				elementType, val.ty,
			))
		}

		rawList[i] = val.v
	}

	rawVal := set.NewSetFromSlice(set.Rules[any](setRules{elementType}), rawList)

	return Value{
		ty: Set(elementType),
		v:  rawVal,
	}.WithMarks(markSets...)
}

// CanSetVal returns false if the given Values can not be coalesced
// into a single Set due to inconsistent element types.
func CanSetVal(vals []Value) bool {
	elementType := DynamicPseudoType
	var markSets []ValueMarks

	for _, val := range vals {
		if unmarkedVal, marks := val.UnmarkDeep(); len(marks) > 0 {
			val = unmarkedVal
			markSets = append(markSets, marks)
		}
		if elementType == DynamicPseudoType {
			elementType = val.ty
		} else if val.ty != DynamicPseudoType && !elementType.Equals(val.ty) {
			return false
		}
	}
	return true
}

// SetValFromValueSet returns a Value of set type based on an already-constructed
// ValueSet.
//
// The element type of the returned value is the element type of the given
// set.
func SetValFromValueSet(s ValueSet) Value {
	ety := s.ElementType()
	rawVal := s.s.Copy() // copy so caller can't mutate what we wrap

	return Value{
		ty: Set(ety),
		v:  rawVal,
	}
}

// SetValEmpty returns an empty set of the given element type.
func SetValEmpty(element Type) Value {
	return Value{
		ty: Set(element),
		v:  set.NewSet(set.Rules[any](setRules{element})),
	}
}

// CapsuleVal creates a value of the given capsule type using the given
// wrapVal, which must be a pointer to a value of the capsule type's native
// type.
//
// This function will panic if the given type is not a capsule type, if
// the given wrapVal is not compatible with the given capsule type, or if
// wrapVal is not a pointer.
func CapsuleVal(ty Type, wrapVal any) Value {
	if !ty.IsCapsuleType() {
		panic("not a capsule type")
	}

	wv := reflect.ValueOf(wrapVal)
	if wv.Kind() != reflect.Ptr {
		panic("wrapVal is not a pointer")
	}

	it := ty.typeImpl.(*capsuleType).GoType
	if !wv.Type().Elem().AssignableTo(it) {
		panic("wrapVal target is not compatible with the given capsule type")
	}

	return Value{
		ty: ty,
		v:  wrapVal,
	}
}

// UnknownChoice takes a sequence of values and returns a single value that
// somehow represents an as-yet-undecided choice of any one of them.
//
// If orMismatch is true, the result considers the possibility that the final
// selection might actually not match any of the given values and return an
// error instead. In practice this forces the result to represent only the
// [ValueRange] of the given values, so the result won't "over-promise" and
// thus potentially generate confusingly-precise results downstream. orMismatch
// should be set only in cases where the final selection itself might fail,
// such as in [Value.Index] with an unknown value, and not in cases where
// exactly one of the values is guaranteed to be chosen assuming that no
// non-selection related errors occur, such as in [Value.Cond] with an known
// boolean predicate.
//
// If the given sequence has length zero then the result is always [DynamicVal].
// If the sequence has length one then the result is that one value.
// For two or more values that are not equal the result is a value that has
// at least some aspects unknown, but is a best effort to represent what
// all of the values have in common. The precision of the result might improve
// in future versions such that some inputs produce a result with fewer unknown
// values than before.
//
// The intended use of this function is for cty-based languages that want to
// implement some sort of conditional choice between values where the selection
// may itself be based on an unknown value, and therefore the result of that
// conditional choice must include unknowns itself.
//
// This function does not impose restrictions on the types of the given values,
// but if the values are of different types then the result is likely to be
// an unknown value of an unknown type. Callers may therefore wish to attempt
// to unify the types using functions in the "convert" package before passing
// the converted values to this function, in which case the result is far more
// likely to have a wholly-known type.
func UnknownChoice(vals iter.Seq[Value], orMismatch bool) Value {
	var ret Value
	for val := range vals {
		if orMismatch {
			// We handle the "or mismatch" case by using a placeholder based
			// on the value's range, instead of using the value directly.
			// This will usually contain at least some unknown elements, except
			// for some special situations like an empty list known not to be
			// null, for which there is no possible other value it could have.
			val = val.RangeBasedPlaceholder()
		}
		if ret == NilVal {
			ret = val
			continue
		}
		// We use RawEquals here because if the two values are equal but
		// disagree on marks then existing applications like it better when we
		// report that as an unknown value with both marks than as a known
		// value with both marks, since once the choice becomes known only
		// one of those sets of marks would actually be selected and some
		// applications fail if one known value is replaced by another once
		// new known information is added (although that's not something we
		// generally guarantee -- just being pragmatic here because the cost
		// of being more conservative here is relatively low).
		if val.RawEquals(ret) {
			continue
		}
		// If we get here then our result is going to be at least partially
		// unknown, but we'll try to make it as known as possible if
		// the values all have something in common. To do that we'll
		// find a ValueRange that includes both values and then build our
		// value from it.
		a, aMarks, aNestedMarks := val.UnmarkDirectAndNested()
		b, bMarks, bNestedMarks := ret.UnmarkDirectAndNested()
		aRng, bRng := a.Range(), b.Range()
		if aRng.raw != nil && bRng.raw != nil && aRng.raw.null() == tristateTrue && bRng.raw.null() == tristateTrue {
			// If both of the values are definitely null then we'll prefer to
			// return a null instead of a refined unknown value, because this
			// allows us to preserve the nullness even if the types are
			// different.
			retTy := DynamicPseudoType
			if aTy := a.Type(); aTy.Equals(b.Type()) {
				retTy = aTy
			}
			ret = NullVal(retTy).WithMarks(aMarks, bMarks)
			continue
		}
		newRng := commonRange(aRng, bRng)
		// We'll just merge the a and b marks into "a"'s sets here, which is
		// okay because UnmarkDirectAndNested creates distinct ValueMarks for
		// each call.
		if aMarks == nil {
			aMarks = make(ValueMarks)
		}
		if aNestedMarks == nil {
			aNestedMarks = make(ValueMarks)
		}
		maps.Copy(aMarks, bMarks)
		maps.Copy(aNestedMarks, bNestedMarks)
		// Only "provenance marks" are automatically propagated into the nested
		// marks, which is important for backward-compatibility for cty callers
		// that predate the concept of nested marks and could break if they
		// suddenly encounter nested marks they weren't expecting. (Provenance
		// marks are okay because that concept was introduced at the same time
		// as unknown values began supporting nested marks.)
		for mark := range aNestedMarks {
			if !ctymarks.IsProvenanceMark(mark) {
				delete(aNestedMarks, mark)
			}
		}
		ret = newRng.asValueWithMarks(aMarks, aNestedMarks)
	}
	if ret == NilVal {
		ret = DynamicVal // just to avoid a panic hazard for callers if they pass an empty sequence
	}
	return ret
}

package cty

import (
	"errors"
	"fmt"
)

// A Path is a sequence of operations to locate a nested value within a
// data structure.
//
// The empty Path represents the given item. Any PathSteps within represent
// taking a single step down into a data structure.
//
// Path has some convenience methods for gradually constructing a path,
// but callers can also feel free to just produce a slice of PathStep manually
// and convert to this type, which may be more appropriate in environments
// where memory pressure is a concern.
//
// Although a Path is technically mutable, by convention callers should not
// mutate a path once it has been built and passed to some other subsystem.
// Instead, use Copy and then mutate the copy before using it.
type Path []PathStep

// PathStep represents a single step down into a data structure, as part
// of a Path. PathStep is a closed interface, meaning that the only
// permitted implementations are those within this package.
type PathStep interface {
	pathStepSigil() pathStepImpl
	Apply(Value) (Value, error)
}

// embed pathImpl into a struct to declare it a PathStep implementation
type pathStepImpl struct{}

func (p pathStepImpl) pathStepSigil() pathStepImpl {
	return p
}

// Index returns a new Path that is the reciever with an IndexStep appended
// to the end.
//
// This is provided as a convenient way to construct paths, but each call
// will create garbage so it should not be used where memory pressure is a
// concern.
//
// This function just returns the receiver nothing if the path already ends with
// an "unknown nested steps" placeholder, because that subsumes everything
// beneath it.
func (p Path) Index(v Value) Path {
	if p.HasUnknownTail() {
		return p
	}
	ret := make(Path, len(p)+1)
	copy(ret, p)
	ret[len(p)] = IndexStep{
		Key: v,
	}
	return ret
}

// IndexInt is a typed convenience method for Index.
func (p Path) IndexInt(v int) Path {
	return p.Index(NumberIntVal(int64(v)))
}

// IndexString is a typed convenience method for Index.
func (p Path) IndexString(v string) Path {
	return p.Index(StringVal(v))
}

// IndexPath is a convenience method to start a new Path with an IndexStep.
func IndexPath(v Value) Path {
	return Path{}.Index(v)
}

// IndexIntPath is a typed convenience method for IndexPath.
func IndexIntPath(v int) Path {
	return IndexPath(NumberIntVal(int64(v)))
}

// IndexStringPath is a typed convenience method for IndexPath.
func IndexStringPath(v string) Path {
	return IndexPath(StringVal(v))
}

// GetAttr returns a new Path that is the reciever with a GetAttrStep appended
// to the end.
//
// This is provided as a convenient way to construct paths, but each call
// will create garbage so it should not be used where memory pressure is a
// concern.
//
// This function just returns the receiver nothing if the path already ends with
// an "unknown nested steps" placeholder, because that subsumes everything
// beneath it.
func (p Path) GetAttr(name string) Path {
	if p.HasUnknownTail() {
		return p
	}
	ret := make(Path, len(p)+1)
	copy(ret, p)
	ret[len(p)] = GetAttrStep{
		Name: name,
	}
	return ret
}

// UnknownSubpath returns a new Path that is the reciever with an
// UnknownNestedSteps placeholder appended to the end.
//
// This function just returns the receiver nothing if the path already ends with
// an "unknown nested steps" placeholder, because that subsumes everything
// beneath it.
func (p Path) UnknownSubpath() Path {
	if p.HasUnknownTail() {
		return p
	}
	ret := make(Path, len(p)+1)
	copy(ret, p)
	ret[len(p)] = UnknownNestedSteps{}
	return ret
}

// Equals compares 2 Paths for exact equality.
func (p Path) Equals(other Path) bool {
	if len(p) != len(other) {
		return false
	}

	for i := range p {
		pv := p[i]
		switch pv := pv.(type) {
		case GetAttrStep:
			ov, ok := other[i].(GetAttrStep)
			if !ok || pv != ov {
				return false
			}
		case IndexStep:
			ov, ok := other[i].(IndexStep)
			if !ok {
				return false
			}

			if !pv.Key.RawEquals(ov.Key) {
				return false
			}
		case UnknownNestedSteps:
			_, ok := other[i].(UnknownNestedSteps)
			return ok
		default:
			// Any invalid steps default to evaluating false.
			return false
		}
	}

	return true
}

// HasPrefix determines if the path p contains the provided prefix.
func (p Path) HasPrefix(prefix Path) bool {
	if len(prefix) > len(p) {
		return false
	}

	return p[:len(prefix)].Equals(prefix)
}

// Matches returns true if either the receiver is equal to the given path
// or if the receiver has an unknown tail but the known prefix matches the
// prefix of the given path.
func (p Path) Matches(other Path) bool {
	// The length check here is important because an unknown-tailed path
	// only matches paths _under_ its known prefix, not _at_ its known
	// prefix. We're checking this before we stripped off the tail, so
	// it's >= rather than > because we're going to shorten it by one below.
	if len(other) >= len(p) && p.HasUnknownTail() {
		return other.HasPrefix(p[:len(p)-1])
	}
	return other.Equals(p)
}

// GetAttrPath is a convenience method to start a new Path with a GetAttrStep.
func GetAttrPath(name string) Path {
	return Path{}.GetAttr(name)
}

// Apply applies each of the steps in turn to successive values starting with
// the given value, and returns the result. If any step returns an error,
// the whole operation returns an error.
func (p Path) Apply(val Value) (Value, error) {
	var err error
	for i, step := range p {
		val, err = step.Apply(val)
		if err != nil {
			return NilVal, fmt.Errorf("at step %d: %s", i, err)
		}
	}
	return val, nil
}

// LastStep applies the given path up to the last step and then returns
// the resulting value and the final step.
//
// This is useful when dealing with assignment operations, since in that
// case the *value* of the last step is not important (and may not, in fact,
// present at all) and we care only about its location.
//
// Since LastStep applies all steps except the last, it will return errors
// for those steps in the same way as Apply does.
//
// If the path has *no* steps then the returned PathStep will be nil,
// representing that any operation should be applied directly to the
// given value.
func (p Path) LastStep(val Value) (Value, PathStep, error) {
	var err error

	if len(p) == 0 {
		return val, nil, nil
	}

	journey := p[:len(p)-1]
	val, err = journey.Apply(val)
	if err != nil {
		return NilVal, nil, err
	}
	return val, p[len(p)-1], nil
}

// Copy makes a shallow copy of the receiver. Often when paths are passed to
// caller code they come with the constraint that they are valid only until
// the caller returns, due to how they are constructed internally. Callers
// can use Copy to conveniently produce a copy of the value that _they_ control
// the validity of.
func (p Path) Copy() Path {
	ret := make(Path, len(p))
	copy(ret, p)
	return ret
}

// HasUnknownTail returns true if the tail ends with the special
// "unknown nested steps" marker which means that it actually matches an
// unspecified number of different nested paths beneath an unknown value.
//
// Paths of this kind are produced when walking a value that contains unknown
// values where cty knows that at least one mark is present on something
// nested inside the unknown value but is not tracking exactly where inside
// the unknown value that mark appears.
func (p Path) HasUnknownTail() bool {
	if len(p) == 0 {
		return false
	}
	last := p[len(p)-1]
	_, ok := last.(UnknownNestedSteps)
	return ok
}

// IndexStep is a Step implementation representing applying the index operation
// to a value, which must be of either a list, map, or set type.
//
// When describing a path through a *type* rather than a concrete value,
// the Key may be an unknown value, indicating that the step applies to
// *any* key of the given type.
//
// When indexing into a set, the Key is actually the element being accessed
// itself, since in sets elements are their own identity. Applying such an
// index step to a set will test if the key is present in the set and return
// it if so, but note that if the key contains any unknown values then the
// result is itself an unknown value because we cannot know whether the element
// is present or not.
type IndexStep struct {
	pathStepImpl
	Key Value
}

// Apply returns the value resulting from indexing the given value with
// our key value.
func (s IndexStep) Apply(val Value) (Value, error) {
	if val == NilVal || val.IsNull() {
		return NilVal, errors.New("cannot index a null value")
	}

	if valType := val.Type(); valType.IsSetType() {
		// Indexing into a set with [Value.Index] is not allowed because
		// sets don't have indices, but [Path] is often used to describe
		// the current location in a nested data structure when working
		// with functions like [Walk] or [Transform] and in that case
		// traversal into a set is represented as an IndexStep whose
		// key is the set element value itself, with the idea that a set
		// element effectively acts as its own "key" in the set.
		//
		// To make it possible to use that kind of path with [Path.Apply],
		// we have a special case here: if the index step's key is in the
		// set then we return that value.
		markedPresent := val.HasElement(s.Key)
		present, marks := markedPresent.Unmark()
		if !present.IsKnown() {
			return UnknownVal(valType.ElementType()).WithMarks(marks), nil
		}
		if present.False() {
			return NilVal, errors.New("set does not contain the requested element")
		}
		// We transfer the marks from the set here too, which is sufficient
		// because cty cannot not preserve marks deeply within a set so they
		// always aggregate onto the set as a whole during set construction.
		return s.Key.WithMarks(marks), nil
	}

	switch s.Key.Type() {
	case Number:
		if !(val.Type().IsListType() || val.Type().IsTupleType()) {
			return NilVal, errors.New("not a list type")
		}
	case String:
		if !val.Type().IsMapType() {
			return NilVal, errors.New("not a map type")
		}
	default:
		return NilVal, errors.New("key value not number or string")
	}

	// This value needs to be stripped of marks to check True(), but Index will
	// apply the correct marks for the result.
	has, _ := val.HasIndex(s.Key).Unmark()
	if !has.IsKnown() {
		return UnknownVal(val.Type().ElementType()), nil
	}
	if !has.True() {
		return NilVal, errors.New("value does not have given index key")
	}

	return val.Index(s.Key), nil
}

func (s IndexStep) GoString() string {
	return fmt.Sprintf("cty.IndexStep{Key:%#v}", s.Key)
}

// GetAttrStep is a Step implementation representing retrieving an attribute
// from a value, which must be of an object type.
type GetAttrStep struct {
	pathStepImpl
	Name string
}

// Apply returns the value of our named attribute from the given value, which
// must be of an object type that has a value of that name.
func (s GetAttrStep) Apply(val Value) (Value, error) {
	if val == NilVal || val.IsNull() {
		return NilVal, errors.New("cannot access attributes on a null value")
	}

	if !val.Type().IsObjectType() {
		return NilVal, errors.New("not an object type")
	}

	if !val.Type().HasAttribute(s.Name) {
		return NilVal, fmt.Errorf("object has no attribute %q", s.Name)
	}

	return val.GetAttr(s.Name), nil
}

func (s GetAttrStep) GoString() string {
	return fmt.Sprintf("cty.GetAttrStep{Name:%q}", s.Name)
}

// UnknownNestedSteps is a special [PathStep] used only to describe marks that
// are expected to appear at some path beneath a currently-unknown value.
// It is valid only at the very end of a path, in its last element.
//
// Applications that never use [UnknownValWithNestedMarks] directly and which
// do not use values with any marks that implement [ctymarks.ProvenanceMark]
// will not encounter paths containing steps of this type unless they explicitly
// construct them, but any application that directly or indirectly produces
// unknown values with nested marks must be ready to handle steps of this type
// whenever "walking" or "transforming" a [Value].
//
// Note that this step type is an approximation that captures potential marks
// at any level of nesting beneath an unknown value, and so when comparing
// marked paths in a final unknown value an application must allow for the
// marks on a step of this type potentially matching with any path whose
// prefix matches the steps before this one, regardless of subsequent length.
type UnknownNestedSteps struct {
	pathStepImpl
}

// UnknownPath is a [Path] value representing a completely-unknown path: could
// have zero or more steps of any kind.
//
// Because [UnknownNestedSteps] is allowed only as the final element of a path,
// it isn't valid to append additional steps to this path.
var UnknownPath = Path{
	UnknownNestedSteps{},
}

// Apply returns the value of our named attribute from the given value, which
// must be of an object type that has a value of that name.
func (s UnknownNestedSteps) Apply(val Value) (Value, error) {
	if val == NilVal || val.IsNull() {
		return NilVal, errors.New("a null value does not have any nested attributes or elements")
	}
	ty := val.Type()
	switch {
	case ty.IsObjectType() || ty.IsCollectionType() || ty.IsTupleType():
		_, marks := val.UnmarkDeep()
		return DynamicVal.WithMarks(marks), nil
	default:
		return NilVal, errors.New("this value does not have any nested attribtues or elements")
	}
}

func (s UnknownNestedSteps) GoString() string {
	return "cty.UnknownNestedSteps{}"
}

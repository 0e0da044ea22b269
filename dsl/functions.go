package dsl

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/cairn-run/cairn/storage/digest"
)

// FileFunc makes a function of pipeline expressions that the language does
// not define itself (a loader's caller gives them, see Loader.Funcs). read
// reads a file the way file() does: path relative to the workspace root, at
// most MaxFileBytes, noted among the files the evaluation depends on, fn
// (say "decisionslots()") named in its errors.
type FileFunc func(read func(path, fn string) ([]byte, error)) function.Function

// Functions returns the function table of pipeline expressions, with the
// extra functions given. File functions read paths relative to root (the
// workspace root).
func Functions(root string, extra map[string]FileFunc) map[string]function.Function {
	return FunctionsReading(root, nil, extra)
}

// FunctionsReading is Functions whose file functions note what they read
// in reads.
func FunctionsReading(root string, reads *FileReads, extra map[string]FileFunc) map[string]function.Function {
	fns := map[string]function.Function{
		"abs":             stdlib.AbsoluteFunc,
		"can":             tryfunc.CanFunc,
		"ceil":            stdlib.CeilFunc,
		"chomp":           stdlib.ChompFunc,
		"chunklist":       stdlib.ChunklistFunc,
		"coalesce":        stdlib.CoalesceFunc,
		"coalescelist":    stdlib.CoalesceListFunc,
		"compact":         stdlib.CompactFunc,
		"concat":          stdlib.ConcatFunc,
		"contains":        containsFunc,
		"csvdecode":       stdlib.CSVDecodeFunc,
		"distinct":        distinctFunc,
		"element":         stdlib.ElementFunc,
		"flatten":         stdlib.FlattenFunc,
		"floor":           stdlib.FloorFunc,
		"format":          formatFunc,
		"formatdate":      stdlib.FormatDateFunc,
		"formatlist":      formatListFunc,
		"indent":          indentFunc,
		"index":           indexFunc,
		"join":            stdlib.JoinFunc,
		"jsondecode":      jsonDecodeFunc,
		"jsonencode":      jsonEncodeFunc,
		"keys":            stdlib.KeysFunc,
		"length":          lengthFunc,
		"log":             logFunc,
		"lookup":          stdlib.LookupFunc,
		"lower":           stdlib.LowerFunc,
		"max":             stdlib.MaxFunc,
		"merge":           stdlib.MergeFunc,
		"min":             stdlib.MinFunc,
		"parseint":        stdlib.ParseIntFunc,
		"pow":             powFunc,
		"range":           rangeFunc,
		"regex":           stdlib.RegexFunc,
		"regexall":        stdlib.RegexAllFunc,
		"replace":         replaceFunc,
		"reverse":         stdlib.ReverseListFunc,
		"setintersection": stdlib.SetIntersectionFunc,
		"setproduct":      setProductFunc,
		"setsubtract":     stdlib.SetSubtractFunc,
		"setunion":        stdlib.SetUnionFunc,
		"signum":          stdlib.SignumFunc,
		"slice":           stdlib.SliceFunc,
		"sort":            stdlib.SortFunc,
		"split":           stdlib.SplitFunc,
		"strrev":          stdlib.ReverseFunc,
		"substr":          stdlib.SubstrFunc,
		"timeadd":         stdlib.TimeAddFunc,
		"title":           stdlib.TitleFunc,
		"trim":            stdlib.TrimFunc,
		"trimprefix":      stdlib.TrimPrefixFunc,
		"trimspace":       stdlib.TrimSpaceFunc,
		"trimsuffix":      stdlib.TrimSuffixFunc,
		"try":             tryfunc.TryFunc,
		"upper":           stdlib.UpperFunc,
		"values":          stdlib.ValuesFunc,
		"zipmap":          stdlib.ZipmapFunc,
		"tostring":        toStringFunc,
		"tonumber":        toNumberFunc,
		"tobool":          toBoolFunc,
		"tolist":          toListFunc,
		"toset":           toSetFunc,
		"tomap":           toMapFunc,
		"sha256":          sha256Func,
		"basename":        basenameFunc,
		"dirname":         dirnameFunc,
		"file":            fileFunc(root, reads),
		"filesha256":      fileSHA256Func(root, reads),
		"fileexists":      fileExistsFunc(root, reads),
		"sum":             sumFunc,
	}
	read := func(p, fn string) ([]byte, error) { return readBounded(root, p, reads, fn) }
	for name, mk := range extra {
		fns[name] = mk(read)
	}
	return fns
}

// ownFunctions is a function table of the language's own functions, made
// once: what a call reads of their signatures (callSpecs) and which of
// them read the workspace (pureFunctions).
var ownFunctions = sync.OnceValue(func() map[string]function.Function { return Functions(".", nil) })

// FunctionNames lists the function table's names with the extra
// functions given, sorted (for the docs test).
func FunctionNames(extra map[string]FileFunc) []string {
	var ns []string
	for n := range Functions(".", extra) {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

func makeToFunc(ty cty.Type) function.Function {
	return stdlib.MakeToFunc(ty)
}

// The conversion functions, made once: every function table holds the
// same ones (a call reads a function's signature once, callSpecOf).
var (
	toStringFunc = makeToStringFunc()
	toNumberFunc = makeToFunc(cty.Number)
	toBoolFunc   = makeToFunc(cty.Bool)
	toListFunc   = makeToCollectionFunc(cty.List(cty.DynamicPseudoType))
	toSetFunc    = makeToCollectionFunc(cty.Set(cty.DynamicPseudoType))
	toMapFunc    = makeToFunc(cty.Map(cty.DynamicPseudoType))
)

// lengthFunc counts a list, set, tuple or map's elements, an object's
// attributes (stage.X is an object: length(stage.X) is its instance count),
// or a string's characters, as Terraform's length does.
var lengthFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowMarked: true, AllowUnknown: true}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		v, marks := args[0].Unmark()
		ty := v.Type()
		switch {
		case ty == cty.String:
			if !v.IsKnown() {
				return cty.UnknownVal(cty.Number).WithMarks(marks), nil
			}
			if v.IsNull() {
				return cty.NilVal, fmt.Errorf("argument must not be null")
			}
			return stdlib.Strlen(v)
		case ty.IsObjectType():
			return cty.NumberIntVal(int64(len(ty.AttributeTypes()))).WithMarks(marks), nil
		case !(ty.IsListType() || ty.IsSetType() || ty.IsTupleType() || ty.IsMapType() || ty == cty.DynamicPseudoType):
			return cty.NilVal, fmt.Errorf("length takes a string, a list, a set, a tuple, a map or an object, not %s", ty.FriendlyName())
		}
		out, err := stdlib.Length(v)
		if err != nil {
			return cty.NilVal, err
		}
		return out.WithMarks(marks), nil
	},
})

// rangeFunc is cty's range, which says "more than 1024 values were
// generated" of a step of 0 (it never moves): that is named instead.
var rangeFunc = function.New(&function.Spec{
	VarParam: stdlib.RangeFunc.VarParam(),
	Type:     function.StaticReturnType(cty.List(cty.Number)),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if len(args) == 3 && args[2].IsKnown() && !args[2].IsNull() && args[2].Type() == cty.Number && args[2].RawEquals(cty.Zero) && !args[0].RawEquals(args[1]) {
			return cty.NilVal, function.NewArgErrorf(2, "step must not be 0: range(start, end, step) would never reach its end")
		}
		return stdlib.RangeFunc.Call(args)
	},
})

var sha256Func = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		h := sha256.Sum256([]byte(args[0].AsString()))
		return cty.StringVal(hex.EncodeToString(h[:])), nil
	},
})

var basenameFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "path", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.StringVal(path.Base(filepath.ToSlash(args[0].AsString()))), nil
	},
})

var dirnameFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "path", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.StringVal(path.Dir(filepath.ToSlash(args[0].AsString()))), nil
	},
})

// indexFunc is index(list, value): the position of value's first
// occurrence in list, as Terraform defines it (cty's own index function
// looks an element up by key instead).
var indexFunc = function.New(&function.Spec{
	Description: indexAnyFunc.Description(),
	Params:      takingAnyValue(indexAnyFunc.Params()),
	Type:        untypedOr(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if i, ok := textIndex(args[0], args[1]); ok && i >= 0 {
			return cty.NumberIntVal(int64(i)), nil
		}
		return indexAnyFunc.Call(args)
	},
})

// indexAnyFunc is index for any list and value; indexFunc finds a string
// among strings itself, as contains does (containsFunc): each element was
// compared through a call of stdlib's Equal, after cty walked the list
// twice for marks, 5 ms for 10,000 strings.
var indexAnyFunc = function.New(&function.Spec{
	Description: "Returns the index of the first element of a list or tuple equal to the given value.",
	Params: []function.Parameter{
		{Name: "list", Type: cty.DynamicPseudoType},
		{Name: "value", Type: cty.DynamicPseudoType},
	},
	Type: function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		list, value := args[0], args[1]
		ty := list.Type()
		if !(ty.IsListType() || ty.IsTupleType()) {
			return cty.NilVal, fmt.Errorf("the first argument must be a list or tuple, not %s", ty.FriendlyName())
		}
		if !list.IsKnown() {
			return cty.UnknownVal(cty.Number), nil
		}
		if list.IsNull() {
			return cty.NilVal, fmt.Errorf("the list is null")
		}
		for it := list.ElementIterator(); it.Next(); {
			i, el := it.Element()
			eq, err := stdlib.Equal(el, value)
			if err != nil {
				return cty.NilVal, err
			}
			if !eq.IsKnown() {
				return cty.UnknownVal(cty.Number), nil
			}
			if eq.True() {
				return i, nil
			}
		}
		return cty.NilVal, fmt.Errorf("the list does not hold that value")
	},
})

// replaceFunc is Terraform's replace: a substring wrapped in forward
// slashes is a regular expression (RE2 syntax), whose replacement may use
// $1, ${name} and so on; any other substring is replaced literally.
var replaceFunc = function.New(&function.Spec{
	Description: "Replaces every occurrence of a substring, or of matches of a /regular expression/, with a replacement.",
	Params: []function.Parameter{
		{Name: "str", Type: cty.String},
		{Name: "substr", Type: cty.String},
		{Name: "replace", Type: cty.String},
	},
	Type:         function.StaticReturnType(cty.String),
	RefineResult: refineNotNull,
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		substr := args[1].AsString()
		if len(substr) > 1 && substr[0] == '/' && substr[len(substr)-1] == '/' {
			return stdlib.RegexReplace(args[0], cty.StringVal(substr[1:len(substr)-1]), args[2])
		}
		return stdlib.Replace(args[0], args[1], args[2])
	},
})

var sumFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "list", Type: cty.List(cty.Number)}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		total := cty.NumberIntVal(0)
		for it := args[0].ElementIterator(); it.Next(); {
			_, v := it.Element()
			if v.IsNull() {
				return cty.NilVal, fmt.Errorf("sum: the list holds a null")
			}
			total = total.Add(v)
		}
		return total, nil
	},
})

func resolve(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

// MaxFileBytes bounds what file() reads: its content becomes part of the
// expression's value (and of node keys); big data belongs in inputs.
const MaxFileBytes = 64 << 20

// openRegular opens a regular file; devices, pipes and directories are
// refused before they are opened (reading /dev/zero would never end, and
// opening a FIFO would block).
func openRegular(root, p string, reads *FileReads) (*os.File, int64, error) {
	full := resolve(root, p)
	reads.Note(full)
	st, err := os.Stat(full)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot read %s: %w%s", p, err, SpellingHint(root, p))
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("cannot read %s: not a regular file", p)
	}
	f, err := os.Open(full)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot read %s: %w", p, err)
	}
	return f, st.Size(), nil
}

// readBounded reads a regular file of at most MaxFileBytes, p relative to
// root, noting the read; fn names the function for the error.
func readBounded(root, p string, reads *FileReads, fn string) ([]byte, error) {
	f, size, err := openRegular(root, p, reads)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > MaxFileBytes {
		return nil, fmt.Errorf("%s holds %d bytes; %s reads at most %d: name the file in inputs and let the stage read it", p, size, fn, MaxFileBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", p, err)
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%s holds more than %d bytes; %s reads at most that: name the file in inputs and let the stage read it", p, MaxFileBytes, fn)
	}
	return b, nil
}

func fileFunc(root string, reads *FileReads) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := args[0].AsString()
			b, err := readBounded(root, p, reads, "file()")
			if err != nil {
				return cty.NilVal, err
			}
			if !utf8.Valid(b) {
				return cty.NilVal, fmt.Errorf("%s is not UTF-8 text; file() reads text files (filesha256 digests any file)", p)
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

func fileSHA256Func(root string, reads *FileReads) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			d, err := fileSHA256(root, args[0].AsString(), reads)
			if err != nil {
				return cty.NilVal, err
			}
			return cty.StringVal(d), nil
		},
	})
}

// fileSHA256 is the hex sha256 of a regular file's bytes, p relative to
// root; the read is noted in reads.
func fileSHA256(root, p string, reads *FileReads) (string, error) {
	f, _, err := openRegular(root, p, reads)
	if err != nil {
		return "", err
	}
	defer f.Close()
	d, err := digest.Reader(f)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", p, err)
	}
	return d, nil
}

// MaxElements bounds the collections that setproduct may build, and
// MaxWidth the width and precision of format verbs: both would otherwise
// let a short expression ask for more memory than the machine has.
const (
	MaxElements = 1 << 20
	MaxWidth    = 10000
)

// guarded wraps f with a check of its arguments that runs before f does.
func guarded(f function.Function, check func(args []cty.Value) error) function.Function {
	return function.New(&function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type:        f.ReturnTypeForValues,
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if err := check(args); err != nil {
				return cty.NilVal, err
			}
			return f.Call(args)
		},
	})
}

// checkFormat refuses format verbs with a width or precision above
// MaxWidth ("%0999999999d").
func checkFormat(args []cty.Value) error {
	if len(args) == 0 {
		return nil
	}
	v, _ := args[0].Unmark()
	if !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
		return nil
	}
	s := v.AsString()
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		n := 0
		for i++; i < len(s) && strings.IndexByte("+-# 0123456789.*[]", s[i]) >= 0; i++ {
			if c := s[i]; c >= '0' && c <= '9' {
				n = n*10 + int(c-'0')
				if n > MaxWidth {
					return fmt.Errorf("a width or precision in the format is over %d", MaxWidth)
				}
			} else {
				n = 0
			}
		}
	}
	return nil
}

var (
	formatFunc     = guarded(stdlib.FormatFunc, checkFormat)
	formatListFunc = guarded(stdlib.FormatListFunc, checkFormat)
	indentFunc     = guarded(stdlib.IndentFunc, func(args []cty.Value) error {
		n, _ := args[0].Unmark()
		if !n.IsKnown() || n.IsNull() {
			return nil
		}
		if f, _ := n.AsBigFloat().Float64(); f > MaxWidth {
			return fmt.Errorf("indent takes at most %d spaces", MaxWidth)
		}
		return nil
	})
	setProductFunc = guarded(stdlib.SetProductFunc, func(args []cty.Value) error {
		total := 1
		for _, a := range args {
			a, _ = a.UnmarkDeep()
			if !a.IsKnown() || a.IsNull() || !a.CanIterateElements() {
				return nil
			}
			total *= a.LengthInt()
			if total > MaxElements {
				return fmt.Errorf("the product would hold more than %d elements", MaxElements)
			}
			if total == 0 {
				return nil
			}
		}
		return nil
	})
)

func fileExistsFunc(root string, reads *FileReads) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			full := resolve(root, args[0].AsString())
			reads.Note(full)
			st, err := os.Stat(full)
			return cty.BoolVal(err == nil && st.Mode().IsRegular()), nil
		},
	})
}

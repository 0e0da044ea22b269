package dsl

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// Functions returns the function table of pipeline expressions. File
// functions read paths relative to root (the workspace root).
func Functions(root string) map[string]function.Function {
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
		"contains":        stdlib.ContainsFunc,
		"csvdecode":       stdlib.CSVDecodeFunc,
		"distinct":        stdlib.DistinctFunc,
		"element":         stdlib.ElementFunc,
		"flatten":         stdlib.FlattenFunc,
		"floor":           stdlib.FloorFunc,
		"format":          stdlib.FormatFunc,
		"formatdate":      stdlib.FormatDateFunc,
		"formatlist":      stdlib.FormatListFunc,
		"indent":          stdlib.IndentFunc,
		"index":           stdlib.IndexFunc,
		"join":            stdlib.JoinFunc,
		"jsondecode":      stdlib.JSONDecodeFunc,
		"jsonencode":      stdlib.JSONEncodeFunc,
		"keys":            stdlib.KeysFunc,
		"length":          stdlib.LengthFunc,
		"log":             stdlib.LogFunc,
		"lookup":          stdlib.LookupFunc,
		"lower":           stdlib.LowerFunc,
		"max":             stdlib.MaxFunc,
		"merge":           stdlib.MergeFunc,
		"min":             stdlib.MinFunc,
		"parseint":        stdlib.ParseIntFunc,
		"pow":             stdlib.PowFunc,
		"range":           stdlib.RangeFunc,
		"regex":           stdlib.RegexFunc,
		"regexall":        stdlib.RegexAllFunc,
		"replace":         stdlib.ReplaceFunc,
		"reverse":         stdlib.ReverseListFunc,
		"setintersection": stdlib.SetIntersectionFunc,
		"setproduct":      stdlib.SetProductFunc,
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
		"tostring":        makeToFunc(cty.String),
		"tonumber":        makeToFunc(cty.Number),
		"tobool":          makeToFunc(cty.Bool),
		"tolist":          makeToFunc(cty.List(cty.DynamicPseudoType)),
		"toset":           makeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tomap":           makeToFunc(cty.Map(cty.DynamicPseudoType)),
		"sha256":          sha256Func,
		"basename":        basenameFunc,
		"dirname":         dirnameFunc,
		"file":            fileFunc(root),
		"filesha256":      fileSHA256Func(root),
		"fileexists":      fileExistsFunc(root),
		"sum":             sumFunc,
	}
	return fns
}

// FunctionNames lists the function table's names, sorted (for the docs test).
func FunctionNames() []string {
	var ns []string
	for n := range Functions(".") {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

func makeToFunc(ty cty.Type) function.Function {
	return stdlib.MakeToFunc(ty)
}

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

func fileFunc(root string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := os.ReadFile(resolve(root, args[0].AsString()))
			if err != nil {
				return cty.NilVal, fmt.Errorf("cannot read %s: %w", args[0].AsString(), err)
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

func fileSHA256Func(root string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := os.ReadFile(resolve(root, args[0].AsString()))
			if err != nil {
				return cty.NilVal, fmt.Errorf("cannot read %s: %w", args[0].AsString(), err)
			}
			h := sha256.Sum256(b)
			return cty.StringVal(hex.EncodeToString(h[:])), nil
		},
	})
}

func fileExistsFunc(root string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			st, err := os.Stat(resolve(root, args[0].AsString()))
			return cty.BoolVal(err == nil && st.Mode().IsRegular()), nil
		},
	})
}

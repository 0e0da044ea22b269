// Package dsl reads cairn pipeline files (HCL native syntax) into a typed,
// still unevaluated pipeline spec, and evaluates the parts that are known
// before anything runs: variables, locals and for_each.
//
// A pipeline is one .hcl file or a directory of them. Top-level blocks:
//
//	pipeline "NAME" { description = "..." }          (at most one)
//	variable "NAME" { type, default, description, sensitive, nullable, validation { condition, error_message } }
//	locals { NAME = EXPR ... }
//	stage "KIND" "NAME" { generic attributes, kind attributes, retry {...}, postcondition {...} }
//	seal "NAME" { sha256 = { PATH = DIGEST ... } }   (files pinned by digest)
//
// Every decoder keeps going after an error and returns all diagnostics at
// once, each pointing at the narrowest source range it can.
package dsl

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl/addrs"
)

// Config is a decoded pipeline: the blocks of every file, unevaluated.
type Config struct {
	// Name is the pipeline block's label, or the file (directory) base name.
	Name        string
	Description string
	// Executor is the pipeline block's executor block; nil: none (the
	// local executor, unless --executor says otherwise).
	Executor *Executor
	// Dir is the folder holding the pipeline file(s): path.pipeline.
	Dir string
	// Root is the workspace root, where file() and friends read; the
	// caller sets it (plan.Load does). Empty means Dir.
	Root string
	// Paths are the files read, in order.
	Paths []string

	Variables map[string]*Variable
	VarOrder  []string
	Locals    map[string]*Local
	LocalOrd  []string
	Stages    []*Stage
	StageMap  map[string]*Stage
	// Seals pin files by digest (see CheckSeals).
	Seals []*Seal

	// Files maps file names to parsed files, for diagnostic snippets.
	Files map[string]*hcl.File

	// Reads records every file the evaluation depends on (see FileRead).
	Reads *FileReads
	// Funcs are the loader's caller's functions (see Loader.Funcs).
	Funcs map[string]FileFunc
}

func (c *Config) seal(name string) *Seal {
	for _, s := range c.Seals {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func (c *Config) root() string {
	if c.Root != "" {
		return c.Root
	}
	return c.Dir
}

// Variable is a `variable "NAME"` block.
type Variable struct {
	Name        string
	Description string
	Type        cty.Type
	// TypeDefaults fills optional object attributes (typeexpr defaults).
	TypeDefaults interface {
		Apply(cty.Value) cty.Value
	}
	Default     cty.Value // cty.NilVal when absent
	HasDefault  bool
	Sensitive   bool
	Nullable    bool
	Validations []*Check
	DeclRange   hcl.Range
}

// Local is one attribute of a locals block.
type Local struct {
	Name      string
	Expr      hcl.Expression
	DeclRange hcl.Range
}

// Check is a validation or postcondition block.
type Check struct {
	Condition    hcl.Expression
	ErrorMessage hcl.Expression
	DeclRange    hcl.Range
}

// Retry is a stage's retry block.
type Retry struct {
	Max       int
	On        []string // failure classes
	DeclRange hcl.Range
}

// Stage is a `stage "KIND" "NAME"` block. Attributes stay unevaluated:
// they may reference other stages' results, known only after apply.
type Stage struct {
	Kind, Name  string
	Description string

	ForEach hcl.Expression // nil without for_each
	// After lists the expressions of the after attribute, one per element.
	After []hcl.Expression
	// WaitFor lists the expressions of the wait_for attribute, one per
	// element: dependencies that order without keying.
	WaitFor []hcl.Expression
	// Attrs holds every other attribute present, generic and kind-specific,
	// by name.
	Attrs map[string]*hcl.Attribute

	Retry *Retry
	// KindBlocks are blocks of the kind's own schema, decoded by the kind.
	KindBlocks     []*hcl.Block
	Postconditions []*Check

	OnInterrupt       string // "rerun" (default) or "fail"
	OnUpstreamFailure string // "skip" (default) or "run"

	// UnknownKind is set when KIND names no stage kind: the stage keeps
	// its name and generic attributes, so references to it and within it
	// are still checked, but it is never expanded into nodes.
	UnknownKind bool

	DeclRange, KindRange, NameRange hcl.Range
}

// Address is the stage's address without an instance key.
func (s *Stage) Address() string { return addrs.Stage(s.Name).String() }

// Attr returns the attribute named n, or nil.
func (s *Stage) Attr(n string) *hcl.Attribute { return s.Attrs[n] }

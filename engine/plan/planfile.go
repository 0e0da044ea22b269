package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/storage/digest"
)

// FileFormat is the format of the plan files this cairn writes and
// reads. Format 3 added the definitions of the nodes whose key is known
// only after apply: a format 2 file cannot hold those nodes to the plan,
// and is refused.
const FileFormat = 3

// File is a saved plan (`cairn plan --out FILE`): the pipeline, the
// variable flags, --target and --replace it was planned with, and every
// node with its action and its key when known. Values of sensitive
// variables are not saved; apply needs them again.
type File struct {
	Format   int          `json:"format"`
	Pipeline string       `json:"pipeline"`
	Path     string       `json:"path"`
	Root     string       `json:"root"`
	Vars     []dsl.VarArg `json:"vars"`
	Targets  []string     `json:"targets,omitempty"`
	Replace  []string     `json:"replace,omitempty"`
	Only     bool         `json:"only,omitempty"`
	Nodes    []FileEntry  `json:"nodes"`
	// Sensitive names the sensitive variables given with --var, whose
	// values the file leaves out: apply needs them again.
	Sensitive []string `json:"sensitive,omitempty"`
	// VarFiles is the sha256 of each --var-file (by its absolute path)
	// as the plan read it: apply reads the file again, and refuses one
	// that changed since.
	VarFiles map[string]string `json:"var_files,omitempty"`
	// Cache is the cache folder (absolute) the plan was made on: its
	// actions are what that cache held, so apply takes it, and refuses
	// another, rather than find every cached node stale there.
	Cache string `json:"cache,omitempty"`
}

// FileEntry is one node of a saved plan, in plan order.
type FileEntry struct {
	Address string `json:"address"`
	Action  string `json:"action"`
	// Key is absent when it is known only after apply.
	Key string `json:"key,omitempty"`
	// Definition is, for a node whose key is known only after apply,
	// the digest of what the plan knew of that key (definitions): apply
	// refuses the plan when it is another now. Absent for the others.
	Definition string `json:"definition,omitempty"`
}

// Save writes p, made on the cache folder cacheDir, to path.
func Save(path string, p *Plan, pipelinePath string, vars []dsl.VarArg, cacheDir string) error {
	if abs, err := filepath.Abs(cacheDir); err == nil {
		cacheDir = abs
	}
	pf := &File{
		Format: FileFormat, Pipeline: p.Pipeline, Path: pipelinePath, Root: p.Graph.Root, Cache: cacheDir,
		Targets: p.Options.Targets, Replace: p.Options.Replace, Only: p.Options.Only, Nodes: []FileEntry{},
	}
	pf.Sensitive = SensitiveGiven(vars, p.Graph.Config)
	for _, v := range vars {
		if !v.File {
			if slices.Contains(pf.Sensitive, v.Name()) {
				continue
			}
		} else {
			if abs, err := filepath.Abs(v.Value); err == nil {
				v.Value = abs
			}
			if sum, err := digest.File(v.Value); err == nil {
				if pf.VarFiles == nil {
					pf.VarFiles = map[string]string{}
				}
				pf.VarFiles[v.Value] = sum
			}
		}
		pf.Vars = append(pf.Vars, v)
	}
	defs := p.definitions()
	for _, pn := range p.Nodes {
		if !pn.Skipped {
			pf.Nodes = append(pf.Nodes, FileEntry{Address: pn.Node.Addr, Action: pn.Action, Key: pn.Key, Definition: defs[pn.Node.ID]})
		}
	}
	b, err := json.MarshalIndent(pf, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// SensitiveGiven names the sensitive variables of cfg that vars give
// with --var, once each, in order: a plan file leaves their values out,
// and its apply needs them again.
func SensitiveGiven(vars []dsl.VarArg, cfg *dsl.Config) []string {
	var out []string
	for _, v := range vars {
		name := v.Name()
		if dv := cfg.Variables[name]; dv != nil && dv.Sensitive && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// LoadFile reads a saved plan. isPlan is false when the file is not
// one (it may be a pipeline); err is set too when it is a plan this cairn
// cannot apply.
func LoadFile(path string) (pf *File, isPlan bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	var probe struct {
		Format   int              `json:"format"`
		Pipeline *string          `json:"pipeline"`
		Keys     *json.RawMessage `json:"keys"`
		Nodes    *json.RawMessage `json:"nodes"`
	}
	if err := json.Unmarshal(b, &probe); err != nil || probe.Pipeline == nil || probe.Keys == nil && probe.Nodes == nil {
		return nil, false, fmt.Errorf("%s is not a cairn plan file", path)
	}
	if probe.Format != FileFormat {
		return nil, true, fmt.Errorf("%s is a plan file of format %d, which this cairn does not apply (it reads format %d): make a new plan with 'cairn plan --out FILE'", path, probe.Format, FileFormat)
	}
	pf = &File{}
	if err := json.Unmarshal(b, pf); err != nil {
		why := strings.TrimPrefix(err.Error(), "json: ")
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			why = fmt.Sprintf("its field %s holds %s, not what cairn plan writes there", te.Field, te.Value)
		}
		return nil, true, fmt.Errorf("%s is a damaged plan file (%s): make a new plan with 'cairn plan --out FILE'", path, why)
	}
	return pf, true, nil
}

// CheckAgainst compares a fresh plan with the saved one. Apply runs a saved
// plan only as it was saved: the same pipeline name, the same nodes, each
// with the same action and, where it was known, the same key, or else the
// same definition. It returns what changed, for people.
func (pf *File) CheckAgainst(p *Plan) []string {
	var changed []string
	if p.Pipeline != pf.Pipeline {
		changed = append(changed, fmt.Sprintf("the pipeline is named %q now, %q when the plan was saved", p.Pipeline, pf.Pipeline))
	}
	cur := map[string]*PlannedNode{}
	for _, pn := range p.Nodes {
		if !pn.Skipped {
			cur[pn.Node.Addr] = pn
		}
	}
	saved := map[string]bool{}
	var defs []string // the plan's definitions, made for the first entry with one
	for _, e := range pf.Nodes {
		saved[e.Address] = true
		pn, ok := cur[e.Address]
		switch {
		case !ok:
			changed = append(changed, fmt.Sprintf("%s is no longer in the pipeline", e.Address))
		case e.Key != "" && pn.Key != e.Key:
			// The reasons compare the node with its last run, not with
			// the plan: they say so.
			why := becauseOf(pn)
			if pn.Changed && why != "" {
				why = " (against its last run: " + strings.Join(pn.Reasons, "; ") + ")"
			}
			changed = append(changed, fmt.Sprintf("%s: key %s at plan time, %s now%s", e.Address, store.Short(e.Key), orUnknown(pn.Key), why))
		case pn.Action != e.Action:
			changed = append(changed, fmt.Sprintf("%s: %s, %s%s", e.Address, plannedAs(e.Action), wouldNow(pn.Action), becauseOf(pn)))
		case e.Definition != "":
			if defs == nil {
				defs = p.definitions()
			}
			if defs[pn.Node.ID] != e.Definition {
				changed = append(changed, fmt.Sprintf("%s: its definition changed since the plan was saved: its key is known only after apply, and what the plan knew of it (its arguments, the inputs no upstream of it writes) is another now", e.Address))
			}
		}
	}
	for _, pn := range p.Nodes {
		if !pn.Skipped && !saved[pn.Node.Addr] {
			changed = append(changed, fmt.Sprintf("%s is new: it was not in the pipeline when the plan was saved", pn.Node.Addr))
		}
	}
	return changed
}

// plannedAs says what a saved plan had a node do.
func plannedAs(action string) string {
	switch action {
	case ActRun:
		return "planned to run"
	case ActMayRun:
		return "planned as may run"
	case ActCached:
		return "planned as cached"
	case ActSkip:
		return "planned as skipped"
	}
	return "planned as " + action
}

// wouldNow says what a fresh plan has a node do.
func wouldNow(action string) string {
	switch action {
	case ActRun:
		return "now it would run"
	case ActMayRun:
		return "now it may run"
	case ActCached:
		return "now it would come from the cache"
	case ActSkip:
		return "now it would be skipped"
	}
	return "now " + action
}

// becauseOf is the fresh plan's reasons for a node, as a suffix.
func becauseOf(pn *PlannedNode) string {
	if len(pn.Reasons) == 0 {
		return ""
	}
	return " (" + strings.Join(pn.Reasons, "; ") + ")"
}

func orUnknown(k string) string {
	if k == "" {
		return "known after apply"
	}
	return store.Short(k)
}

package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cairn-run/cairn/dsl"
)

// PlanFile is a saved plan (`cairn plan --out FILE`): the pipeline, the
// variable flags it was planned with, and every node key known then.
// Values of sensitive variables are not saved; apply needs them again.
type PlanFile struct {
	Format   int               `json:"format"`
	Pipeline string            `json:"pipeline"`
	Path     string            `json:"path"`
	Root     string            `json:"root"`
	Vars     []dsl.VarArg      `json:"vars"`
	Keys     map[string]string `json:"keys"`
	ToRun    []string          `json:"to_run"`
}

// SavePlan writes p to path.
func SavePlan(path string, p *Plan, pipelinePath string, vars []dsl.VarArg) error {
	pf := &PlanFile{Format: 1, Pipeline: p.Pipeline, Path: pipelinePath, Root: p.Graph.Root, Keys: map[string]string{}}
	for _, v := range vars {
		if !v.File {
			name, _, _ := strings.Cut(v.Value, "=")
			if dv, ok := p.Graph.Config.Variables[strings.TrimSpace(name)]; ok && dv.Sensitive {
				continue
			}
		} else if abs, err := filepath.Abs(v.Value); err == nil {
			v.Value = abs
		}
		pf.Vars = append(pf.Vars, v)
	}
	for _, pn := range p.Nodes {
		if pn.Skipped {
			continue
		}
		if pn.Key != "" {
			pf.Keys[pn.Node.Addr] = pn.Key
		}
		if pn.Action == ActRun {
			pf.ToRun = append(pf.ToRun, pn.Node.Addr)
		}
	}
	b, err := json.MarshalIndent(pf, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// LoadPlanFile reads a saved plan.
func LoadPlanFile(path string) (*PlanFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pf PlanFile
	if err := json.Unmarshal(b, &pf); err != nil || pf.Format != 1 {
		return nil, fmt.Errorf("%s is not a cairn plan file", path)
	}
	return &pf, nil
}

// CheckAgainst compares a fresh plan with the saved one: every key known
// when the plan was saved must be unchanged.
func (pf *PlanFile) CheckAgainst(p *Plan) []string {
	var changed []string
	cur := map[string]string{}
	for _, pn := range p.Nodes {
		cur[pn.Node.Addr] = pn.Key
	}
	for addr, key := range pf.Keys {
		now, ok := cur[addr]
		switch {
		case !ok:
			changed = append(changed, fmt.Sprintf("%s is no longer in the pipeline", addr))
		case now != key:
			changed = append(changed, fmt.Sprintf("%s: key %s at plan time, %s now", addr, short(key), orUnknown(now)))
		}
	}
	return changed
}

func orUnknown(k string) string {
	if k == "" {
		return "known after apply"
	}
	return short(k)
}

package plan

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairn-run/cairn/engine/fsdigest"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/stages"
)

// Before a node starts, apply restores its cached ancestors' outputs and
// runs the others: an input that is an ancestor's output is digested after
// that. Plan digests such an input as it will be then: from the cached
// ancestor's record (the restored files over the workspace, less what the
// restore removes from its declared folders: OtherConfigurations), or not
// at all when an ancestor that writes it will run.

// outputIndex maps workspace paths to what the planned nodes write there.
type outputIndex struct {
	// at holds, for a path, every written path at or below it (an entry
	// is listed under its own path and each folder on its way).
	at map[string][]written
}

// written is one path a planned node writes: a file of a cached node's
// record, or a declared output (a file or a folder) of one that runs.
type written struct {
	id   int
	path string
	// cached: the file is restored from rec; otherwise the node runs.
	rec *store.Record
	// folder: path is a declared output of the cached node (rec), from
	// which its restore may remove another configuration's files.
	folder bool
}

// pipelineReadsInputs reports whether any stage may declare input files:
// only then is the index worth building.
func (g *Graph) pipelineReadsInputs() bool {
	for _, s := range g.StageOrder {
		if _, ok := s.Attrs["inputs"]; ok {
			return true
		}
		if k, ok := g.lookupKind(s.Kind); ok {
			if _, ok := k.(stages.InputDeclarer); ok {
				return true
			}
		}
	}
	return false
}

// add records what a planned node writes before its downstreams start.
func (x *outputIndex) add(pn *PlannedNode) {
	switch {
	case pn.Skipped || pn.Action == ActSkip:
	case pn.Record != nil:
		for f := range pn.Record.Outputs {
			x.put(written{id: pn.Node.ID, path: f, rec: pn.Record})
		}
		if pn.Spec != nil {
			for _, o := range pn.Spec.Common.Outputs {
				x.put(written{id: pn.Node.ID, path: o, rec: pn.Record, folder: true})
			}
		}
	case pn.Spec != nil:
		c := pn.Spec.Common
		for _, o := range c.Outputs {
			x.put(written{id: pn.Node.ID, path: o})
		}
		if c.Result != "" {
			x.put(written{id: pn.Node.ID, path: c.Result})
		}
	}
}

func (x *outputIndex) put(w written) {
	if x.at == nil {
		x.at = map[string][]written{}
	}
	x.at[w.path] = append(x.at[w.path], w)
	for p := range parents(w.path) {
		x.at[p] = append(x.at[p], w)
	}
}

// overlapping returns what is written at, below or (a folder output)
// above the input path in.
func (x *outputIndex) overlapping(in string) []written {
	out := append([]written(nil), x.at[in]...)
	for q := range parents(in) {
		for _, w := range x.at[q] {
			if w.path == q {
				out = append(out, w)
			}
		}
	}
	return out
}

// isAncestor reports whether node id is a transitive dependency of n.
// Nodes are in topological order, so no dependency of a node below id
// leads to it.
func (g *Graph) isAncestor(id int, n *Node) bool {
	if _, direct := slices.BinarySearch(n.Deps, id); direct {
		return true
	}
	seen := map[int]bool{}
	stack := append([]int(nil), n.Deps...)
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if d == id {
			return true
		}
		if d < id || seen[d] {
			continue
		}
		seen[d] = true
		stack = append(stack, g.Nodes[d].Deps...)
	}
	return false
}

// inputWrites finds, for each of n's inputs, what its ancestors write
// there before it starts. pending maps an input's absolute path to the
// files restored under it that differ from the workspace's, and to what
// the restores remove; runs is an ancestor that will run and writes there
// (n's key then waits for it).
func (p *Plan) inputWrites(x *outputIndex, n *Node, sn *stages.Node, cache *store.Cache) (pending map[string]map[string]fsdigest.Pending, runs *Node) {
	g, stat := p.Graph, cache.Stat
	add := func(full, rel string, pd fsdigest.Pending) {
		if pending == nil {
			pending = map[string]map[string]fsdigest.Pending{}
		}
		if pending[full] == nil {
			pending[full] = map[string]fsdigest.Pending{}
		}
		if was, ok := pending[full][rel]; ok && !was.Remove && pd.Remove {
			return // removed first, then restored there
		}
		pending[full][rel] = pd
	}
	for _, in := range sn.Common.Inputs {
		ws := x.overlapping(in)
		if len(ws) == 0 {
			continue
		}
		full := filepath.Join(g.Root, in)
		for _, w := range ws {
			if !g.isAncestor(w.id, n) {
				continue
			}
			if w.folder {
				for _, q := range p.restoreRemoves(w.id, cache) {
					if rel, ok := relUnder(in, q); ok {
						add(full, rel, fsdigest.Pending{Remove: true})
					} else if _, ok := relUnder(q, in); ok {
						add(full, "", fsdigest.Pending{Remove: true})
					}
				}
				continue
			}
			if w.rec == nil {
				if runs == nil || w.id < runs.ID {
					runs = g.Nodes[w.id]
				}
				continue
			}
			rel, ok := relUnder(in, w.path)
			if !ok {
				continue
			}
			want := w.rec.Outputs[w.path]
			// A file whose content already matches is left as it is;
			// a link is replaced by the file, whatever it leads to, as
			// apply's restore does (OutputState).
			if _, same := OutputState(g.Root, w.path, want, stat); same {
				continue
			}
			mode := uint32(0o644)
			if m, ok := w.rec.Modes[w.path]; ok && m != 0 {
				mode = m
			}
			add(full, rel, fsdigest.Pending{Digest: want, Exec: mode&0o111 != 0})
		}
	}
	return pending, runs
}

// restoreRemoves returns what apply removes when it takes node id from
// the cache: before it restores the record, the configuration the
// workspace holds where its outputs go (a file where its folder goes, or a
// folder where its file goes: RestoreInTheWay), and after it, from its
// declared folders, another configuration's files and the folders that
// leaves empty (OtherConfigurations). It is found once per node, when a
// downstream's input first overlaps them.
func (p *Plan) restoreRemoves(id int, cache *store.Cache) []string {
	if q, ok := p.removes[id]; ok {
		return q
	}
	pn := p.Nodes[id]
	g := p.Graph
	files, folders := OtherConfigurations(g.Root, g.Config.Name, pn.Node.Addr, pn.Spec.Common.Outputs, pn.Record, cache)
	q := append(files, folders...)
	if w := RestoreInTheWay(g.Root, g.Config.Name, pn.Node.Addr, pn.Record, cache); w.User == "" {
		q = append(append(q, w.Files...), w.Folders...)
	}
	if p.removes == nil {
		p.removes = map[int][]string{}
	}
	p.removes[id] = q
	return q
}

// relUnder is path relative to dir ("" when they are the same), false when
// path is not dir or below it.
func relUnder(dir, path string) (string, bool) {
	if path == dir {
		return "", true
	}
	if len(path) > len(dir) && path[len(dir)] == '/' && strings.HasPrefix(path, dir) {
		return path[len(dir)+1:], true
	}
	return "", false
}

// pendingDigester digests inputs as they will be once the pending files
// are written.
type pendingDigester struct {
	stat    *fsdigest.Cache
	pending map[string]map[string]fsdigest.Pending
}

func (d pendingDigester) Tree(path string) (string, error) {
	return d.stat.TreeWith(path, d.pending[path])
}

// ContentTree is Tree through links where nothing is pending under path;
// restored files over a tree are digested with its links as written.
func (d pendingDigester) ContentTree(path string) (string, error) {
	if len(d.pending[path]) == 0 {
		return d.stat.ContentTree(path)
	}
	return d.stat.TreeWith(path, d.pending[path])
}

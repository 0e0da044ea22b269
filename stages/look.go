package stages

import (
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// Look remembers what the kinds' read-only looks at the workspace found
// while a plan looks at it at one moment: a grid's nodes name the same
// worker script and the same bundle folder, hundreds of times. The
// planner gives one Look to every node it evaluates in a plan or a
// validation (Node.Look), and ends it when that moment is over. A nil or
// ended Look remembers nothing: a node's Run, after upstreams may have
// written, looks again. Safe for concurrent use.
type Look struct {
	ended   atomic.Bool
	stats   sync.Map // path -> statResult
	bundles sync.Map // root and bundle paths -> bundleResult
	trees   sync.Map // treeKey -> treeResult
}

// End makes l remember nothing from now on, for whoever holds it.
func (l *Look) End() { l.ended.Store(true) }

func (l *Look) live() bool { return l != nil && !l.ended.Load() }

type statResult struct {
	fi  fs.FileInfo
	err error
}

type bundleResult struct{ err error }

type treeKey struct {
	path    string
	content bool // ContentTree
}

type treeResult struct {
	digest string
	err    error
}

// Stat is os.Stat of path, once per path for a Look.
func (l *Look) Stat(path string) (fs.FileInfo, error) {
	if !l.live() {
		return os.Stat(path)
	}
	if r, ok := l.stats.Load(path); ok {
		return r.(statResult).fi, r.(statResult).err
	}
	fi, err := os.Stat(path)
	l.stats.Store(path, statResult{fi, err})
	return fi, err
}

// bundleLinkProblem is the package's bundleLinkProblem, once per root
// and bundle for a Look.
func (l *Look) bundleLinkProblem(root string, bundle []string) error {
	if !l.live() || len(bundle) == 0 {
		return bundleLinkProblem(l, root, bundle)
	}
	k := root + "\x00" + strings.Join(bundle, "\x00")
	if r, ok := l.bundles.Load(k); ok {
		return r.(bundleResult).err
	}
	err := bundleLinkProblem(l, root, bundle)
	l.bundles.Store(k, bundleResult{err})
	return err
}

// TreeDigester digests a file or a folder's tree as the cache's stat
// cache does: Tree as the files are, ContentTree through their links.
type TreeDigester interface {
	ContentDigester
	Tree(path string) (string, error)
}

// Tree is dg's Tree of path (its ContentTree when content), once per path
// for a Look: a grid's nodes share their bundles, datasets and methods'
// code, whose folders a plan walked for each node.
func (l *Look) Tree(dg TreeDigester, path string, content bool) (string, error) {
	digest := dg.Tree
	if content {
		digest = dg.ContentTree
	}
	if !l.live() {
		return digest(path)
	}
	k := treeKey{path, content}
	if r, ok := l.trees.Load(k); ok {
		return r.(treeResult).digest, r.(treeResult).err
	}
	d, err := digest(path)
	r, _ := l.trees.LoadOrStore(k, treeResult{d, err}) // the same folder gives the same digest
	return r.(treeResult).digest, r.(treeResult).err
}

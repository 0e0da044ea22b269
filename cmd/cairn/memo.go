package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/engine/fsdigest"
	"github.com/cairn-run/cairn/engine/memo"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/storage/atomicfile"
	"github.com/cairn-run/cairn/ui"
)

// memoIdentity names what a memo is valid for: this cairn binary, the
// working folder, the workspace, the pipeline path, the cache, the
// variables given on the command line and every CAIRN_ environment
// variable. "" turns the up-to-date check off: CAIRN_NO_MEMO=1, or a
// system whose stat information cannot vouch for files.
func (a *app) memoIdentity(args []string) string {
	if os.Getenv("CAIRN_NO_MEMO") == "1" {
		return ""
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	sig := fsdigest.SigOf(fi)
	if !sig.Strong() {
		return ""
	}
	root, err1 := filepath.Abs(a.root())
	cache, err2 := filepath.Abs(a.cachePath())
	wd, err3 := os.Getwd()
	if err1 != nil || err2 != nil || err3 != nil {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "cairn.memo.v1\nexe %q %s\nwd %q\nroot %q\ncache %q\npipeline %q\n", exe, sig, wd, root, cache, pipelineArgs(args))
	for _, v := range a.vars {
		fmt.Fprintf(h, "var %t %q\n", v.File, v.Value)
	}
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CAIRN_") {
			env = append(env, kv)
		}
	}
	sort.Strings(env)
	for _, kv := range env {
		fmt.Fprintf(h, "env %q\n", kv)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// upToDate returns the memo of identity when it still holds, or nil.
func (a *app) upToDate(identity string) *memo.Memo {
	m, _ := a.upToDateWhy(identity)
	return m
}

// upToDateWhy is upToDate, with the reason when it returns nil (what
// apply -v prints).
func (a *app) upToDateWhy(identity string) (*memo.Memo, string) {
	if identity == "" {
		return nil, "off (CAIRN_NO_MEMO=1, or this system's stat information cannot vouch for files)"
	}
	cache := a.cachePath()
	path := memo.Path(cache, identity)
	m, err := memo.Read(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if b, err := os.ReadFile(whyNoMemoPath(path)); err == nil && len(b) > 0 {
			return nil, "the last apply of this pipeline with these variables, workspace, cache and CAIRN_ environment left no memo: " + string(b)
		}
		return nil, "no memo of this pipeline with these variables, workspace, cache and CAIRN_ environment: no such apply has ended with every node done and settled"
	case err != nil:
		return nil, "the memo cannot be read: " + err.Error()
	case m.Identity != identity:
		return nil, "the memo is of another pipeline, variables or environment"
	}
	root, err := filepath.Abs(a.root())
	if err != nil {
		return nil, "the workspace's path cannot be made absolute"
	}
	if ok, why := m.Check(root, cache); !ok {
		return nil, why
	}
	if m.Settled() {
		// Outputs written moments before the memo was made were read
		// and can be vouched for by their times from now on.
		_ = m.Write(path)
	}
	return m, ""
}

// explainUpToDate prints, for apply -v, why the up-to-date check did not
// answer: a full evaluation of an unchanged pipeline always has its
// reason shown.
func (a *app) explainUpToDate(identity, why string) {
	if why == "" {
		if _, w := a.upToDateWhy(identity); w != "" {
			why = w
		} else {
			why = "the memo holds, but -v lists every node: the pipeline is evaluated"
		}
	}
	fmt.Fprintf(a.stderr, "up-to-date check: not used: %s\n", why)
}

// applyUpToDate is `cairn apply` for a pipeline its memo vouches for.
func (a *app) applyUpToDate(m *memo.Memo) (bool, error) {
	if engine.ClusterJobsLeft(a.cachePath()) {
		// A dead run's cluster jobs are for the full path, whose
		// executor re-attaches to them.
		return false, nil
	}
	// The GPUs are looked at only when set in the environment: what the
	// full path would say of simulated ones (a bad value is for the full
	// path to report); real ones need no word, and no driver call.
	var pool *gpu.Pool
	if os.Getenv("CAIRN_GPUS") != "" {
		var err error
		if pool, err = gpu.NewPool(os.Getenv); err != nil {
			return false, nil
		}
	}
	a.printApplyHeader(a.stdout, m.Summary, plan.Counts{Cached: len(m.Nodes)}, pool)
	vars := map[string]*dsl.Variable{}
	for _, name := range m.Sensitive {
		vars[name] = &dsl.Variable{Name: name, Sensitive: true}
	}
	res, err := engine.ApplyMemo(context.Background(), m, engine.MemoApplyOptions{
		CacheDir: a.cachePath(), Events: ui.NewTerminal(ui.Options{Progress: a.stdout}),
		Args: redactArgs(a.args, vars),
	})
	if errors.Is(err, engine.ErrMemoStale) {
		return false, nil // a gc ran meanwhile: the full path
	}
	if err != nil {
		return true, a.cacheError("record this apply in the cache", err)
	}
	a.printSummary(a.stdout, res)
	return true, nil
}

// rememberUpToDate keeps the memo of an apply that ended with every node
// done, or removes a stale one. An apply -v (explainID, its identity: see
// explainEvaluation) evaluates in full to list every node, leaves the memo
// that the next apply without -v checks, and says why it leaves none.
func (a *app) rememberUpToDate(identity, explainID string, p *plan.Plan, res *engine.ApplyResult, cache *store.Cache) {
	if explainID != "" {
		identity = explainID
	}
	if identity == "" {
		return
	}
	path := memo.Path(a.cachePath(), identity)
	var m *memo.Memo
	why := "a warning was printed"
	if !a.warned {
		m, why = engine.BuildMemo(p, res, cache, identity)
	}
	if m != nil {
		if err := m.Write(path); err != nil {
			m, why = nil, "the memo cannot be written: "+err.Error()
		}
	}
	if m != nil {
		_ = os.Remove(whyNoMemoPath(path))
	} else {
		_ = os.Remove(path)
		// Kept for the next apply -v, which would otherwise have to guess.
		_ = atomicfile.Write(whyNoMemoPath(path), []byte(why), false)
		if explainID != "" {
			fmt.Fprintf(a.stderr, "up-to-date check: this run leaves no memo: %s\n", why)
		}
	}
}

// whyNoMemoPath is where an apply that leaves no memo says why, next to
// the memo it would have written.
func whyNoMemoPath(memoPath string) string { return memoPath + ".none" }

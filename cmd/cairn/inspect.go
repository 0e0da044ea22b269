package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/text/unicode/norm"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/dsl/addrs"
	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/runreport"
	"github.com/cairn-run/cairn/stages"
)

// lowerHex reports whether s is min to max lowercase hex digits: a key
// (or a prefix of one) is 8 to 64 of them, and 1 to 7 look like a prefix
// too short to use. (Not a regexp: `{8,64}` compiles to a program of 64
// steps, at the start of every cairn command.)
func lowerHex(s string, min, max int) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (a *app) showCmd() *cobra.Command {
	var all, asJSON bool
	var pipelinePath string
	cmd := &cobra.Command{
		Use:   "show KEY | ADDRESS | RUN",
		Short: "Show a cached record (by key or node address) or a run's nodes",
		Long: `Show one of:
  KEY      a node key (or a unique prefix of 8+ hex digits): its action record
  ADDRESS  a node address such as 'stage.ruler["a"]': the record that matches
           the current configuration (the workspace's pipeline, or the one
           --pipeline names, with --var and --var-file, as 'cairn plan' reads
           it); where there is none, the last
           record committed, per pipeline, and it says so. --all shows every
           record of the address, newest first. The records (JSON) go to
           standard output, what each is ("# ..." lines) to standard error:
           cairn show ADDRESS | jq reads them
  RUN      a run id from 'cairn status': per node, state, attempts, duration,
           peak memory and log paths (for a run the up-to-date check answered:
           that every node was taken from the cache); with --json, the run's
           header, counts and nodes as 'cairn report' shows them`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			arg := norm.NFC.String(args[0]) // an address's key, as the pipeline's
			if strings.TrimSpace(arg) == "" {
				return badInput("give what to show: a run id (cairn status lists them), a key, or a node address such as stage.NAME[\"KEY\"]; the argument is empty")
			}
			if err := a.checkCacheFolder(); err != nil {
				return err
			}
			if _, err := os.Stat(a.cachePath()); errors.Is(err, fs.ErrNotExist) {
				// A query makes no cache, where a mistyped --cache
				// or workspace would leave one behind.
				return a.unknownShowArg(arg)
			}
			if dir, ok := a.runFolder(arg); ok {
				if asJSON {
					return a.showRunJSON(dir)
				}
				return a.showRun(dir)
			}
			if r, err := runlog.FindUpToDate(a.cachePath(), arg); err == nil && r != nil {
				if asJSON {
					// The report's header and counts, as for any run: it
					// ran nothing, every node cached, and has no nodes to
					// list (it left no journal).
					rep := runreport.Report{Run: runreport.Run{ID: r.RunID, Pipeline: r.Pipeline, State: "ok", Start: r.Time,
						End: r.Time.Add(r.Took()), Duration: r.Took().Seconds(), Args: r.Args, Counts: runreport.Counts{Cached: r.Cached},
						Notes: []string{"up to date: every node taken from the cache by the up-to-date check; the run left no journal"}}, Nodes: []*runreport.Node{}}
					enc := json.NewEncoder(a.stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(rep)
				}
				fmt.Fprintf(a.stdout, "Run %s of pipeline %s, started %s UTC, took %s: up to date, every node taken from the cache (%d nodes).\n",
					r.RunID, r.Pipeline, r.Time.UTC().Format("2006-01-02 15:04:05"), r.Took().Round(time.Millisecond), r.Cached)
				return nil
			}
			cache, err := a.openCache()
			if err != nil {
				return err
			}
			defer cache.Close()
			if runlog.IsRunID(arg) {
				return a.noRun(arg, cache)
			}
			if lowerHex(arg, 8, 64) {
				key, err := cache.FindKey(arg)
				if err != nil {
					return badInput("%s", err)
				}
				r, _ := cache.Lookup(key)
				fmt.Fprintln(a.stdout, plan.RecordText(r))
				return nil
			}
			var keys map[string]string
			var others []string
			if n, err := addrs.Parse(arg); err == nil {
				keys = cache.AddressKeys(n.String())
				others = cache.AddressRecords(n.String())
			}
			if len(keys) == 0 && len(others) == 0 {
				return a.unknownShowArg(arg)
			}
			return a.showAddress(cache, pipelinePath, addrs.WithPrefix(arg), keys, others, all)
		},
	}
	a.addVarFlags(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "with an ADDRESS: every record of it in the cache, not only the current configuration's")
	cmd.Flags().StringVar(&pipelinePath, "pipeline", "", "with an ADDRESS: the pipeline (file or folder) whose current configuration to match, as 'cairn plan PATH' reads it (default: the workspace's)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "with a RUN: its header, counts and nodes as JSON (the numbers of its report); a KEY's or ADDRESS's records are JSON with or without it")
	return cmd
}

// unknownShowArg is show's error for an argument nothing in the cache
// answers to (or, where there is no cache, nothing could).
func (a *app) unknownShowArg(arg string) error {
	if runlog.IsRunID(arg) {
		return a.noRun(arg, nil)
	}
	if lowerHex(arg, 1, 7) {
		return badInput("%q is too short to name a key: a key prefix needs at least 8 hex digits (and no %s has a cached result)", arg, addrs.WithPrefix(arg))
	}
	noCache := ""
	if _, err := os.Stat(a.cachePath()); errors.Is(err, fs.ErrNotExist) {
		noCache = fmt.Sprintf("; there is no cache at %s yet ('cairn apply' makes it; --cache or CAIRN_CACHE names another)", a.cachePath())
	}
	if _, err := addrs.Parse(arg); err == nil {
		// A well-formed address: a node that never ended well (or
		// never ran) has no record; its runs tell what happened.
		return badInput("nothing is known of %s: no cached result (a node that failed or never ran has none; 'cairn status' lists the runs, and 'cairn show RUN' shows what each did)%s", arg, noCache)
	}
	return badInput("nothing is known of %s: not a run id, a key, or an address with a cached result (addresses look like stage.NAME[\"KEY\"])%s", arg, noCache)
}

// noRun is show's error for a run id with no run folder in the cache (nor
// a line in its up-to-date log): gc removes old run folders, and the
// records the run made may outlive its folder (cache nil: there is none).
func (a *app) noRun(id string, cache *store.Cache) error {
	base := filepath.Join(a.cachePath(), "runs")
	if _, err := os.Stat(a.cachePath()); errors.Is(err, fs.ErrNotExist) {
		return badInput("no run %s in %s: there is no cache at %s yet ('cairn apply' makes it; --cache or CAIRN_CACHE names another)", id, base, a.cachePath())
	}
	var made []string
	if cache != nil {
		for _, r := range cache.Records() {
			if r.RunID == id {
				made = append(made, r.Address)
			}
		}
	}
	kept := ""
	if len(made) > 0 {
		sort.Strings(made)
		kept = fmt.Sprintf("; the records it made are still in the cache (of %s: 'cairn show ADDRESS' shows them)", idsOrNone(made))
	}
	return badInput("no run %s in %s: cairn gc removes old run folders (or the run was another cache's: --cache or CAIRN_CACHE names it)%s; 'cairn status' lists the runs", id, base, kept)
}

// noRunInCache is noRun with the cache opened, where there is one, to name
// the records the run left.
func (a *app) noRunInCache(id string) error {
	if _, err := os.Stat(a.cachePath()); err != nil {
		return a.noRun(id, nil)
	}
	cache, err := a.openCache()
	if err != nil {
		return a.noRun(id, nil)
	}
	defer cache.Close()
	return a.noRun(id, cache)
}

// currentKey is the key the workspace's pipeline (with --var and
// --var-file) gives addr now, and that pipeline, in words (where). ok is
// false when there is no such pipeline, it has no node addr, or the key
// is known only once an upstream has run; why then says which, for the
// reader. A pipeline named with --pipeline, or given variables, that does
// not load or plan is an error (its diagnostics printed, exit 2), as in
// 'cairn plan': what the command line asks for cannot be matched.
func (a *app) currentKey(cache *store.Cache, path, addr string) (key, where, why string, ok bool, err error) {
	explicit := path != "" || len(a.vars) > 0
	if path == "" {
		path = "."
	}
	defer a.hugeHeap(path)()
	l, diags := plan.Load(plan.LoadOptions{
		Path: path, Root: a.root(),
		Vars: a.varInputs(), CacheDir: a.cachePath(),
	})
	if diags.HasErrors() || l == nil || l.Graph == nil {
		switch {
		case explicit && diags.HasErrors():
			return "", "", "", false, a.printDiags(l.Files(), diags)
		case path == "." && dsl.HasDiag(diags, "No pipeline files"):
			return "", "", "no pipeline in this workspace to match it against (name one with --pipeline FILE)", false, nil
		case path == ".":
			return "", "", "the workspace's pipeline does not load ('cairn validate' says why)", false, nil
		}
		return "", "", fmt.Sprintf("the pipeline %s does not load ('cairn validate %s' says why)", path, path), false, nil
	}
	p, diags := plan.Make(l.Graph, cache, plan.Options{})
	if diags.HasErrors() {
		if explicit {
			return "", "", "", false, a.printDiags(l.Files(), diags)
		}
		return "", "", "the workspace's pipeline does not plan ('cairn plan' says why)", false, nil
	}
	where = fmt.Sprintf("pipeline %s in this workspace", p.Pipeline)
	for _, n := range p.Nodes {
		if n.Node.Addr != addr {
			continue
		}
		if n.Key == "" {
			return "", where, fmt.Sprintf("in %s its key is known only once its upstreams have run ('cairn plan' shows them)", where), false, nil
		}
		return n.Key, where, "", true, nil
	}
	return "", where, fmt.Sprintf("%s has no node %s", where, addr), false, nil
}

// showAddress prints the record of addr that matches the current
// configuration, or, when there is none, the last record committed per
// pipeline (last), saying which it is; with all, every record of addr
// (keys), newest first.
func (a *app) showAddress(cache *store.Cache, path, addr string, last map[string]string, keys []string, all bool) error {
	cur, where, why, known, err := a.currentKey(cache, path, addr)
	if err != nil {
		return err
	}
	var current *store.Record
	if known {
		if r, ok := cache.Lookup(cur); ok {
			current = r
		} else {
			why = fmt.Sprintf("the current configuration (%s) gives it key %s, which has no record: 'cairn apply' makes it", where, store.Short(cur))
		}
	}
	label := func(r *store.Record) string {
		var tags []string
		if current != nil && r.Key == current.Key {
			tags = append(tags, fmt.Sprintf("the record that matches the current configuration (%s)", where))
		}
		if last[r.Pipeline] == r.Key {
			tags = append(tags, "the last committed")
		}
		if len(tags) == 0 {
			tags = append(tags, "an earlier record, of another configuration")
		}
		return fmt.Sprintf("# pipeline %s, %s: %s", r.Pipeline, addr, strings.Join(tags, "; "))
	}
	var records []*store.Record
	for _, k := range keys {
		if r, ok := cache.Lookup(k); ok {
			records = append(records, r)
		}
	}
	sort.Slice(records, func(i, j int) bool {
		if !records[i].Ended.Equal(records[j].Ended) {
			return records[i].Ended.After(records[j].Ended)
		}
		return records[i].Key < records[j].Key
	})
	if all {
		if len(records) == 0 {
			return a.lastGone(addr, last)
		}
		for _, r := range records {
			a.printRecord(label(r), r)
		}
		return nil
	}
	more := func(shown int) {
		if n := len(records) - shown; n > 0 {
			fmt.Fprintf(a.stderr, "# %d other record(s) of %s in this cache: cairn show --all '%s'\n", n, addr, addr)
		}
	}
	if current != nil {
		a.printRecord(label(current), current)
		more(1)
		return nil
	}
	// No record of the current configuration: the last ones committed,
	// said to be that (or, where they are gone, the newest there is).
	var shown []*store.Record
	for _, p := range sortedStrings(last) {
		if r, ok := cache.Lookup(last[p]); ok {
			shown = append(shown, r)
		}
	}
	if len(shown) == 0 && len(records) > 0 {
		shown = records[:1]
	}
	if len(shown) == 0 {
		return a.lastGone(addr, last)
	}
	fmt.Fprintf(a.stderr, "# no record matches the current configuration: %s; the last record committed follows\n", why)
	for _, r := range shown {
		a.printRecord(label(r), r)
	}
	more(len(shown))
	return nil
}

// printRecord prints a record of an address: what it is (label, a "#"
// line) on standard error, for people, and the record, JSON, alone on
// standard output, for them and for jq.
func (a *app) printRecord(label string, r *store.Record) {
	fmt.Fprintln(a.stderr, label)
	fmt.Fprintln(a.stdout, plan.RecordText(r))
}

// lastGone is the error for an address whose records are all gone.
func (a *app) lastGone(addr string, last map[string]string) error {
	var gone []string
	for _, p := range sortedStrings(last) {
		gone = append(gone, fmt.Sprintf("pipeline %s: key %s", p, last[p]))
	}
	return badInput("the last result of %s is gone (evicted, collected or damaged): %s", addr, strings.Join(gone, ", "))
}

func sortedStrings(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type nodeView struct {
	state, class, msg string
	attempts          int
	start, end        time.Time
	// tryStart is when its last attempt started; ran its ended
	// attempts' own run times added (runlog.AttemptSeconds), in which a
	// cluster job's queue wait is not: the node's duration, as apply and
	// the report give it.
	tryStart    time.Time
	ran         float64
	rss, gpuMiB float64
	logs        []string
	gpus        []int
	// queued are a serve node's replicas whose cluster job waits in the
	// queue.
	queued map[int]bool
}

// addLogs adds log paths not listed yet: every attempt's logs are shown.
func (v *nodeView) addLogs(logs []string) {
	for _, l := range logs {
		if !slices.Contains(v.logs, l) {
			v.logs = append(v.logs, l)
		}
	}
}

func (a *app) showRun(dir string) error {
	ri, err := runlog.Load(dir)
	if err != nil {
		return badInput("cannot read run %s: %s", dir, err)
	}
	started := runStart(ri)
	if !ri.Start.IsZero() {
		started += " UTC"
	}
	fmt.Fprintf(a.stdout, "run %s  pipeline %s  pid %d  started %s  %s\n\n", ri.ID, ri.Pipeline, ri.PID, started, runState(ri))
	if ri.Damaged != "" {
		fmt.Fprintf(a.stdout, "The run's journal is not whole: %s.\n\n", ri.Damaged)
	}
	for _, e := range ri.Entries {
		if e.T == runlog.RunEnd && e.Status == "refused" && e.Message != "" {
			fmt.Fprintf(a.stdout, "%s\n\n", strings.TrimPrefix(e.Message, engine.ErrRefused.Error()+": "))
		}
	}
	nodes := map[string]*nodeView{}
	var order []string
	get := func(addr string) *nodeView {
		v, ok := nodes[addr]
		if !ok {
			v = &nodeView{state: "planned"}
			nodes[addr] = v
			order = append(order, addr)
		}
		return v
	}
	for _, e := range ri.Entries {
		if e.Node == "" || e.T == runlog.BatchEvent {
			continue
		}
		v := get(e.Node)
		switch e.T {
		case runlog.Started:
			// The duration is the node's, every attempt included, as
			// apply and the report give it.
			if e.Replica > 0 {
				// A serve node's replicas start one by one: it holds
				// all their GPUs.
				g := append(slices.Clone(v.gpus), e.GPUs...)
				slices.Sort(g)
				v.state, v.gpus = "running", slices.Compact(g)
			} else {
				v.state, v.gpus = "running", e.GPUs
			}
			if v.start.IsZero() {
				v.start = e.Time
			}
			if e.Attempt > v.attempts {
				v.tryStart = e.Time // a cluster job's second started record is the same attempt's
				// An earlier attempt's failure is not the node's.
				v.class, v.msg = "", ""
			}
			v.attempts = max(v.attempts, e.Attempt)
			v.addLogs(e.Logs)
		case runlog.Finished:
			// A success after failed attempts has no failure class.
			v.state, v.end, v.rss, v.gpuMiB, v.class, v.msg = "ok", e.Time, e.PeakRSS, e.PeakGPU, "", ""
			v.ran += runlog.AttemptSeconds(v.tryStart, e)
			// A kind that works in cairn's process (a decision replay,
			// an aggregate) has no started record: its attempt is on
			// its end, as --json counts it.
			v.attempts = max(v.attempts, e.Attempt)
		case runlog.Failed:
			// A node that failed before its process started (class
			// setup) has no started record: its attempt and logs are
			// on the failure.
			if e.Attempt > v.attempts {
				v.tryStart = time.Time{}
			}
			if e.Attempt > 0 {
				v.ran += runlog.AttemptSeconds(v.tryStart, e)
			}
			v.state, v.end, v.class, v.msg = "failed", e.Time, e.Class, e.Message
			if runlog.Stopped(e.Class, ri.State) {
				v.state, v.class = "interrupted", ""
			}
			v.rss, v.gpuMiB = e.PeakRSS, e.PeakGPU
			v.attempts = max(v.attempts, e.Attempt)
			v.addLogs(e.Logs)
		case runlog.Cached:
			v.state = "cached"
		case runlog.Skipped:
			v.state, v.msg = "skipped", e.Message
		case runlog.Serve:
			switch e.Status {
			case "queued":
				if v.queued == nil {
					v.queued = map[int]bool{}
				}
				v.queued[e.Replica] = true
			case "running", "stopped", "failed":
				delete(v.queued, e.Replica)
			}
		}
	}
	if len(order) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tATTEMPTS\tDURATION\tPEAK RSS\tPEAK GPU\tGPUS\tLOGS")
	for _, addr := range order {
		v := nodes[addr]
		// Its last attempt journaled its end (an interrupted node's too,
		// stopped by Ctrl-C): its duration is its attempts' own run times.
		ended := v.state == "ok" || v.state == "failed" || v.state == "interrupted"
		if v.state == "running" && ri.State != "running" {
			v.state = "interrupted"
		} else if v.state == "running" && len(v.queued) > 0 {
			// A serve node whose replicas' jobs wait in the cluster's
			// queue.
			v.state = "queued"
		}
		dur := "-"
		switch {
		case ended && v.ran > 0:
			// Its attempts' own run times added, as its "ok in" line,
			// duration_s and the report give it (from the journal's
			// times alone, a cluster job's would hold its wait in the
			// queue).
			dur = time.Duration(v.ran * float64(time.Second)).Round(time.Millisecond).String()
		case !v.start.IsZero() && !v.end.IsZero():
			dur = v.end.Sub(v.start).Round(time.Millisecond).String()
		}
		state := v.state
		if v.class != "" {
			state += " (" + v.class + ")"
		}
		// A stream the node wrote nothing to (so far) has no file.
		logs := "-"
		if len(v.logs) > 0 {
			var ls []string
			for _, l := range v.logs {
				if !executor.LogWritten(l) {
					l += " (empty)"
				}
				ls = append(ls, l)
			}
			logs = strings.Join(ls, " ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", addr, state, v.attempts, dur, mib(v.rss), mib(v.gpuMiB), ints(v.gpus), logs)
	}
	return tw.Flush()
}

func mib(x float64) string {
	if x == 0 {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', 1, 64) + " MiB"
}

func ints(xs []int) string {
	if len(xs) == 0 {
		return "-"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func (a *app) statusCmd() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List runs in flight and recent ones, and GPU batches, across processes",
		Long: `List runs of this cache (newest first): run id, start time (UTC), pipeline and
state. A run whose cairn process is gone without finishing shows as
interrupted. Below, GPU batches: tag, batch id, start, log folder, variants and
RUNNING / DONE / FAILED / INTERRUPTED.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.checkCacheFolder(); err != nil {
				return err
			}
			runs, err := runlog.List(a.cachePath())
			if err != nil {
				return badInput("%s", err)
			}
			if len(runs) == 0 {
				fmt.Fprintf(a.stdout, "No runs in %s.\n", a.cachePath())
				return nil
			}
			shown := runs
			if !all && len(shown) > 10 {
				shown = shown[:10]
			}
			tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTARTED (UTC)\tPIPELINE\tSTATE\tOK\tCACHED\tFAILED\tSKIPPED\tINTERRUPTED\tFAILED ATTEMPTS")
			for _, r := range shown {
				c := countNodes(r)
				c.cached += r.UpToDate
				pipeline := r.Pipeline
				if pipeline == "" {
					pipeline = "?"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", r.ID, runStart(r), pipeline, runState(r), c.ok, c.cached, c.failed, c.skipped, c.interrupted, c.failedAttempts)
			}
			_ = tw.Flush()
			for _, r := range shown {
				if r.Damaged != "" {
					fmt.Fprintf(a.stdout, "run %s: %s.\n", r.ID, r.Damaged)
				}
			}
			var batches []*runlog.Batch
			for _, r := range runs {
				last := map[string]*runlog.Batch{}
				var ids []string
				for _, e := range r.Entries {
					if e.T == runlog.BatchEvent && e.Batch != nil {
						if _, ok := last[e.Batch.ID]; !ok {
							ids = append(ids, e.Batch.ID)
						}
						last[e.Batch.ID] = e.Batch
					}
				}
				for _, id := range ids {
					b := last[id]
					if b.State == engine.BatchRunning && r.State != "running" {
						b.State = engine.BatchInterrupted
					}
					batches = append(batches, b)
				}
			}
			if len(batches) > 0 {
				fmt.Fprintln(a.stdout, "\nBatches:")
				tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TAG\tBATCH\tSTARTED (UTC)\tLOG DIR\tVARIANTS\tSTATE")
				for i, b := range batches {
					if !all && i >= 10 {
						break
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", b.Tag, b.ID, b.Start.UTC().Format("2006-01-02 15:04:05"), relPath(a.root(), b.LogDir), stages.LedgerVariants(b.Variants, b.Debug), b.State)
				}
				_ = tw.Flush()
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "list every run, not the last 10")
	return cmd
}

// nodeCounts are a run's nodes by how each ended, and its failed attempts
// (retried or not) apart.
type nodeCounts struct {
	ok, cached, failed, skipped, interrupted, failedAttempts int
}

// countNodes counts each node of run r once, by its last record: a node
// that failed twice and then succeeded is one ok node with two failed
// attempts, and a node running again after a failed attempt is in no
// column yet. A node stopped by an interrupt (Ctrl-C), and one left
// running by a run that was killed, are interrupted, not failed.
func countNodes(r *runlog.RunInfo) nodeCounts {
	var c nodeCounts
	last := map[string]string{}
	for _, e := range r.Entries {
		switch e.T {
		case runlog.Failed:
			if runlog.Stopped(e.Class, r.State) {
				last[e.Node] = "interrupted"
				continue
			}
			if e.Attempt > 0 { // a failure before any attempt ran is none
				c.failedAttempts++
			}
			fallthrough
		case runlog.Started, runlog.Finished, runlog.Cached, runlog.Skipped:
			last[e.Node] = e.T
		}
	}
	for _, t := range last {
		switch t {
		case runlog.Finished:
			c.ok++
		case runlog.Cached:
			c.cached++
		case runlog.Failed:
			c.failed++
		case runlog.Skipped:
			c.skipped++
		case "interrupted":
			c.interrupted++
		case runlog.Started:
			if r.State != "running" {
				c.interrupted++
			}
		}
	}
	return c
}

func relPath(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

func (a *app) gcCmd() *cobra.Command {
	var olderThan time.Duration
	var maxSize string
	var dry bool
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove old cache records, unreferenced blobs and old run folders",
		Long: `Collect garbage in the cache: blobs that no record references always go;
--older-than removes records and run folders older than that, by when their
node or run ended (a run killed without its end: its last record); --max-size
keeps the newest records whose blobs fit, and removes the first that does not
and every older record, with blobs or not (the newest results are kept whole).
A flag given as 0 is a limit too: --older-than 0s removes every record ended
before now, --max-size 0 the newest record with blobs and every older one. gc
waits for running applies, so it never removes what one uses, and applies
started meanwhile wait for gc. Whatever their
age, it keeps the run folders from which apply reads that it refuses to
restart a node left interrupted (its stage declares on_interrupt = "fail"),
until that node ran again, and says so; so it does with the folder of a run
that died leaving processes running, from which the next apply reads what to
stop; --max-size removes no run folder.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var maxBytes int64
			if maxSize != "" {
				n, err := parseSize(maxSize)
				if err != nil {
					return badInput("--max-size: %s", err)
				}
				maxBytes = n
			}
			if olderThan < 0 {
				return badInput("--older-than %s: an age cannot be negative; give 0s or more, like 90s, 60m or 720h (a day is 24h)", cmd.Flags().Lookup("older-than").Value)
			}
			if _, err := os.Stat(a.cachePath()); errors.Is(err, fs.ErrNotExist) {
				// Nothing to collect; a mistyped --cache is not created.
				fmt.Fprintf(a.stdout, "No cache at %s: nothing to remove.\n", a.cachePath())
				return nil
			}
			cache, err := a.openCache()
			if err != nil {
				return err
			}
			defer cache.Close()
			// A flag given as 0 is a limit: --max-size 0 keeps no
			// record's blobs, --older-than 0s keeps no record.
			wait := func(what string) { fmt.Fprintf(a.stderr, "cairn gc: waiting for %s to finish\n", what) }
			res, err := engine.GC(cache, store.GCOptions{OlderThan: olderThan, MaxBytes: maxBytes, DryRun: dry,
				AgeSet: cmd.Flags().Changed("older-than"), SizeSet: maxSize != "", Wait: wait})
			if err != nil {
				return a.cacheError("collect the cache's garbage", err)
			}
			verb := "Removed"
			if dry {
				verb = "Would remove"
			}
			fmt.Fprintf(a.stdout, "%s %d record(s), %d blob(s) (%s), %d run(s) (run folders and up-to-date log lines); kept %d record(s) (%s).\n",
				verb, res.Records, res.Blobs, human(res.Bytes), res.Runs, res.Kept, human(res.KeptBytes))
			if res.KeptRuns > 0 {
				fmt.Fprintln(a.stdout, keptRunsLine(res, dry))
			}
			if len(res.LeftRunning) > 0 {
				fmt.Fprintln(a.stdout, leftRunningLine(res.LeftRunning, dry))
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "remove records and runs that ended longer ago than this (e.g. 720h)")
	cmd.Flags().StringVar(&maxSize, "max-size", "", "keep the newest records whose blobs fit in this size (e.g. 10G)")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "only say what would be removed")
	return cmd
}

// keptRunsLine says which run folders gc kept, though old enough to go,
// and why: apply reads from them that it refuses to restart nodes they
// left interrupted, and removing them would lift that refusal.
func keptRunsLine(res *engine.GCResult, dry bool) string {
	verb := "Kept"
	if dry {
		verb = "Would keep"
	}
	pipelines := map[string]bool{}
	for _, r := range res.Refused {
		pipelines[r.Pipeline] = true
	}
	var nodes, flags []string
	for _, r := range res.Refused {
		n := r.Addr
		if len(pipelines) > 1 {
			n += fmt.Sprintf(" of pipeline %q", r.Pipeline)
		}
		nodes = append(nodes, fmt.Sprintf("%s (interrupted in run %s)", n, r.RunID))
		flags = append(flags, fmt.Sprintf("--replace '%s'", r.Addr))
	}
	is, its, them := "is", "its stage declares", "it"
	if len(nodes) > 1 {
		is, its, them = "are", "their stages declare", "them"
	}
	return fmt.Sprintf("%s %d run folder(s): apply reads from them that %s %s not restarted silently (%s on_interrupt = \"fail\"). Once cairn apply %s ran %s again, gc removes them.",
		verb, res.KeptRuns, strings.Join(nodes, ", "), is, its, strings.Join(flags, " "), them)
}

// leftRunningLine says which run folders gc kept, though old enough to
// go, because processes of those dead runs still run: the next apply of
// the cache reads from them what to stop.
func leftRunningLine(runs []string, dry bool) string {
	verb := "Kept"
	if dry {
		verb = "Would keep"
	}
	return fmt.Sprintf("%s %d run folder(s) of interrupted runs whose processes still run (%s): the next apply of this cache reads from them what to stop, and stops it; gc removes them after that.",
		verb, len(runs), strings.Join(runs, ", "))
}

func parseSize(arg string) (int64, error) {
	s := strings.TrimSpace(strings.ToUpper(arg))
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{
		{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10},
		{"TI", 1 << 40}, {"GI", 1 << 30}, {"MI", 1 << 20}, {"KI", 1 << 10},
		{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
		{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1},
	} {
		if strings.HasSuffix(s, u.suf) {
			mult = u.m
			s = strings.TrimSpace(strings.TrimSuffix(s, u.suf))
			break
		}
	}
	// Plain decimal numbers only: no NaN, Inf, exponents or hex.
	bad := s == "" || strings.Trim(s, "0123456789.") != "" || strings.Count(s, ".") > 1 || s == "."
	f, err := strconv.ParseFloat(s, 64)
	if bad || err != nil || f*float64(mult) >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a size like 500M, 10G or 1.5GiB (units K, M, G, T, binary: 1K = 1024 bytes)", arg)
	}
	return int64(f * float64(mult)), nil
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func (a *app) gpusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "gpus",
		Short: "List this machine's GPUs: memory, processes, free or busy and why",
		Long: `List the GPUs cairn would use: index, UUID, name, memory used/total, compute
processes, and whether each is free now (and why not). CAIRN_GPUS=sim:N shows a
simulated inventory; CUDA_VISIBLE_DEVICES set on cairn restricts the real
devices listed (not simulated ones).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pool, err := gpu.NewPool(os.Getenv)
			if err != nil {
				return badInput("%s", err)
			}
			st, err := pool.Status(context.Background())
			if err != nil {
				fmt.Fprintf(a.stdout, "cannot read the GPUs: %s\n", err)
			}
			gpu.Render(a.stdout, pool.Inv, st, pool.Holders())
			return nil
		},
	}
}

// runStart is a run's start as status and show print it: "unknown" when
// its journal did not say (see runlog.RunInfo.Damaged).
func runStart(r *runlog.RunInfo) string {
	if r.Start.IsZero() {
		return "unknown"
	}
	return r.Start.UTC().Format("2006-01-02 15:04:05")
}

// runState is a run's state, marked when its journal is damaged.
func runState(r *runlog.RunInfo) string {
	if r.Damaged != "" {
		return r.State + " (journal damaged)"
	}
	return r.State
}

package runreport

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/storage/atomicfile"
)

// Names of the report's files in a run folder.
const (
	HTMLName  = "report.html"
	TraceName = "trace.tsv"
)

// WriteFiles writes the report's page to htmlPath and trace.tsv beside
// it, each replaced whole (a reader never sees half a file): both are
// rendered first, then written, then renamed into place, so that a page
// that cannot be written leaves no new trace beside it either.
func (r *Report) WriteFiles(htmlPath string, cache *store.Cache) error {
	var t, h bytes.Buffer
	if err := r.WriteTrace(&t); err != nil {
		return err
	}
	if err := r.WriteHTML(&h, cache, TraceName); err != nil {
		return err
	}
	return atomicfile.WriteAll([]atomicfile.File{
		{Path: filepath.Join(filepath.Dir(htmlPath), TraceName), Data: t.Bytes()},
		{Path: htmlPath, Data: h.Bytes()},
	}, false)
}

// traceHeader is how trace.tsv starts, in every cairn that wrote one:
// its first five columns (those after them have changed), each followed
// by a tab.
var traceHeader = strings.Join(traceCols[:5], "\t") + "\t"

// IsTrace reports whether the file at path is a trace cairn wrote: its
// first line is trace.tsv's header. Anything else there (a user's own
// trace.tsv) is not cairn's to replace.
func IsTrace(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(traceHeader))
	_, err = io.ReadFull(f, head)
	return err == nil && string(head) == traceHeader
}

// Files are the files the run's nodes read and wrote, workspace-relative,
// as their records in the cache have them (inputs, outputs, result
// file): what a report written into the workspace must not replace.
func (r *Report) Files() []string {
	var out []string
	for _, n := range r.Nodes {
		if n.record == nil {
			continue
		}
		var env struct {
			Inputs map[string]string `json:"inputs"`
		}
		_ = json.Unmarshal(n.record.Envelope, &env)
		for p := range env.Inputs {
			out = append(out, p)
		}
		for p := range n.record.Outputs {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

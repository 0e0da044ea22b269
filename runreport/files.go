package runreport

import (
	"bytes"
	"path/filepath"

	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/storage/atomicfile"
)

// Names of the report's files in a run folder.
const (
	HTMLName  = "report.html"
	TraceName = "trace.tsv"
)

// WriteFiles writes the report's page to htmlPath and trace.tsv beside
// it, each replaced whole (a reader never sees half a file).
func (r *Report) WriteFiles(htmlPath string, cache *store.Cache) error {
	var t bytes.Buffer
	if err := r.WriteTrace(&t); err != nil {
		return err
	}
	tracePath := filepath.Join(filepath.Dir(htmlPath), TraceName)
	if err := atomicfile.Write(tracePath, t.Bytes(), false); err != nil {
		return err
	}
	var h bytes.Buffer
	if err := r.WriteHTML(&h, cache, TraceName); err != nil {
		return err
	}
	return atomicfile.Write(htmlPath, h.Bytes(), false)
}

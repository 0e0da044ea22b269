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

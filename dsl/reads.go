package dsl

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// FileRead is a file the pipeline's evaluation depended on: a pipeline
// file, a variable file, a file read by file() or filesha256(), a path
// tested by fileexists(), or a pipeline directory's listing. Its stat
// information is taken before it is read.
type FileRead struct {
	Path   string      // absolute
	Info   fs.FileInfo // nil when the file did not exist
	At     time.Time   // when Info was taken
	Follow bool        // Info follows symbolic links (os.Stat)
	// Listing is, for a pipeline directory, the names of the pipeline
	// files its listing gave (PipelineFiles), in order.
	Listing []string
}

// FileReads records the files an evaluation read. It is safe for
// concurrent use; a nil *FileReads records nothing.
type FileReads struct {
	mu     sync.Mutex
	m      map[string]FileRead
	failed bool
}

// NewFileReads returns an empty record.
func NewFileReads() *FileReads { return &FileReads{m: map[string]FileRead{}} }

// Note stats path (following links) and records it, before the caller
// reads it. A path that cannot be stated for another reason than its
// absence makes the record incomplete.
func (r *FileReads) Note(path string) {
	if r == nil {
		return
	}
	abs, err := filepath.Abs(path)
	at := time.Now()
	var fi fs.FileInfo
	if err == nil {
		fi, err = os.Stat(abs)
		if errors.Is(err, fs.ErrNotExist) {
			fi, err = nil, nil
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed = true
		return
	}
	if _, ok := r.m[abs]; !ok {
		r.m[abs] = FileRead{Path: abs, Info: fi, At: at, Follow: true}
	}
}

// NoteListing records the names of the pipeline files that the listing
// of path, a noted directory, gave.
func (r *FileReads) NoteListing(path string, names []string) {
	if r == nil {
		return
	}
	abs, err := filepath.Abs(path)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed = true
		return
	}
	if f, ok := r.m[abs]; ok {
		f.Listing = names
		r.m[abs] = f
	}
}

// PipelineFiles lists the pipeline files of a directory: the names of its
// entries that end in .hcl and are not directories, sorted.
func PipelineFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".hcl") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// List returns the files read, sorted by path, and whether the record is
// complete.
func (r *FileReads) List() ([]FileRead, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]FileRead, 0, len(r.m))
	for _, f := range r.m {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, !r.failed
}

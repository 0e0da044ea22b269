package dsl

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A folder of one large pipeline file is one pipeline, found without
// reading (let alone parsing) the file: `cairn validate` in a pipeline's
// folder parses the pipeline once. A folder of two files that each
// declare a pipeline is still a folder of pipelines.
func TestPipelineFolderOfOneFileReadsNothing(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("pipeline \"big\" {}\n")
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "\nstage \"command\" \"s%d\" {\n  run = [\"echo\", \"%d\"]\n}\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.hcl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	allocs := testing.AllocsPerRun(3, func() { got = PipelineFolder(dir) })
	if got != nil {
		t.Fatalf("PipelineFolder(one file) = %v, want nil (one pipeline)", got)
	}
	// Listing the folder takes a few dozen allocations; parsing the file
	// takes hundreds of thousands.
	if allocs > 200 {
		t.Errorf("PipelineFolder of a folder of one pipeline file made %.0f allocations: it read the file", allocs)
	}

	if err := os.WriteFile(filepath.Join(dir, "other.hcl"), []byte("pipeline \"other\" {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := PipelineFolder(dir); !slices.Equal(got, []string{"big.hcl", "other.hcl"}) {
		t.Errorf("PipelineFolder(two pipelines) = %v, want [big.hcl other.hcl]", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.hcl"), []byte("locals {\n  x = 1\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := PipelineFolder(dir); got != nil {
		t.Errorf("PipelineFolder(one pipeline in two files) = %v, want nil", got)
	}
}

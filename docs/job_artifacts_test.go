package docs

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/stages"
)

// jsonFields are the JSON names of a struct's fields; with omitempty ones
// too when all.
func jsonFields(v any, all bool) []string {
	var out []string
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" || strings.Contains(opts, "omitempty") && !all {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// docs/job-artifacts.md shows each artifact of an optimizer job with the
// fields cairn writes (#28): job.json (the seal), optimization.json,
// selection.json (with the digest of the optimization.json it was made
// from) and result.json (with those of its selection.json and test.json);
// and it names the out folder's lock file as cairn does.
func TestJobArtifactsShowTheFieldsWritten(t *testing.T) {
	b, err := os.ReadFile("job-artifacts.md")
	require.NoError(t, err)
	doc := string(b)
	blocks := regexp.MustCompile("(?s)```json\n(\\{.*?\\})\n```").FindAllStringSubmatch(doc, -1)
	byFormat := map[string][]string{}
	for _, m := range blocks {
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(m[1], "…", "")), &obj), m[1])
		f, _ := obj["format"].(string)
		var keys []string
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		byFormat[f] = keys
	}
	for format, v := range map[string]any{
		stages.JobFormat: stages.JobIdentity{}, stages.OptimizationFormat: stages.Optimization{},
		stages.SelectionFormat: stages.Selection{}, stages.ResultFormat: stages.ResultFile{},
	} {
		got, ok := byFormat[format]
		if assert.True(t, ok, "job-artifacts.md shows a %s file", format) {
			assert.Equal(t, jsonFields(v, false), got, format)
		}
	}
	shown := jsonFields(stages.JobIdentity{}, false)
	for _, f := range jsonFields(stages.JobIdentity{}, true) {
		if !slices.Contains(shown, f) {
			assert.True(t, strings.Contains(doc, "`"+f+"`"), "job.json's field %s, absent from the example, is described", f)
		}
	}
	assert.True(t, strings.Contains(doc, "`"+stages.OutLockFile+"`"), "the lock file %s is named", stages.OutLockFile)
}

// An imported job's provenance (#33): every field of result.json's
// `source` is described where model-cache.md maps the import.
func TestImportedJobSourceIsDescribed(t *testing.T) {
	b, err := os.ReadFile("model-cache.md")
	require.NoError(t, err)
	_, sec, ok := strings.Cut(string(b), "### Imported results in the seed-002 statistics")
	require.True(t, ok, "model-cache.md has the section")
	sec, _, _ = strings.Cut(sec, "\n## ")
	for _, v := range []any{stages.ImportSource{}, stages.ImportedFile{}} {
		for _, f := range jsonFields(v, true) {
			assert.Contains(t, sec, "`"+f+"`", "the field %s of an imported job's source", f)
		}
	}
	for _, f := range []string{"--job", "--baseline", "--method", "--cell", "--seed"} {
		assert.Contains(t, sec, f)
	}
}

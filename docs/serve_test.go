package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/stages"
)

// Every test serve.md names as its proof exists in the end-to-end tests.
func TestServeDocNamesTestsThatExist(t *testing.T) {
	doc, err := os.ReadFile("serve.md")
	require.NoError(t, err)
	var src strings.Builder
	for _, dir := range []string{"../e2e/serve", "../e2e/llamacpp"} {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		require.NoError(t, err)
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			src.Write(b)
		}
	}
	names := regexp.MustCompile("`(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, names)
	for _, m := range names {
		assert.Contains(t, src.String(), "func "+m[1]+"(t *testing.T)", "docs/serve.md names %s", m[1])
	}
}

// The serve and evaluate tables say each whole-number attribute's range
// as the code keeps it: the ends are accepted, one past either end
// refused with the same range.
func TestWholeNumberRangesAreTheCodes(t *testing.T) {
	doc, err := os.ReadFile("language.md")
	require.NoError(t, err)
	strs := func(ss ...string) cty.Value {
		var vs []cty.Value
		for _, s := range ss {
			vs = append(vs, cty.StringVal(s))
		}
		return cty.TupleVal(vs)
	}
	kinds := []struct {
		kind  string
		attrs []string
		args  map[string]cty.Value
	}{
		{"serve", []string{"replicas", "max_replicas", "port", "restarts"}, map[string]cty.Value{"run": strs("vllm"), "model": cty.StringVal("m")}},
		{"evaluate", []string{"replicas", "max_in_flight", "retry_infra", "endpoint_concurrency"}, map[string]cty.Value{
			"worker": strs("python3", "w.py"), "items": cty.StringVal("items.jsonl"), "model": cty.StringVal("m"), "scores": cty.StringVal("s.jsonl"),
		}},
	}
	for _, kd := range kinds {
		start := strings.Index(string(doc), "## Kind: "+kd.kind+"\n")
		require.Positive(t, start, kd.kind)
		table := string(doc[start:])
		table = table[:strings.Index(table, "\n## ")+1]
		k, ok := stages.Lookup(kd.kind)
		require.True(t, ok)
		for _, attr := range kd.attrs {
			m := regexp.MustCompile("(?m)^\\| `" + attr + "` \\| whole number from ([0-9]+) to ([0-9]+) \\|").FindStringSubmatch(table)
			require.NotNil(t, m, "the %s table's %s row says its range as \"whole number from MIN to MAX\"", kd.kind, attr)
			lo, _ := strconv.Atoi(m[1])
			hi, _ := strconv.Atoi(m[2])
			check := func(v int) hcl.Diagnostics {
				args := map[string]cty.Value{attr: cty.NumberIntVal(int64(v))}
				for a, x := range kd.args {
					args[a] = x
				}
				return k.Check(&stages.Node{Address: "stage.x", Args: args, Ranges: map[string]hcl.Range{}})
			}
			for _, v := range []int{lo, hi} {
				assert.False(t, check(v).HasErrors(), "%s %s = %d: %s", kd.kind, attr, v, check(v).Error())
			}
			for _, v := range []int{lo - 1, hi + 1} {
				assert.Contains(t, check(v).Error(), fmt.Sprintf("%s must be a whole number from %d to %d.", attr, lo, hi), "%s %s = %d", kd.kind, attr, v)
			}
		}
	}
}

package docs

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/stages"
)

// keys.md names the attributes of a row that pareto keeps in its key:
// exactly those the kind keeps, of an instance holding every attribute
// an instance has.
func TestKeysDocNamesWhatParetoKeeps(t *testing.T) {
	keys := strings.Join(strings.Fields(readDoc(t, "keys.md")), " ")
	m := regexp.MustCompile("`pareto` keeps, of each stage instance in `rows`, only what its table shows — (.*?), not ").FindStringSubmatch(keys)
	require.NotNil(t, m, "keys.md no longer says what pareto keeps of a row")
	var documented []string
	for _, name := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(m[1], ""), -1) {
		documented = append(documented, name[1])
	}
	row := map[string]cty.Value{}
	for _, a := range []string{"key", "value", "result", "status", "class", "message", "launch", "duration_s", "peak_rss_mib", "key_digest", "outputs", "endpoints"} {
		row[a] = cty.StringVal(a)
	}
	kept := stages.Pareto{}.KeyValue("rows", cty.ObjectVal(map[string]cty.Value{"a": cty.ObjectVal(row)}))
	var names []string
	for a := range kept.GetAttr("a").Type().AttributeTypes() {
		names = append(names, a)
	}
	slices.Sort(names)
	slices.Sort(documented)
	assert.Equal(t, names, documented)
}

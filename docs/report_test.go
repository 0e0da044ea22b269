package docs

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/runreport"
)

// README's "The run report" names every column of trace.tsv.
func TestReadmeNamesTheTraceColumns(t *testing.T) {
	sec := section(readDoc(t, "../README.md"), "## The run report")
	require.NotEmpty(t, sec)
	var b bytes.Buffer
	require.NoError(t, (&runreport.Report{}).WriteTrace(&b))
	header := strings.Split(strings.TrimSpace(b.String()), "\t")
	require.Greater(t, len(header), 10)
	for _, col := range header {
		assert.Contains(t, sec, "`"+col+"`", "trace.tsv's column %s is not in README's section", col)
	}
}

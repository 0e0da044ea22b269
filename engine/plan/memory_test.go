package plan_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
)

func TestParseMemory(t *testing.T) {
	for in, want := range map[string]int{
		"512M": 512, "512MiB": 512, "16G": 16 << 10, "16gb": 16 << 10, " 2 GiB ": 2 << 10, "1T": 1 << 20, "1024T": 1 << 30,
	} {
		got, err := plan.ParseMemory(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "16", "G", "1.5G", "-1G", "0M", "16K", "16 X", "1025T", "99999999999999999999G"} {
		_, err := plan.ParseMemory(in)
		assert.Error(t, err, in)
	}
}

package fsdigest

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func rawCtime(t *testing.T, path string) syscall.Timespec {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &st))
	return st.Ctim
}

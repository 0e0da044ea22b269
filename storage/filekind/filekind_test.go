package filekind

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOf(t *testing.T) {
	for m, want := range map[fs.FileMode]string{
		fs.ModeDir | 0o755:                "a folder",
		fs.ModeSymlink | 0o777:            "a symbolic link",
		fs.ModeNamedPipe | 0o644:          "a named pipe",
		fs.ModeSocket | 0o755:             "a socket",
		fs.ModeDevice | fs.ModeCharDevice: "a device",
		fs.ModeIrregular:                  "not a plain file",
	} {
		assert.Equal(t, want, Of(m), m.String())
	}
}

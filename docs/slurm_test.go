package docs

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-run/cairn/engine/executor/slurm"
)

// The Slurm executor gathers a stage's instances into a job array for as
// long as docs/language.md says.
func TestSlurmArrayWindowAsDocumented(t *testing.T) {
	want := fmt.Sprintf("until none came for %d ms, %d s at most", slurm.ArrayGap.Milliseconds(), int(slurm.ArrayMax/time.Second))
	assert.Contains(t, prose(t, "language.md"), want)
}

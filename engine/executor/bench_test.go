package executor

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkLocalNode runs quick nodes one after another, as a chain of
// nodes does, supervised by the poll loop and by goroutines. The context
// can end and the hard channel can close, as in an apply.
func BenchmarkLocalNode(b *testing.B) {
	for _, off := range []bool{false, true} {
		name := "poll"
		if off {
			name = "goroutines"
		}
		b.Run(name, func(b *testing.B) {
			old := pollOff
			pollOff = off
			defer func() { pollOff = old }()
			dir := b.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hard := make(chan struct{})
			for i := 0; i < b.N; i++ {
				spec := &Spec{Node: "stage.s", Argv: []string{"/bin/sh", "-c", "echo x > f"}, Env: os.Environ(), Dir: dir,
					Stdout: filepath.Join(dir, "out"), Stderr: filepath.Join(dir, "err"), Hard: hard}
				job, err := Local{}.Submit(ctx, spec)
				if err != nil {
					b.Fatal(err)
				}
				res, err := job.Wait(context.Background())
				if err != nil || res.Class != "" {
					b.Fatal(err, res.Message)
				}
			}
		})
	}
}

// Package slurmtest holds what the tests on the local Slurm cluster share
// (scripts/slurm-up.sh starts one): the skip, or the failure under
// CAIRN_REQUIRE_SLURM=1, where no cluster runs, and client calls under a
// timeout.
package slurmtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Need skips a test where no local Slurm cluster runs, and fails it
// instead under CAIRN_REQUIRE_SLURM=1 (CI).
func Need(t testing.TB) {
	t.Helper()
	if os.Getenv("CAIRN_SLURM_TEST") == "1" && os.Getenv("SLURM_CONF") != "" {
		return
	}
	why := "no local Slurm cluster: run eval \"$(scripts/slurm-up.sh)\" first (CAIRN_SLURM_TEST is not 1)"
	if os.Getenv("CAIRN_REQUIRE_SLURM") == "1" {
		t.Fatal(why + ", and CAIRN_REQUIRE_SLURM=1 makes this a failure")
	}
	t.Skip(why)
}

// Call runs a Slurm client command, each try under a 20 s timeout,
// retried for up to a minute (a test may have stopped slurmctld for a
// while), and returns its output; the test fails when no try succeeds.
func Call(t testing.TB, name string, args ...string) string {
	t.Helper()
	var out []byte
	var err error
	for i := 0; i < 30; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err = exec.CommandContext(ctx, name, args...).CombinedOutput()
		cancel()
		if err == nil {
			return string(out)
		}
		time.Sleep(2 * time.Second)
	}
	t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	return ""
}

// Package slurmtest holds what the tests on the local Slurm cluster share
// (scripts/slurm-up.sh starts one): the skip, or the failure under
// CAIRN_REQUIRE_SLURM=1, where no cluster runs, and client calls under a
// timeout.
package slurmtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
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

// controllerLock is the lock on the local cluster's controller that tests
// in every package share: StopController holds it exclusively while
// slurmctld is away, HoldController shared.
func controllerLock(t testing.TB) *flock.Flock {
	t.Helper()
	dir := os.Getenv("CAIRN_SLURM_DIR")
	if dir == "" {
		t.Fatal("CAIRN_SLURM_DIR is not set (scripts/slurm-up.sh sets it)")
	}
	return flock.New(filepath.Join(dir, "controller.lock"))
}

// HoldController keeps the controller up for the rest of the test: a test
// whose steps must reach slurmctld at a given moment (scontrol requeue of a
// running job) waits until no test has it stopped, and none stops it until
// this test ends.
func HoldController(t testing.TB) {
	t.Helper()
	lock := controllerLock(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ok, err := lock.TryRLockContext(ctx, 100*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("the controller lock %s: %v (held by another test for 10 minutes?)", lock.Path(), err)
	}
	t.Cleanup(func() { _ = lock.Unlock() })
}

// StopController stops the local cluster's slurmctld (scripts/slurm-up.sh
// records its pid in $CAIRN_SLURM_DIR) and waits until it is gone; the
// returned function starts it again and waits until it answers. Between
// the two, the test holds an exclusive lock on the cluster's controller:
// tests in other packages (go test runs packages in parallel) that stop it
// too wait their turn, so one never finds it stopped by another, or starts
// it under another's feet.
func StopController(t testing.TB) (start func()) {
	t.Helper()
	lock := controllerLock(t)
	dir := filepath.Dir(lock.Path())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ok, err := lock.TryLockContext(ctx, 100*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("the controller lock %s: %v (held by another test for 10 minutes?)", lock.Path(), err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "slurmctld.pid"))
	if err != nil {
		_ = lock.Unlock()
		t.Fatalf("slurmctld's pid: %v", err)
	}
	pid := strings.TrimSpace(string(b))
	Call(t, "kill", "-TERM", pid)
	for i := 0; exec.Command("kill", "-0", pid).Run() == nil; i++ {
		if i == 300 {
			_ = lock.Unlock()
			t.Fatalf("slurmctld %s still runs 30 s after SIGTERM", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var once sync.Once
	start = func() {
		once.Do(func() {
			defer lock.Unlock()
			Call(t, "slurmctld", "-f", os.Getenv("SLURM_CONF"))
			for i := 0; ; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := exec.CommandContext(ctx, "squeue", "-h").Run()
				cancel()
				if err == nil {
					return
				}
				if i == 300 {
					t.Fatalf("slurmctld does not answer 30 s after its start: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	// A test that fails while the controller is away still brings it back.
	t.Cleanup(start)
	return start
}

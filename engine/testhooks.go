package engine

import (
	"errors"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
)

// Test hooks for the crash tests (engine/crashtest): they make a cairn
// process kill itself with SIGKILL at an exact point of its work, so that
// recovery is tested at every kind of point, deterministically.
//
//	CAIRN_TEST_KILL_AFTER_RECORDS=N  right after this run's Nth journal record is written
//	CAIRN_TEST_KILL_AFTER_COMMITS=N  right after the Nth action record is committed to the
//	                                 cache, before the node's "finished" journal record
//	CAIRN_TEST_KILL_AFTER_STARTS=N   after the Nth node process started, before its
//	                                 "started" journal record, once the file named by
//	                                 CAIRN_TEST_KILL_WHEN exists (the node writes it when it
//	                                 has started others, which nothing journaled names)
//	CAIRN_TEST_LATE_LOCK_KILLS=1     the leftovers found holding node locks are signalled 0,
//	                                 not killed, as when a kill has not taken effect yet:
//	                                 the process-group reaping then finds them again
//	CAIRN_TEST_SYNC_DELAY_S=N        the cache's sync rounds come N seconds after a record
//	                                 is written, not 50 ms: records are written long before
//	                                 they are durable, as on a slow disk
//
// They are read once at start; unset (the normal case), they cost one
// atomic load per record.
var (
	testKillAfterRecords = testHookEnv("CAIRN_TEST_KILL_AFTER_RECORDS")
	testKillAfterCommits = testHookEnv("CAIRN_TEST_KILL_AFTER_COMMITS")
	testKillAfterStarts  = testHookEnv("CAIRN_TEST_KILL_AFTER_STARTS")
	testKillWhen         = os.Getenv("CAIRN_TEST_KILL_WHEN")
	testLateLockKills    = testHookEnv("CAIRN_TEST_LATE_LOCK_KILLS") != 0
	testRecords          atomic.Int64
	testCommits          atomic.Int64
	testStarts           atomic.Int64
)

// The CAIRN_TEST_KILL_AFTER_RECORDS hook is called by the journal, which
// is runlog's: set, it counts every record written. The
// CAIRN_TEST_KILL_AFTER_COMMITS and CAIRN_TEST_LATE_LOCK_KILLS hooks are
// the cache's, which is store's.
func init() {
	if testKillAfterRecords != 0 {
		runlog.AfterRecord = func() { testKillAt(testKillAfterRecords, &testRecords) }
	}
	if testKillAfterCommits != 0 {
		store.AfterCommit = func() { testKillAt(testKillAfterCommits, &testCommits) }
	}
	store.LateLockKills = testLateLockKills
	if d := testHookEnv("CAIRN_TEST_SYNC_DELAY_S"); d != 0 {
		store.TestSyncDelay = time.Duration(d) * time.Second
	}
}

// testKillAfterStart is the CAIRN_TEST_KILL_AFTER_STARTS hook.
func testKillAfterStart() {
	if testKillAfterStarts != 0 && testStarts.Load()+1 == testKillAfterStarts && testKillWhen != "" {
		_ = waitForFile(testKillWhen)
	}
	testKillAt(testKillAfterStarts, &testStarts)
}

// waitForFile waits until path exists, for a test hook or a test: for at
// most a minute, a bound only so that a test whose node never writes the
// file ends; the wait is for the file, however loaded the machine.
func waitForFile(path string) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
	}
	return errors.New(path + " never appeared")
}

func testHookEnv(name string) int64 {
	n, err := strconv.ParseInt(os.Getenv(name), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// testKillAt kills this process when count reaches limit (a test hook;
// limit 0 means never).
func testKillAt(limit int64, count *atomic.Int64) {
	if limit == 0 {
		return
	}
	if count.Add(1) == limit {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// testBeforePersist, set by engine's own tests, is called before a node's
// record is written to the cache (persist); an error fails the write, as
// a full disk would. It is nil otherwise.
var testBeforePersist func(addr string) error

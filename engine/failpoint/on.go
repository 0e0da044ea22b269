//go:build cairn_failpoints

package failpoint

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// Enabled reports whether this build has the crash points.
const Enabled = true

var (
	killAfterRecords = envCount("CAIRN_TEST_KILL_AFTER_RECORDS")
	killAfterCommits = envCount("CAIRN_TEST_KILL_AFTER_COMMITS")
	killAfterStarts  = envCount("CAIRN_TEST_KILL_AFTER_STARTS")
	killAfterArrays  = envCount("CAIRN_TEST_KILL_AFTER_ARRAYS")
	killWhen         = os.Getenv("CAIRN_TEST_KILL_WHEN")
	lateLockKills    = envCount("CAIRN_TEST_LATE_LOCK_KILLS") != 0
	syncDelay        = time.Duration(envCount("CAIRN_TEST_SYNC_DELAY_S")) * time.Second
	journalFullAfter = envCount("CAIRN_TEST_JOURNAL_FULL_AFTER")
	journalErrno     = errnoNamed(os.Getenv("CAIRN_TEST_JOURNAL_ERRNO"))
	records          atomic.Int64
	commits          atomic.Int64
	starts           atomic.Int64
	arrays           atomic.Int64
	journaled        atomic.Int64
)

// AfterRecord is called right after each journal record is written: the
// CAIRN_TEST_KILL_AFTER_RECORDS crash point.
func AfterRecord() { killAt(killAfterRecords, &records) }

// AfterCommit is called right after each action record is committed to
// the cache: the CAIRN_TEST_KILL_AFTER_COMMITS crash point.
func AfterCommit() { killAt(killAfterCommits, &commits) }

// AfterStart is called once a node's process started, before its
// "started" journal record: the CAIRN_TEST_KILL_AFTER_STARTS crash point.
func AfterStart() {
	if killAfterStarts != 0 && starts.Load()+1 == killAfterStarts && killWhen != "" {
		_ = waitForFile(killWhen)
	}
	killAt(killAfterStarts, &starts)
}

// AfterArraySubmit is called once a cluster accepted a job array, before
// its tasks' "started" journal records: the CAIRN_TEST_KILL_AFTER_ARRAYS
// crash point.
func AfterArraySubmit() { killAt(killAfterArrays, &arrays) }

// JournalWrite is called before n journal records are written: past the
// CAIRN_TEST_JOURNAL_FULL_AFTER first records, it fails as a full disk
// would, or with the error CAIRN_TEST_JOURNAL_ERRNO names (and the
// records are not written).
func JournalWrite(n int) error {
	if journalFullAfter == 0 {
		return nil
	}
	if journaled.Add(int64(n)) > journalFullAfter {
		journaled.Add(-int64(n))
		return fmt.Errorf("write: %w", journalErrno)
	}
	return nil
}

// errnoNamed is the error a CAIRN_TEST_JOURNAL_ERRNO value names;
// ENOSPC for any other.
func errnoNamed(name string) syscall.Errno {
	switch name {
	case "EDQUOT":
		return syscall.EDQUOT
	case "EROFS":
		return syscall.EROFS
	case "EACCES":
		return syscall.EACCES
	case "EPERM":
		return syscall.EPERM
	case "EIO":
		return syscall.EIO
	}
	return syscall.ENOSPC
}

// LateLockKills reports whether the leftovers found holding node locks
// are signalled 0, not killed (CAIRN_TEST_LATE_LOCK_KILLS).
func LateLockKills() bool { return lateLockKills }

// SyncDelay is the cache's sync delay CAIRN_TEST_SYNC_DELAY_S sets; 0:
// the default.
func SyncDelay() time.Duration { return syncDelay }

// waitForFile waits until path exists: for at most a minute, a bound only
// so that a test whose node never writes the file ends; the wait is for
// the file, however loaded the machine.
func waitForFile(path string) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
	}
	return errors.New(path + " never appeared")
}

// envCount is the positive count the environment variable name holds; 0
// when it is unset or holds anything else.
func envCount(name string) int64 {
	n, err := strconv.ParseInt(os.Getenv(name), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// killAt kills this process when count reaches limit (0: never).
func killAt(limit int64, count *atomic.Int64) {
	if limit == 0 {
		return
	}
	if count.Add(1) == limit {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

//go:build !cairn_failpoints

package failpoint

import "time"

// Enabled reports whether this build has the crash points.
const Enabled = false

// AfterRecord is called right after each journal record is written.
func AfterRecord() {}

// AfterCommit is called right after each action record is committed to
// the cache.
func AfterCommit() {}

// AfterStart is called once a node's process started, before its
// "started" journal record.
func AfterStart() {}

// AfterArraySubmit is called once a cluster accepted a job array, before
// its tasks' "started" journal records.
func AfterArraySubmit() {}

// JournalWrite is called before n journal records are written; nil: they
// may be.
func JournalWrite(int) error { return nil }

// LateLockKills reports whether the leftovers found holding node locks
// are signalled 0, not killed.
func LateLockKills() bool { return false }

// SyncDelay is the cache's sync delay the tests set; 0: the default.
func SyncDelay() time.Duration { return 0 }

// Package failpoint holds the crash points of the crash tests
// (engine/crashtest): with them, a cairn process kills itself with SIGKILL
// at an exact point of its work, so that recovery is tested at every kind
// of point, deterministically.
//
// They are compiled in only with the build tag cairn_failpoints (the
// crash tests build cairn with `go build -tags cairn_failpoints`). A
// release build has no crash point: every function here is then empty
// (or returns the zero value) and reads no environment variable, and the
// compiler removes the calls.
//
// With the tag, environment variables read once at start set them:
//
//	CAIRN_TEST_KILL_AFTER_RECORDS=N  right after this run's Nth journal record is written
//	CAIRN_TEST_KILL_AFTER_COMMITS=N  right after the Nth action record is committed to the
//	                                 cache, before the node's "finished" journal record
//	CAIRN_TEST_KILL_AFTER_STARTS=N   after the Nth node process started, before its
//	                                 "started" journal record, once the file named by
//	                                 CAIRN_TEST_KILL_WHEN exists (the node writes it when it
//	                                 has started others, which nothing journaled names)
//	CAIRN_TEST_KILL_AFTER_ARRAYS=N   once a cluster accepted the Nth job array (the Slurm
//	                                 executor), before its tasks' "started" journal records
//	CAIRN_TEST_LATE_LOCK_KILLS=1     the leftovers found holding node locks are signalled 0,
//	                                 not killed, as when a kill has not taken effect yet:
//	                                 the process-group reaping then finds them again
//	CAIRN_TEST_SYNC_DELAY_S=N        the cache's sync rounds come N seconds after a record
//	                                 is written, not 50 ms: records are written long before
//	                                 they are durable, as on a slow disk
//	CAIRN_TEST_JOURNAL_FULL_AFTER=N  the journal records after the Nth are not written: their
//	                                 writes fail with "no space left on device", as on a
//	                                 full disk, or with CAIRN_TEST_JOURNAL_ERRNO's error
//	CAIRN_TEST_JOURNAL_ERRNO=NAME    that error: EDQUOT, EROFS, EACCES, EPERM or EIO
//
// Unset, each costs a comparison with zero where it is passed; in a
// release build, nothing. `go vet ./...` does not see the tagged file:
// `make vet` vets it too.
package failpoint

package wal

// Repair makes a damaged log usable again by cutting it at its first bad record,
// dropping that record and everything after it. What it drops is first copied
// to a file beside the log (see keepDamaged), whose path it returns with the
// number of bytes dropped; a torn tail is dropped without a copy. A log that is
// fine is left alone. Repair waits for the log's lock, so it waits for a writer
// that holds the log open without Options.Shared to close it.
func Repair(path string) (dropped int64, kept string, err error) {
	return cut(path, true)
}

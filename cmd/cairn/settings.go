package main

import "os"

// noFsync is CAIRN_NO_FSYNC=1: the cache, the run journal and the stores
// and ledgers the stage kinds write skip fsync (tests and benchmarks; a
// power loss may then lose recent work, docs/durability.md). This is the
// one place cairn reads it: the packages below get it as an option
// (engine.ApplyOptions.NoSync, which the stage kinds read as
// stages.Runtime.NoSync; store.Options.NoSync; the writers' sync flags).
func noFsync() bool { return os.Getenv("CAIRN_NO_FSYNC") == "1" }

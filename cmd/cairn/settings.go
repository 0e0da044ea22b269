package main

import (
	"os"
	"time"

	"github.com/cairn-run/cairn/gpu"
)

// noFsync is CAIRN_NO_FSYNC=1: the cache, the run journal and the stores
// and ledgers the stage kinds write skip fsync (tests and benchmarks; a
// power loss may then lose recent work, docs/durability.md). This is the
// one place cairn reads it: the packages below get it as an option
// (engine.ApplyOptions.NoSync, which the stage kinds read as
// stages.Runtime.NoSync; store.Options.NoSync; the writers' sync flags).
func noFsync() bool { return os.Getenv("CAIRN_NO_FSYNC") == "1" }

// sampleInterval is CAIRN_SAMPLE_INTERVAL: how often a node's memory is
// sampled (engine.ApplyOptions.SampleInterval, gpu.Pool.SampleInterval;
// gpu.NewPool reads it through the lookup it is given).
func sampleInterval() time.Duration {
	return gpu.ParseSampleInterval(os.Getenv("CAIRN_SAMPLE_INTERVAL"))
}
